#!/usr/bin/env python3
"""Issue 21's anchor table from one issue21_state_device.sh call: the work folder's JSON and logs (untar
state21.tgz into DIR) as markdown tables, one per family, each row ours and its baseline as µs median (min) per round,
the ratios by medians and by minima (> 1: ours faster), the target and whether both rounds meet it.
Usage: python3 tests/perf/issue21_state_table.py DIR
"""
import json
import math
import os
import re
import sys

W = sys.argv[1]


def load(name):
    p = os.path.join(W, name)
    return json.load(open(p)) if os.path.exists(p) else []


def us(ms):
    return ms * 1e3


def mm(rows, key_med="median_ms", key_min="min_ms"):
    return " · ".join("%.1f (%.1f)" % (us(r[key_med]), us(r[key_min])) for r in rows)


def rng(vals, fmt="%.3f"):
    lo, hi = min(vals), max(vals)
    return fmt % lo if fmt % lo == fmt % hi else (fmt + "–" + fmt) % (lo, hi)


def met(meds, target, mins=None):
    if all(v >= target for v in meds):
        return "**yes**" if not mins or all(v >= target for v in mins) else "yes (medians)"
    if any(v >= target for v in meds):
        return "split"
    return "**no**"


def chk(rows):
    n = sum(1 for r in rows if r.get("checked"))
    ok = all(r.get("passed") for r in rows)
    return ("PASS" if ok else "**FAIL**") + " (%d checked)" % n


def shape(p):
    return "%d×%d×%d" % (p["M"], p["N"], p["K"])


summary = []

