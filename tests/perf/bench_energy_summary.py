#!/usr/bin/env python3
"""bench_energy.py's energy_raw.json -> per bench and kernel block: mean power over the block's interior from the
energy counter's own updates (~every 100 ms on the H100), the SM clock there, and joules a run = that power x the
mean time of the block's last-half runs (the runs inside the interior), and the SM cycles a run at that clock.
Usage: bench_energy_summary.py OUT/energy_raw.json OUT (OUT: where the benches' JSON records are now)."""
import json, os, sys
d = json.load(open(sys.argv[1]))
S, B = d["samples"], d["benches"]
rows = []
for bi, b in enumerate(B):
    s = [x for x in S if b["t0"] - 0.2 <= x[0] <= b["t1"] + 0.2 and x[1] >= 0]
    # the counter's update points: (time of the first sample showing the new value, value)
    ups = []
    for x in s:
        if not ups or x[1] != ups[-1][1]:
            ups.append((x[0], x[1]))
    # power between consecutive updates
    seg = [(ups[i][0], ups[i + 1][0], (ups[i + 1][1] - ups[i][1]) / (ups[i + 1][0] - ups[i][0]) / 1000)
           for i in range(len(ups) - 1)]
    # blocks: maximal runs of intervals above 350 W
    blocks, cur = [], None
    for a, e, p in seg:
        if p > 350:
            cur = [a, e] if cur is None else [cur[0], e]
        elif cur:
            blocks.append(cur)
            cur = None
    if cur:
        blocks.append(cur)
    blocks = [x for x in blocks if x[1] - x[0] > 0.25]
    rec = json.load(open(os.path.join(sys.argv[2], os.path.basename(b["record_file"]))))
    parts = [("ours", rec["times_ms"])]
    if rec.get("baseline"):
        parts.append(("cudnn", rec["baseline"]["times_ms"]))
    if len(blocks) > len(parts):
        blocks = sorted(sorted(blocks, key=lambda x: x[1] - x[0])[-len(parts):])
    out = []
    for k, (name, t) in enumerate(parts):
        med = sorted(t)[len(t) // 2]
        mn = min(t)
        half = t[len(t) // 2:]
        m2 = sum(half) / len(half)
        if len(blocks) != len(parts):
            out.append(f"{name} med {med:.3f} min {mn:.3f} (blocks {len(blocks)})")
            continue
        a, e = blocks[k]
        # interior: the update points strictly inside, skipping the first and last interval (ramps)
        inner = [u for u in ups if a < u[0] < e]
        if len(inner) >= 3:
            i0, i1 = inner[1], inner[-1]
        else:
            i0, i1 = ups[[u[0] for u in ups].index(a)], ups[[u[0] for u in ups].index(e)]
        P = (i1[1] - i0[1]) / (i1[0] - i0[0]) / 1000
        clk = [x[3] for x in s if i0[0] <= x[0] <= i1[0]]
        cap = sum(1 for x in s if i0[0] <= x[0] <= i1[0] and x[4] & 4) / max(1, len(clk))
        temp = max(x[5] for x in s if a <= x[0] <= e)
        out.append(f"{name} med {med:.3f} min {mn:.3f} last-half {m2:.3f} ms | {P:.0f} W, SM {sum(clk)/len(clk):.0f} MHz"
                   f" (min {min(clk)}), cap {100*cap:.0f}%, {temp} C | {P*m2/1000:.2f} J/run"
                   f" | {sum(clk)/len(clk)*m2/1000:.2f} Mcycles/run | block {e-a:.2f} s, interior {i1[0]-i0[0]:.2f} s")
    rows.append(f"{bi:2d} {b['label']:7s} " + " || ".join(out))
print("\n".join(rows))
