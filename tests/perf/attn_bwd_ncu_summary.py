#!/usr/bin/env python3
"""Reads attn_bwd_ncu_device.sh's ncu CSV exports: the kernel list, the two kernels' key counters, and our stall samples
by SASS region.

  list LIST.CSV     every profiled kernel (duration, grid, block, registers, shared memory), then `main REGEX`: the
                    longest kernel that is not ours (cuDNN's backward), as an ncu -k regex
  report DIR        both kernels' counters side by side (DIR/{ours,cudnn}_{details,raw}.csv) and our per-instruction
                    stall samples summed by region (DIR/ours_source.csv)
"""
import collections
import csv
import re
import sys


def rows(path, header=None):
    """The CSV rows of an ncu export as dicts (ncu mixes the program's own output into stdout: skipped); with header,
    from the line that starts with it (the source page opens with a line of the kernel's name)."""
    with open(path, errors="replace") as f:
        lines = [ln for ln in f if ln.startswith('"')]
    if header:
        lines = lines[next((i for i, ln in enumerate(lines) if ln.startswith(header)), len(lines)):]
    return list(csv.DictReader(lines))


def num(x):
    try:
        return float(str(x).replace(",", ""))
    except ValueError:
        return None


def kernel_list(path):
    kernels = collections.OrderedDict()
    for r in rows(path):
        k = kernels.setdefault(r["ID"], {"name": r["Kernel Name"], "grid": r.get("Grid Size"), "block": r.get("Block Size")})
        k[r["Metric Name"]] = r["Metric Value"]
    longest = None
    for i, k in kernels.items():
        us = (num(k.get("gpu__time_duration.sum")) or 0) / 1e3
        print(f"kernel {i:>3} {us:9.1f} us grid {k['grid']} block {k['block']} regs {k.get('launch__registers_per_thread')} "
              f"smem {k.get('launch__shared_mem_per_block_dynamic')} cluster {k.get('launch__cluster_dim_x')} {k['name'][:110]}")
        if "attn_bwd_wgmma" not in k["name"] and (longest is None or us > longest[0]):
            longest = (us, k["name"])
    if longest:
        print("main ^" + re.escape(longest[1]) + "$")


# Counters printed side by side (raw metric names, matched as regexes).
RAW = [
    r"^gpu__time_duration\.sum$", r"^smsp__cycles_active\.avg$", r"^sm__throughput\.avg\.pct_of_peak_sustained_elapsed$",
    r"^launch__(grid_size|block_size|registers_per_thread|shared_mem_per_block_dynamic|occupancy_limit_registers)$",
    r"^sm__warps_active\.avg\.pct_of_peak_sustained_active$",
    r"tensor.*pct_of_peak_sustained_(active|elapsed)$", r"gmma.*pct_of_peak_sustained_(active|elapsed)$",
    r"^smsp__issue_active\.avg\.pct_of_peak_sustained_active$", r"^smsp__inst_executed\.sum$",
    r"^sm__inst_executed_pipe_.*\.sum$",
    r"^l1tex__data_pipe_lsu_wavefronts_mem_shared.*\.sum$", r"^l1tex__data_bank_conflicts_pipe_lsu_mem_shared.*\.sum$",
    r"^smsp__inst_executed_op_shared_(ld|st)\.sum$", r"shared.*pct_of_peak_sustained_elapsed$",
    r"^l1tex__throughput\.avg\.pct_of_peak_sustained_active$", r"^lts__t_bytes\.sum$", r"^dram__bytes_(read|write)\.sum$",
    r"^smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio$",
]


def raw(path):
    out = {}
    for r in rows(path):
        if not str(r.get("ID", "")).strip().isdigit():
            continue  # the units row
        for k, v in r.items():
            if k and any(re.search(p, k) for p in RAW):
                out[k] = v
        break  # one kernel per report
    return out


def source_regions(path):
    """Stall samples of our SASS by region: the region is set by landmarks met walking the code in address order."""
    rs = rows(path, '"Address"')
    if not rs:
        print("no source rows in", path)
        return
    cols = list(rs[0].keys())
    print("source columns:", ", ".join(cols)[:1500])
    text = next((c for c in cols if c.strip() in ("Source", "# Source")), cols[1])
    samp = [c for c in cols if "Sampling" in c or "stall" in c.lower()]
    region, seen = "setup", collections.Counter()
    acc = collections.defaultdict(collections.Counter)
    for r in rs:
        s = r[text]
        # Landmarks of the consumer loop in program order (see attn_bwd_wgmma.cuh).
        if "USETMAXREG.DEALLOC" in s:
            region = "producer"
        elif region != "producer":
            if "HGMMA.64x64x16" in s and "tnspA" not in s and region in ("setup", "dq_stage", "loop_top"):
                region = "sdp_gemm"
            elif "WARPGROUP.DEPBAR.LE gsb0, 0x1" in s:
                region = "p_exp"
            elif "WARPGROUP.DEPBAR.LE gsb0, 0x0" in s and region == "p_exp":
                region = "ds_math"
            elif "BAR.SYNC" in s and "0x4" in s:
                region = "ds_store"
            elif "HGMMA.64x128x16" in s and region == "ds_store":
                region = "dkv_gemm"
            elif "BAR.SYNC" in s and "0x1," in s:
                region = "dq_gemm"
            elif "SYNCS.PHASECHK" in s and region == "dq_gemm":
                region = "dq_stage"
            elif "BAR.SYNC" in s and "0x2," in s:
                region = "epilogue/defer"
        for c in samp:
            v = num(r[c])
            if v:
                acc[region][c] += v
        acc[region]["instructions"] += 1
        seen[region] += 1
    for c in samp:
        tot = sum(acc[g][c] for g in acc) or 1
        print(f"\n{c}: total {tot:.0f}")
        for g in acc:
            if acc[g][c]:
                print(f"  {g:16s} {acc[g][c]:10.0f} {100 * acc[g][c] / tot:5.1f}%")
    # The instructions with the most samples.
    main = samp[0] if samp else None
    if main:
        top = sorted(rs, key=lambda r: -(num(r[main]) or 0))[:40]
        print(f"\ntop instructions by {main}:")
        for r in top:
            print(f"  {num(r[main]) or 0:8.0f}  {r.get('# Address', r.get('Address', ''))}  {r[text][:90]}")


def report(d):
    a, b = raw(f"{d}/ours_raw.csv"), raw(f"{d}/cudnn_raw.csv")
    print(f"{'metric':80s} {'ours':>16s} {'cudnn':>16s}")
    for k in sorted(set(a) | set(b)):
        print(f"{k:80s} {str(a.get(k, '-'))[:16]:>16s} {str(b.get(k, '-'))[:16]:>16s}")
    source_regions(f"{d}/ours_source.csv")


if __name__ == "__main__":
    {"list": kernel_list, "report": report}[sys.argv[1]](sys.argv[2])