# -- gemm.fp8 --------------------------------------------------------------------------------------------------
fp8 = load("gemm_fp8_cublas.json")
if fp8:
    print("### gemm.fp8 beside cuBLASLt (same worker, same buffers; CUDA events, L2 flushed, 30 runs a row)\n")
    print("| shape | scaling | ours µs med (min), r1 · r2 | cuBLASLt µs med (min), r1 · r2 | × by medians | × by minima | target | met |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    by = {}
    for r in fp8:
        by.setdefault((shape(r["problem"]), r["problem"]["scaling"]), []).append(r)
    for (s, sc), rows in by.items():
        b = [r["baseline"] for r in rows]
        xm = [bb["median_ms"] / r["median_ms"] for bb, r in zip(b, rows)]
        xn = [bb["min_ms"] / r["min_ms"] for bb, r in zip(b, rows)]
        print("| %s | %s | %s | %s | %s | %s | ≥ 1.0 | %s |" % (s, sc, mm(rows), mm(b), rng(xm), rng(xn), met(xm, 1.0, xn),)
              + (" " if False else ""))
        summary.append(("fp8 %s %s vs cuBLASLt %s" % (s, sc, sc), xm, xn, 1.0))
        if sc == "block":
            rw = by.get((s, "row"))
            if rw:
                xm = [w["baseline"]["median_ms"] / r["median_ms"] for w, r in zip(rw, rows)]
                xn = [w["baseline"]["min_ms"] / r["min_ms"] for w, r in zip(rw, rows)]
                print("| %s | block ÷ row-wise cuBLASLt | (above) | %s | %s | %s | ≥ 1.0 | %s |" % (
                    s, mm([w["baseline"] for w in rw]), rng(xm), rng(xn), met(xm, 1.0, xn)))
                summary.append(("fp8 %s block vs row-wise cuBLASLt" % s, xm, xn, 1.0))
    print("\nchecks: %s\n" % chk(fp8))

# -- gemm.wgmma bf16 -------------------------------------------------------------------------------------------
bf = load("gemm_bf16.json")
if bf:
    print("### gemm.wgmma bf16 beside cuBLAS (same worker; CUDA events, L2 flushed, 30 runs a row)\n")
    print("| shape | ours µs med (min), r1 · r2 | cuBLAS µs med (min), r1 · r2 | × by medians | × by minima | target | met |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    by = {}
    for r in bf:
        by.setdefault(shape(r["problem"]), []).append(r)
    logs_m, logs_n = [], []
    for s, rows in by.items():
        b = [r["baseline"] for r in rows]
        xm = [bb["median_ms"] / r["median_ms"] for bb, r in zip(b, rows)]
        xn = [bb["min_ms"] / r["min_ms"] for bb, r in zip(b, rows)]
        logs_m.append(sum(math.log(x) for x in xm) / len(xm))
        logs_n.append(sum(math.log(x) for x in xn) / len(xn))
        print("| %s | %s | %s | %s | %s | ≥ 0.98 | %s |" % (s, mm(rows), mm(b), rng(xm), rng(xn), met(xm, 0.98, xn)))
        summary.append(("bf16 %s" % s, xm, xn, 0.98))
    gm, gn = math.exp(sum(logs_m) / len(logs_m)), math.exp(sum(logs_n) / len(logs_n))
    print("| geometric mean (%d shapes) | | | %.3f | %.3f | ≥ 1.02 | %s |" % (len(by), gm, gn, met([gm], 1.02, [gn])))
    summary.append(("bf16 geometric mean", [gm], [gn], 1.02))
    print("\nchecks: %s\n" % chk(bf))

# -- gemm.grouped ----------------------------------------------------------------------------------------------
gr = load("gemm_grouped.json")
torch = {}
for f in ("torch1.txt", "torch2.txt"):
    p = os.path.join(W, f)
    if not os.path.exists(p):
        continue
    for line in open(p):
        m = re.match(r"torch (.+?)\s+G=(\d+)\s+M=(\d+)\s+median\s+([\d.]+) ms .* min\s+([\d.]+) ms", line)
        if m:
            torch.setdefault((m.group(1).strip(), int(m.group(2)), int(m.group(3))), []).append(
                {"median_ms": float(m.group(4)), "min_ms": float(m.group(5)), "file": f})
if gr:
    print("### gemm.grouped beside torch (torch before and after ours in the same call; N 4096, K 7168; CUDA events, "
          "L2 flushed; ours 30 runs a row, each run twice back to back; torch median of 100)\n")
    print("| G × M | ours | ours µs med (min), r1 · r2 | torch row | torch µs med (min), before · after | × by medians | × by minima | target | met |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    by = {}
    for r in gr:
        p = r["problem"]
        kind = p.get("dtype", "bf16") + ((" " + p["scaling"]) if p.get("scaling") else "")
        kind = "e4m3 block" if kind == "e4m3" else kind  # scaling auto: block for e4m3
        by.setdefault((p["G"], p["M"], kind), []).append(r)
    for (g, m, kind), rows in by.items():
        tname = "2d x 3d (offsets)" if kind == "bf16" else "e4m3 row-wise (scaled)"
        t = torch.get((tname, g, m), [])
        if t:
            xm = [tt["median_ms"] / r["median_ms"] for tt in t for r in rows]
            xn = [tt["min_ms"] / r["min_ms"] for tt in t for r in rows]
            tgt = "≥ 1.0" if kind == "bf16" else "(≥ 1.0, analog)"
            print("| %d × %d | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                g, m, kind, mm(rows), "_grouped_mm" if kind == "bf16" else "_scaled_grouped_mm row", mm(t), rng(xm),
                rng(xn), tgt, met(xm, 1.0, xn)))
            summary.append(("grouped G%d M%d %s" % (g, m, kind), xm, xn, 1.0))
        else:
            print("| %d × %d | %s | %s | (no torch row) | | | | | |" % (g, m, kind, mm(rows)))
    others = [(k, v) for k, v in torch.items() if k[0] == "3d x 3d (batched)"]
    if others:
        print("\ntorch 3d × 3d batched (every row computed): " + "; ".join(
            "G %d × %d %s" % (k[1], k[2], mm(v)) for k, v in others))
    print("\nchecks: %s\n" % chk(gr))

# -- gemm.dequant gemv -----------------------------------------------------------------------------------------
gv = load("rounds.json")
if gv:
    hbm = gv[0].get("hbm_gbps", 0)
    print("### gemm.dequant gemv (path auto) against the HBM copy measured in the same process (%.0f GB/s); cupti "
          "kernel time, L2 flushed, 50 runs a row, two rounds\n" % hbm)
    print("| N × K | M | weights | µs med (min), r1 · r2 | weight GB/s (median) | % of copy, weight bytes, by medians | by minima | % all bytes | target | met |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    by = {}
    for r in gv:
        p = r["problem"]
        by.setdefault((p["N"], p["K"], p["M"], p["wtype"], p["group"]), []).append(r)
    for (n, k, m, w, g), rows in by.items():
        wb = n * k / 2
        pm = [100 * wb / (r["us"] * 1e-6) / (hbm * 1e9) for r in rows]
        pn = [100 * wb / (r["min_us"] * 1e-6) / (hbm * 1e9) for r in rows]
        print("| %d × %d | %d | %s g%d | %s | %s | %s | %s | %s | ≥ 80 | %s |" % (
            n, k, m, w, g, " · ".join("%.1f (%.1f)" % (r["us"], r["min_us"]) for r in rows),
            rng([wb / (r["us"] * 1e-6) / 1e9 for r in rows], "%.0f"), rng(pm, "%.1f"), rng(pn, "%.1f"),
            rng([r["hbm_pct"] for r in rows], "%.1f"), met(pm, 80, pn)))
        summary.append(("gemv %dx%d M%d %s g%d (%%)" % (n, k, m, w, g), pm, pn, 80))
    print("\nchecks: %s\n" % chk(gv))

# -- gemm.dequant prefill --------------------------------------------------------------------------------------
pf = [r for r in load("dequant_prefill.json") if not r.get("check")]
if pf:
    print("### gemm.dequant prefill beside bf16 gemm.wgmma (same process, wgmma before and after; CUDA events, "
          "L2 flushed, 30 runs a row, every run float64-checked)\n")
    print("| M×N×K | weights | dequant µs med (min), pass 1 · 2 | gemm.wgmma bf16 µs med (min), before · after | × by medians | × by minima | target | met |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    base, by = {}, {}
    for r in pf:
        p = r["problem"]
        if r["kernel"] == "gemm.wgmma":
            base.setdefault(shape(p), []).append(r)
        else:
            by.setdefault((shape(p), "%s g%d" % (p["wtype"], p["group"])), []).append(r)
    for (s, w), rows in by.items():
        b = base.get(s, [])
        bm = sum(x["median_ms"] for x in b) / len(b)
        bn = sum(x["min_ms"] for x in b) / len(b)
        xm = [bm / r["median_ms"] for r in rows]
        xn = [bn / r["min_ms"] for r in rows]
        print("| %s | %s | %s | %s | %s | %s | ≥ 0.9 | %s |" % (s, w, mm(rows), mm(b), rng(xm), rng(xn), met(xm, 0.9, xn)))
        summary.append(("prefill %s %s" % (s, w), xm, xn, 0.9))
    allp = load("dequant_prefill.json")
    print("\nchecks: %s (every row checked; plus %d odd-shape checks)\n" % (
        "PASS" if all(r["passed"] for r in allp) else "**FAIL**", sum(1 for r in allp if r.get("check"))))

for label, test in (("miss in every round", lambda s: max(s[1]) < s[3]),
                    ("split (one round meets, one misses)", lambda s: min(s[1]) < s[3] <= max(s[1]))):
    print("### rows that %s (by medians)\n" % label)
    for name, xm, xn, tgt in summary:
        if test((name, xm, xn, tgt)):
            print("- %s: %s (minima %s), target %s" % (name, rng(xm), rng(xn), tgt))
    print()
print("%d rows, %d meet in every round by medians, %d split, %d miss" % (
    len(summary), sum(1 for s in summary if min(s[1]) >= s[3]),
    sum(1 for s in summary if min(s[1]) < s[3] <= max(s[1])), sum(1 for s in summary if max(s[1]) < s[3])))
