#!/usr/bin/env python3
"""The rows of gemm_fp8_cublas.lua's JSON (each gemm.fp8 run with its cuBLASLt baseline) as a table: shape, scaling,
config, our median and minimum, cuBLASLt's, and cuBLASLt / ours by medians and by minima (above 1: ours faster).
Usage: python3 gemm_fp8_cublas_table.py OUT/gemm_fp8_cublas.json (gemm_fp8_state.sh and gemm_fp8_kernels.sh call it).
"""
import json
import sys

print("%-16s %-6s %-44s %8s %8s %8s %8s %6s %6s" % ("shape", "scale", "config", "ms", "min", "cuBLAS", "min", "x med", "x min"))
for r in json.load(open(sys.argv[1])):
    p, b = r["problem"], r.get("baseline") or {}
    bm, bn = b.get("median_ms", 0), b.get("min_ms", 0)
    print("%-16s %-6s %-44s %8.4f %8.4f %8.4f %8.4f %6.3f %6.3f %s" % (
        "%dx%dx%d" % (p["M"], p["N"], p["K"]), p["scaling"], json.dumps(r["config"], separators=(",", ":"))[:44],
        r["median_ms"], r["min_ms"], bm, bn, bm / r["median_ms"] if bm else 0, bn / r["min_ms"] if bn else 0,
        "" if r["passed"] else "FAIL"))
