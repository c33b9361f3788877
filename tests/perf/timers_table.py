# The table of timers_device.sh: each kernel's median per launch by each timer (bench --json records) beside the
# median of ncu's gpu__time_duration.sum over the kernel's profiled launches, and their ratio.
import csv
import json
import statistics
import sys

out = sys.argv[1]
print("| kernel | timer | median µs per kernel | min–max µs | ncu gpu__time_duration µs (median of n) | ratio |")
print("| --- | --- | --- | --- | --- | --- |")
for kernel in ["copy", "mla.decode", "gemm.wgmma"]:
    ncu = []
    try:
        with open(f"{out}/{kernel}.ncu.csv") as f:
            lines = [line for line in f if line.startswith('"')]  # ncu's own messages are not quoted
        for row in csv.DictReader(lines):
            if row.get("Metric Name") == "gpu__time_duration.sum":
                scale = {"nsecond": 1e-3, "ns": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3}.get(row["Metric Unit"], 1e-3)
                ncu.append(float(row["Metric Value"].replace(",", "")) * scale)
    except (OSError, KeyError, ValueError) as e:
        print(f"<!-- ncu {kernel}: {e} -->")
    ncu_us = statistics.median(ncu) if ncu else 0.0
    for timer in ["events", "cupti", "graph"]:
        try:
            r = json.load(open(f"{out}/{kernel}.{timer}.json"))
        except (OSError, ValueError) as e:
            print(f"| {kernel} | {timer} | no record ({e}) | | | |")
            continue
        t = r["time_ms"]
        note = f" (N = {r['graph_launches']})" if timer == "graph" else ""
        ratio = f"{t['median'] * 1e3 / ncu_us:.3f}" if ncu_us else "-"
        print(f"| {kernel} | {timer}{note} | {t['median'] * 1e3:.2f} | {t['min'] * 1e3:.2f}–{t['max'] * 1e3:.2f} | "
              f"{ncu_us:.2f} (n = {len(ncu)}) | {ratio} |" + ("" if r["passed"] else " FAIL"))
