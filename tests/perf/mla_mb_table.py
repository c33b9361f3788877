# The table of tests/perf/mla_mb_rounds.lua's output (ROW / TIMES lines) beside flashmla_dense.py's (FlashMLA lines):
# per shape and round each config's median (min) ms and GB/s, x = the default's median / the config's in the same
# round (minima in brackets), the run-time distribution of the TIMES lines, and ours / FlashMLA by rate (each side's
# own varlen draw: ours mean length from OURS_MEAN, FlashMLA's from its line). Usage: python3 mla_mb_table.py OURS FM
import re, statistics as st, sys
OURS_MEAN = {"MB 4096": 4298.0, "MB 8192": 8596.0, "MB 16384": 17192.0}  # mla.decode's varlen draw (state19)
rows, times = {}, {}
for line in open(sys.argv[1]):
    if line.startswith("ROW "):
        f = line[4:].strip().split("|")
        if len(f) < 8:
            print("!!", line.strip()); continue
        rows.setdefault(f[1], {}).setdefault(f[2], {})[f[0]] = (f[3], float(f[4]), float(f[5]), float(f[6]))
    elif line.startswith("TIMES "):
        f = line[6:].strip().split("|")
        times.setdefault(f[1], {}).setdefault(f[2], {})[f[0]] = [float(x) for x in f[3].split(",")]
fm = {}
if len(sys.argv) > 2:
    for line in open(sys.argv[2]):
        m = re.match(r"FlashMLA\s+(MB \d+)\s+([\d.]+) ms \(min ([\d.]+)\).*mean_len (\d+)", line)
        if m:
            fm[m.group(1)] = (float(m.group(2)), float(m.group(3)), float(m.group(4)))
for shape, cfgs in rows.items():
    print(f"\n== {shape} ==")
    base = cfgs.get("-", {})
    for c, rr in cfgs.items():
        cells, xs = [], []
        for r in sorted(rr):
            ok, med, mn, gb = rr[r]
            cells.append(f"{r} {med:.4f} ({mn:.4f}) {gb:.0f} GB/s {ok}")
            if c != "-" and r in base:
                xs.append(f"{base[r][1] / med:.3f} ({base[r][2] / mn:.3f})")
        print(f"{c:<18} " + " | ".join(cells))
        if xs:
            print(f"{'':<18} x default: " + " · ".join(xs))
    if shape in fm:
        fmed, fmin, fmean = fm[shape]
        om = OURS_MEAN.get(shape)
        if om:
            for c, rr in cfgs.items():
                xs = [f"{(om / rr[r][1]) / (fmean / fmed):.3f} ({(om / rr[r][2]) / (fmean / fmin):.3f})" for r in sorted(rr)]
                print(f"{c:<18} ÷ FlashMLA by rate ({fmed:.4f} ({fmin:.4f}) ms, mean {fmean:.0f}): " + " · ".join(xs))
    for c, rr in times.get(shape, {}).items():
        for r in sorted(rr):
            t = rr[r]
            s = sorted(t)
            mn = s[0]
            q = lambda p: s[min(len(s) - 1, int(p * len(s)))]
            slow = [i for i, v in enumerate(t) if v > mn * 1.01]
            print(f"  dist {c:<16} {r}: n {len(t)} min {mn:.4f} p10 {q(.1):.4f} p50 {st.median(t):.4f} p90 {q(.9):.4f} "
                  f"max {s[-1]:.4f}; > min+1%: {len(slow)} runs, first half {sum(i < len(t) // 2 for i in slow)}; "
                  f"largest gap in sorted {max(b - a for a, b in zip(s, s[1:])) if len(s) > 1 else 0:.4f}")
