# mla_sched_screen.lua's output (screen.txt), flashmla_dense.py's (flashmla.txt) and nvidia-smi's log (smi.csv) -> a
# short text table: the screen per shape (x = the default's mean median ÷ the config's, > 1: the config is faster),
# the finalists' rounds (medians (minima) by round; x by round, medians [minima range]; WINS where every round's
# medians and minima are >= 1), their rates ÷ FlashMLA's, and the clocks. Usage: python3 mla_sched_table.py
# screen.txt [flashmla.txt [smi.csv]].
import collections
import re
import sys

pat = re.compile(r"^(s1|r\d+) (.{8}) (\S+)\s+(PASS|FAIL) ([\d.]+) ms \(min ([\d.]+)\) ([\d.]+) TFLOP/s err (\S+)")
screen = collections.defaultdict(list)  # shape -> [(cfg, med, min, pass)]
runs = collections.defaultdict(dict)  # (shape, cfg) -> round -> (med, min, tflops, pass, err)
shapes, finalists, other = [], [], []
for line in open(sys.argv[1], errors="replace"):
    m = pat.match(line)
    if line.startswith("FINALIST "):
        finalists.append(line.split()[1])
    if not m:
        if re.match(r"^(s1|r\d+) ", line) or "stopped" in line or "failures" in line:
            other.append(line.strip()[:200])
        continue
    tag, shape, cfg = m.group(1), m.group(2).strip(), m.group(3)
    med, mn, tf, ok, err = float(m.group(5)), float(m.group(6)), float(m.group(7)), m.group(4), m.group(8)
    if tag == "s1":
        screen[shape].append((cfg, med, mn, ok, err))
        continue
    if shape not in shapes:
        shapes.append(shape)
    runs[(shape, cfg)][int(tag[1:])] = (med, mn, tf, ok, err)
npass = sum(1 for v in screen.values() for x in v if x[3] == "PASS") + sum(
    1 for v in runs.values() for x in v.values() if x[3] == "PASS")
ntot = sum(len(v) for v in screen.values()) + sum(len(v) for v in runs.values())
print(f"timed points: {ntot}, PASS {npass}; " + " | ".join(other))
for shape, rows in screen.items():
    a = [r for r in rows if r[0] == "-"]
    ref = sum(r[1] for r in a) / len(a) if a else float("nan")
    amin = min(r[2] for r in a) if a else float("nan")
    print(f"screen {shape}: default " + " · ".join(f"{r[1]:.4f} ({r[2]:.4f})" for r in a) + ", x = mean default ÷ config")
    for cfg, med, mn, ok, err in sorted((r for r in rows if r[0] != "-"), key=lambda r: r[1]):
        print(f"  {cfg:<40} {med:.4f} ({mn:.4f}) x {ref / med:.4f} (min {amin / mn:.4f}) {ok}")
rounds = sorted({r for v in runs.values() for r in v})
cfgs = ["-"] + finalists
print("rounds: ms, median (min) by round; finalists: " + ", ".join(finalists))
for sh in shapes:
    for c in cfgs:
        v = runs.get((sh, c))
        if v:
            print(f"{sh:<8} {c:<36} " + " · ".join(f"{v[r][0]:.4f} ({v[r][1]:.4f})" if r in v else "-" for r in rounds)
                  + f"  err {max(float(x[4]) for x in v.values()):.3g}")
print("x = default ÷ finalist by round: medians [minima range]")
for c in finalists:
    cells = []
    for sh in shapes:
        va, vb = runs.get((sh, "-"), {}), runs.get((sh, c), {})
        rs = [r for r in rounds if r in va and r in vb]
        if not rs:
            continue
        meds = [va[r][0] / vb[r][0] for r in rs]
        mins = [va[r][1] / vb[r][1] for r in rs]
        verdict = "WINS" if min(meds) > 1 and min(mins) >= 1 else "even/loses"
        cells.append(f"{sh}: {' '.join(f'{x:.3f}' for x in meds)} [{min(mins):.3f}-{max(mins):.3f}] {verdict}")
    print(f"{c}: " + " | ".join(cells))
fm = {}
try:
    for line in open(sys.argv[2], errors="replace"):
        m = re.match(r"FlashMLA\s+(\S+(?: \d+)?)\s+([\d.]+) ms \(min ([\d.]+)\)\s+([\d.]+) GB/s\s+([\d.]+) TFLOP/s\s+mean_len (\d+)\s+(?:max_len \d+\s+)?(\S+)", line)
        if m:
            name = m.group(1)
            fm["L32" if name.startswith("L32") else name] = (float(m.group(2)), float(m.group(3)), float(m.group(4)),
                                                             float(m.group(5)), m.group(6), m.group(7))
        elif "FlashMLA" in line or "Error" in line:
            print(line.strip()[:200])
except (OSError, IndexError) as e:
    print("no flashmla.txt:", e)
for sh in shapes:
    if sh not in fm:
        print(f"FlashMLA {sh}: no row")
        continue
    t, tmin, gbs, tf, mean, fin = fm[sh]
    rate = lambda c: " ".join(f"{runs[(sh, c)][r][2] / tf:.3f}" for r in rounds if r in runs.get((sh, c), {}))
    print(f"FlashMLA {sh:<8} {t:.4f} ms (min {tmin:.4f}) {tf:.1f} TFLOP/s {gbs:.0f} GB/s mean_len {mean} {fin}; rate÷FM "
          + "; ".join(f"{c} {rate(c)}" for c in cfgs if (sh, c) in runs))
try:
    rows = [l.split(",") for l in open(sys.argv[3]) if l.count(",") >= 4]
    busy = [r for r in rows if "MHz" in r[1] and int(r[1].split()[0]) > 1000]
    thr = collections.Counter((r[1].strip(), r[4].strip()) for r in busy)
    print(f"nvidia-smi: {len(rows)} samples, {len(busy)} > 1000 MHz: " +
          ", ".join(f"{k[0]} {k[1]} x{v}" for k, v in thr.most_common(6)))
except (OSError, ValueError, IndexError) as e:
    print("smi:", e)
