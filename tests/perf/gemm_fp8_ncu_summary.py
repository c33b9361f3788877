#!/usr/bin/env python3
"""Reads an `ncu --page raw --csv --print-units base` export of gemm_fp8_ncu.lua's launches (gemm.fp8 and cuBLASLt's
FP8 kernels): one line per kernel with its launch (grid, block, cluster, registers, dynamic shared memory), duration,
SM clock and the tensor-pipe, SM, shared-memory, L2 and DRAM counters the sections gave. Usage: gemm_fp8_ncu_summary.py RAW.CSV
"""
import csv
import re
import sys

COLS = [("us", r"^gpu__time_duration\.sum$", 1e-3), ("GHz", r"^sm__cycles_elapsed\.avg\.per_second$", 1e-9),
        ("grid", r"^launch__grid_size$", 1), ("block", r"^launch__block_size$", 1),
        ("clx", r"^launch__cluster_dim_x$", 1), ("cly", r"^launch__cluster_dim_y$", 1),
        ("regs", r"^launch__registers_per_thread$", 1), ("smem", r"^launch__shared_mem_per_block_dynamic$", 1),
        ("sm%", r"^sm__throughput\.avg\.pct_of_peak_sustained_elapsed$", 1),
        ("l2%", r"^lts__throughput\.avg\.pct_of_peak_sustained_elapsed$", 1),
        ("dram%", r"^(gpu__)?dram__throughput\.avg\.pct_of_peak_sustained_elapsed$", 1),
        ("issue%", r"^sm__inst_issued\.avg\.pct_of_peak_sustained_active$", 1)]
PIPE = r"(tensor|gmma).*pct_of_peak_sustained_(active|elapsed)$"


def num(x):
    try:
        return float(str(x).replace(",", ""))
    except ValueError:
        return None


def main(path):
    with open(path, errors="replace") as f:
        rows = list(csv.DictReader([ln for ln in f if ln.startswith('"')]))
    pipes = set()
    for r in rows:
        pipes.update(k for k in r if k and re.search(PIPE, k) and num(r[k]) not in (None, 0.0))
    pipes = sorted(pipes)
    print("tensor-pipe columns: " + ", ".join(f"p{i}={c}" for i, c in enumerate(pipes)))
    for r in rows:
        if not str(r.get("ID", "")).strip().isdigit():
            continue
        parts = []
        for label, pat, scale in COLS:
            key = next((k for k in r if k and re.search(pat, k)), None)
            v = num(r[key]) if key else None
            if v is not None:
                parts.append(f"{label} {v * scale:.4g}")
        for i, c in enumerate(pipes):
            v = num(r.get(c))
            if v is not None:
                parts.append(f"p{i} {v:.2f}")
        print(" | ".join(parts) + " | " + r.get("Kernel Name", "?")[:150])


if __name__ == "__main__":
    main(sys.argv[1])
