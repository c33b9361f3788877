# Where a gemm.fp8 CTA's time goes (fp8m128t, issue 21 item 1): from the Chrome traces of
# tests/perf/gemm_fp8_m128_timeline.lua (the probe build's marks: prologue, the producer's wait_empty / tma_issue,
# the consumers' wait_full / wgmma / promote / epilogue and exit). Times are per CTA relative to the earliest CTA's
# entry (the CTAs' bases are globaltimer readings, within a CTA clock64). Usage: python3 gemm_fp8_m128_timeline.py
# TRACE.json... (traces of one case: their per-CTA medians pooled) — prints one block of lines per case prefix.
import json, sys, statistics as st, collections, re

def load(path):
    ev = json.load(open(path))
    ev = ev["traceEvents"] if isinstance(ev, dict) else ev
    ctas = collections.defaultdict(lambda: collections.defaultdict(list))
    for e in ev:
        if e.get("ph") not in ("X", "i") or "ts" not in e:
            continue
        a = e.get("args", {})
        t0 = e["ts"] * 1000.0
        t1 = t0 + e.get("dur", 0) * 1000.0
        ctas[a.get("block", 0)][(a.get("warp", 0), e["name"])].append((a.get("aux", 0), t0, t1))
    return ctas

def med(xs):
    return st.median(xs) if xs else float("nan")

def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")

def cta_rows(ctas):
    rows = []
    for b, d in ctas.items():
        pro = [v for (w, n), l in d.items() if n == "prologue" for v in l]
        if not pro:
            continue
        entry = min(t0 for _, t0, _ in pro)
        synced = max(t1 for _, _, t1 in pro)
        cons = sorted({w for (w, n) in d if n == "wait_full"})
        r = {"block": b, "entry": entry, "synced": synced}
        tma = sorted(d.get((0, "tma_issue"), []))
        r["tma0"] = tma[0][1] if tma else float("nan")  # the producer loop's first issue (early_loads: past the ring)
        per_c = []
        for w in cons:
            wf = sorted(d[(w, "wait_full")])
            wg = sorted(d[(w, "wgmma")])
            pr = sorted(d[(w, "promote")])
            ep = sorted(d[(w, "epilogue")])
            ex = sorted(d[(w, "exit")])
            c = {"first_full": wf[0][2] if wf else float("nan"),
                 "wf": [t1 - t0 for _, t0, t1 in wf], "wf_end": [t1 for _, _, t1 in wf],
                 "kb": [(pr[i][2] if i < len(pr) else wg[i][2]) - wf[i][1] for i in range(len(wf))],
                 "loop_end": (pr[-1][2] if pr else (wg[-1][2] if wg else float("nan"))),
                 "epi": sum(t1 - t0 for _, t0, t1 in ep), "epi_start": ep[0][1] if ep else float("nan"),
                 "epi_end": ep[-1][2] if ep else float("nan"),
                 "exit": sum(t1 - t0 for _, t0, t1 in ex), "end": ex[-1][2] if ex else (ep[-1][2] if ep else float("nan"))}
            per_c.append(c)
        if not per_c:
            continue
        r["cons"] = per_c
        r["first_full"] = min(c["first_full"] for c in per_c)
        r["loop_end"] = max(c["loop_end"] for c in per_c)
        r["epi_end"] = max(c["epi_end"] for c in per_c)
        r["end"] = max(c["end"] for c in per_c)
        rows.append(r)
    return rows

def summarize(label, paths):
    allr = []
    spans, starts, ends = [], [], []
    for path in paths:
        rows = cta_rows(load(path))
        if not rows:
            print(f"{label}: {path}: no CTA with marks")
            continue
        e0 = min(r["entry"] for r in rows)
        for r in rows:
            for key in ("entry", "synced", "tma0", "first_full", "loop_end", "epi_end", "end"):
                r[key] -= e0
            for c in r["cons"]:
                for key in ("first_full", "loop_end", "epi_start", "epi_end", "end"):
                    c[key] -= e0
                c["wf_end"] = [t - e0 for t in c["wf_end"]]
        spans.append(max(r["end"] for r in rows))
        starts.append(max(r["entry"] for r in rows))
        ends.append(max(r["end"] for r in rows) - min(r["end"] for r in rows))
        allr += rows
    if not allr:
        return
    n = len(allr)
    print(f"== {label}: {len(paths)} captures, {n} CTAs; span (earliest entry -> last CTA's end) median "
          f"{med(spans):.0f} ns ({', '.join(f'{s:.0f}' for s in spans)}); CTA entries spread {med(starts):.0f} ns "
          f"(max - min, median over captures), ends spread {med(ends):.0f} ns")
    def line(name, xs):
        print(f"  {name:<44} median {med(xs):7.0f}  p10 {pct(xs, .1):7.0f}  p90 {pct(xs, .9):7.0f}  ns")
    line("entry (after the earliest CTA's)", [r["entry"] for r in allr])
    line("prologue: entry -> __syncthreads done", [r["synced"] - r["entry"] for r in allr])
    line("__syncthreads -> producer loop's first TMA", [r["tma0"] - r["synced"] for r in allr])
    line("entry -> first full barrier (first k block in)", [r["first_full"] - r["entry"] for r in allr])
    line("first full -> last k block promoted", [r["loop_end"] - r["first_full"] for r in allr])
    line("last k block -> last epilogue's end", [r["epi_end"] - r["loop_end"] for r in allr])
    line("epilogue (a consumer's)", [c["epi"] for r in allr for c in r["cons"]])
    line("exit: store wait (a consumer's)", [c["exit"] for r in allr for c in r["cons"]])
    line("CTA: entry -> end", [r["end"] - r["entry"] for r in allr])
    line("CTA end (after the earliest entry)", [r["end"] for r in allr])
    kmax = max(len(c["wf"]) for r in allr for c in r["cons"])
    print("  k block: wait_full median / p90 ns; k block (wait start -> promoted) median; its data in (wait end) median after earliest entry")
    for k in range(kmax):
        wf = [c["wf"][k] for r in allr for c in r["cons"] if k < len(c["wf"])]
        kb = [c["kb"][k] for r in allr for c in r["cons"] if k < len(c["kb"])]
        we = [c["wf_end"][k] for r in allr for c in r["cons"] if k < len(c["wf_end"])]
        print(f"    k {k:2d}: wait {med(wf):6.0f} / {pct(wf, .9):6.0f}   k block {med(kb):6.0f}   in at {med(we):6.0f}")

groups = collections.OrderedDict()
for p in sys.argv[1:]:
    m = re.match(r".*tl_(.+)_\d+\.json$", p)
    groups.setdefault(m.group(1) if m else p, []).append(p)
for label, paths in groups.items():
    summarize(label, paths)
