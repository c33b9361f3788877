# The table of timers_device.sh: each kernel's median per launch by each timer (bench --json records) beside the
# median of ncu's gpu__time_duration.sum over the kernel's profiled launches (caches flushed before each, ncu's
# default, and not flushed), and the ratio to the first.
import csv
import json
import statistics
import sys


def ncu_median_us(path):
    """The median of gpu__time_duration.sum over the rows of an ncu --csv file, in µs, and the row count."""
    values = []
    try:
        with open(path) as f:
            lines = [line for line in f if line.startswith('"')]  # ncu's rows; the bench's own text is not quoted
        for row in csv.DictReader(lines):
            if row.get("Metric Name") == "gpu__time_duration.sum":
                scale = {"nsecond": 1e-3, "ns": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3}.get(row["Metric Unit"], 1e-3)
                values.append(float(row["Metric Value"].replace(",", "")) * scale)
    except (OSError, KeyError, ValueError) as e:
        print(f"<!-- {path}: {e} -->")
    return (statistics.median(values) if values else 0.0), len(values)


out = sys.argv[1]
print("| kernel | timer | median µs per kernel | min–max µs | ncu µs, caches flushed (n) | ratio | ncu µs, caches kept (n) |")
print("| --- | --- | --- | --- | --- | --- | --- |")
for kernel in ["copy", "mla.decode", "gemm.wgmma"]:
    flushed, n_flushed = ncu_median_us(f"{out}/{kernel}.ncu.all.csv")
    kept, n_kept = ncu_median_us(f"{out}/{kernel}.ncu.none.csv")
    for timer in ["events", "cupti", "graph"]:
        try:
            r = json.load(open(f"{out}/{kernel}.{timer}.json"))
        except (OSError, ValueError) as e:
            print(f"| {kernel} | {timer} | no record ({e}) | | | | |")
            continue
        t = r["time_ms"]
        note = f" (N = {r['graph_launches']})" if timer == "graph" else ""
        ratio = f"{t['median'] * 1e3 / flushed:.3f}" if flushed else "-"
        print(f"| {kernel} | {timer}{note} | {t['median'] * 1e3:.2f} | {t['min'] * 1e3:.2f}–{t['max'] * 1e3:.2f} | "
              f"{flushed:.2f} ({n_flushed}) | {ratio} | {kept:.2f} ({n_kept}) |" + ("" if r["passed"] else " FAIL"))
