# The table of issue 19's anchors from mla_anchors.lua's "ROW" lines and flashmla_anchors.py's "FMROW" lines (any
# files, given as arguments): per point ours and FlashMLA's ms median (min) by round, and × FlashMLA (ours' rate ÷
# FlashMLA's, FLOPs as FlashMLA counts them: for the sparse kernels the same FLOPs, so FlashMLA's ms ÷ ours; for the
# dense decode each side's own varlen draw) by round's medians and minima, against the target (1.03× at the
# memory-bound dense shapes, else 1.0×; stretch 1.05×). Round i of ours is paired with FlashMLA's round i.
import collections
import sys

ours = collections.defaultdict(dict)  # name -> round -> (ms, min ms, TFLOP/s, TFLOP/s by min, check, kernel)
fm = collections.defaultdict(dict)  # name -> round -> (ms, min ms, TFLOP/s, TFLOP/s by min, note)
order = []
for path in sys.argv[1:]:
    for line in open(path, errors="replace"):
        line = line.strip()
        if line.startswith("ROW "):
            p = line[4:].split("|")
            rnd, kernel, name = int(p[0][1:]), p[1], p[2]
            if name not in order:
                order.append(name)
            if p[3].startswith("ERROR"):
                ours[name][rnd] = None
                continue
            ms, mn, tf = float(p[4]), float(p[5]), float(p[6])
            ours[name][rnd] = (ms, mn, tf, tf * ms / mn if mn > 0 else 0.0, p[3], kernel, p[7])
        elif line.startswith("FMROW "):
            p = line[6:].split("|")
            rnd, name = int(p[0][1:]), p[2]
            if len(p) < 8:
                fm[name][rnd] = None
                continue
            fm[name][rnd] = (float(p[3]), float(p[4]), float(p[5]), float(p[6]), p[7])


def target(name):
    return 1.03 if name.startswith("MB") else 1.0


kinds = [("mla.sparse_decode", "sparse decode (FP8 cache, s_q 2, s_k 32768 varlen)"),
         ("mla.sparse_prefill", "sparse prefill (bf16, s_q 4096, topk 2048, sinks)"),
         ("mla.decode", "dense decode (b 128 varlen; L32 b 32)")]
for kernel, title in kinds:
    names = [n for n in order if any(v and v[5] == kernel for v in ours[n].values())]
    if not names:
        continue
    print(f"\n{kernel}: {title}")
    print("| shape | ours ms median (min), r1 · r2 | ours TFLOP/s | FlashMLA ms median (min), r1 · r2 | FlashMLA TFLOP/s"
          " | × by medians r1 · r2 | × by minima r1 · r2 | target | met? | check |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for n in names:
        rounds = sorted(set(ours[n]) | set(fm[n]))
        o = [ours[n].get(r) for r in rounds]
        f = [fm[n].get(r) for r in rounds]
        om = " · ".join(f"{x[0]:.4f} ({x[1]:.4f})" if x else "–" for x in o)
        ot = " · ".join(f"{x[2]:.0f}" if x else "–" for x in o)
        fmm = " · ".join(f"{x[0]:.4f} ({x[1]:.4f})" if x else "–" for x in f)
        ft = " · ".join(f"{x[2]:.0f}" if x else "–" for x in f)
        med = [x[2] / y[2] if x and y else None for x, y in zip(o, f)]
        mins = [x[3] / y[3] if x and y else None for x, y in zip(o, f)]
        xs = " · ".join(f"{v:.3f}" if v else "–" for v in med)
        xm = " · ".join(f"{v:.3f}" if v else "–" for v in mins)
        t = target(n)
        got = [v for v in med if v]
        if not got:
            met = "–"
        elif min(got) >= 1.05:
            met = "yes (stretch too)"
        elif min(got) >= t:
            met = "yes"
        elif max(got) >= t:
            met = "mixed"
        else:
            met = f"no ({min(got) / t - 1:+.1%})"
        checks = ",".join(sorted({x[4] for x in o if x}))
        note = " ".join(sorted({x[4] for x in f if x and x[4]}))
        print(f"| {n} | {om} | {ot} | {fmm} | {ft}{' (' + note + ')' if note else ''} | {xs} | {xm} | {t:.2f}× | {met} | {checks} |")
