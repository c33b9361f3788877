#!/usr/bin/env python3
"""fp8m128t's timed rows (gemm_fp8_cublas.lua's JSON, sets run as a palindrome A B .. B A, GEMM_ROUNDS rounds): per
shape and scaling, the defaults' µs (median range over the rows, lowest minimum) and cuBLASLt ÷ ours, then each
candidate's µs and default ÷ candidate per round by medians (the mean of each one's two rows a round) and by minima
(the lower of its two rows' minima): above 1 the candidate is faster. Usage: python3 gemm_fp8_m128_table.py F.json"""
import collections, json, sys

recs = json.load(open(sys.argv[1]))
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 2
by = collections.OrderedDict()
for r in recs:
    p = r["problem"]
    key = ("%dx%dx%d" % (p["M"], p["N"], p["K"]), p["scaling"])
    cfg = json.dumps(r["config"], sort_keys=True, separators=(",", ":"))
    by.setdefault(key, collections.OrderedDict()).setdefault(cfg, []).append(r)
for (shape, scaling), cfgs in by.items():
    d = cfgs.get("{}")
    if not d:
        continue
    per = len(d) // rounds
    def rnd(rows, i):
        return rows[i * per:(i + 1) * per]
    us = lambda x: x * 1000
    dm = [us(r["median_ms"]) for r in d]
    bl = [us(r["baseline"]["median_ms"]) for r in d if r.get("baseline")]
    print(f"{shape} {scaling}: default {min(dm):.2f}-{max(dm):.2f} ({us(min(r['min_ms'] for r in d)):.2f}) us, "
          f"cuBLASLt {min(bl):.2f}-{max(bl):.2f} us, cuBLASLt/ours "
          f"{min(b / o for b, o in zip(bl, dm)):.3f}-{max(b / o for b, o in zip(bl, dm)):.3f}; "
          f"{sum(r['passed'] for rows in cfgs.values() for r in rows)}/{sum(len(rows) for rows in cfgs.values())} PASS")
    for cfg, rows in cfgs.items():
        if cfg == "{}":
            continue
        cm = [us(r["median_ms"]) for r in rows]
        xs, xn = [], []
        for i in range(rounds):
            a, b = rnd(d, i), rnd(rows, i)
            xs.append(sum(r["median_ms"] for r in a) / len(a) / (sum(r["median_ms"] for r in b) / len(b)))
            xn.append(min(r["min_ms"] for r in a) / min(r["min_ms"] for r in b))
        print(f"   {cfg:<62} {min(cm):.2f}-{max(cm):.2f} ({us(min(r['min_ms'] for r in rows)):.2f}) us  x med "
              + ", ".join(f"{x:.3f}" for x in xs) + "  x min " + ", ".join(f"{x:.3f}" for x in xn))
