#!/usr/bin/env python3
"""Reads attn_bwd_ncu_device.sh's ncu CSV exports: the kernel list, the two kernels' key counters, and our stall samples
by SASS region.

  list LIST.CSV     every profiled kernel (duration, grid, block, registers, shared memory), then `main REGEX`: the
                    longest kernel that is not ours (cuDNN's backward), as an ncu -k regex
  report DIR        both kernels' counters side by side (DIR/{ours,cudnn}_{details,raw}.csv) and our per-instruction
                    stall samples summed by region of the consumer loop (DIR/ours_source.csv; dq_alt's turns); with
                    DIR/ours2_raw.csv (the device script's PROBLEM2) a third column
  tiles SRC.CSV N   the consumer loop's regions a thousand CTA tiles (stall samples) and a consumer warp and tile (SASS
                    executed) of a run of N CTA tiles (key blocks x query tiles of each walk): two problems' loops side
                    by side per tile (attnbwd16: 16k against 4k)
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
    r"^sm__cycles_(elapsed|active)\.avg$", r"^lts__t_sector_hit_rate\.pct$", r"^lts__t_sectors_srcunit_tex_op_(read|red|atom)\.sum$",
    r"^smsp__sass_inst_executed_op_tma_red\.sum$", r"^smsp__sass_inst_executed_op_shared_(ld|st)\.sum$",
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


# The consumer loop's regions in SASS order (dq_alt's turns, the default where heads = heads_kv).
ORDER = ["wait_full", "sdp_issue", "rows_wait", "p_exp", "ds_math", "dkv_issue", "dkv_wait", "turn_bar", "dq_issue",
         "dq_wait", "dq_stage", "loop_end"]


def classify(text):
    """Region of each instruction (index -> name) of the consumer loop: from the stage's TRYWAIT before the first
    HGMMA.64x64x16 to the back-edge after the dQ staging's arrive, by landmarks met in address order (the stage wait,
    Sᵀ/dPᵀ issue, the row values' TRYWAIT, DEPBAR 1 → exponentials, DEPBAR 0 → dS math, dV/dK issue, their DEPBAR and
    the non-turn's BAR.ARV, the turn's BAR.SYNC, dQ issue, its DEPBAR, the dq_empty TRYWAIT and staging); the
    out-of-line retry blocks of those TRYWAITs by their operand. Other instructions (producer, row warps, writer,
    epilogue) are left out."""
    reg = {}
    first = next((i for i, t in enumerate(text) if "HGMMA.64x64x16" in t), None)
    if first is None:
        return reg
    tw = max((i for i in range(first) if "TRYWAIT" in text[i]), default=first)
    start = tw
    while start > 0 and "YIELD" not in text[start] and tw - start < 40:
        start -= 1
    operand = lambda t: (re.search(r"\[(.*?)\]", t) or re.search("", "")).group(1) if "[" in t else t
    waits = {operand(text[tw]): "wait_full"}
    state, end = "wait_full", len(text)
    for i in range(start, len(text)):
        t = text[i]
        nxt = {("wait_full", "WARPGROUP.ARRIVE"): "sdp_issue", ("sdp_issue", "TRYWAIT"): "rows_wait",
               ("rows_wait", "DEPBAR.LE gsb0, 0x1"): "p_exp", ("sdp_issue", "DEPBAR.LE gsb0, 0x1"): "p_exp",
               ("p_exp", "DEPBAR.LE gsb0, 0x0"): "ds_math", ("ds_math", "WARPGROUP.ARRIVE"): "dkv_issue",
               ("dkv_issue", "MEMBAR"): "dkv_wait", ("dkv_issue", "FENCE"): "dkv_wait",
               ("dkv_wait", "BAR.SYNC"): "turn_bar", ("turn_bar", "WARPGROUP.ARRIVE"): "dq_issue",
               ("dq_issue", "DEPBAR"): "dq_wait", ("dq_wait", "TRYWAIT"): "dq_stage"}
        for (st, mark), to in nxt.items():
            if state == st and mark in t:
                state = to
                if "TRYWAIT" in t:
                    waits[operand(t)] = to
                break
        reg[i] = state
        if state == "dq_stage" and "SYNCS.ARRIVE" in t:
            state = "loop_end"
        elif state == "loop_end" and "BRA" in t:
            end = i
            break
    for i, t in enumerate(text):
        if i > end and "TRYWAIT" in t and operand(t) in waits:
            reg[i] = waits[operand(t)] + "(retry)"
            if i + 1 < len(text) and "BRA" in text[i + 1]:
                reg[i + 1] = reg[i]
    return reg


def source_regions(path):
    """Stall samples of our SASS by region (classify), then the instructions with the most samples."""
    rs = rows(path, '"Address"')
    if not rs:
        print("no source rows in", path)
        return
    cols = list(rs[0].keys())
    print("source columns:", ", ".join(cols)[:1500])
    text_col = next((c for c in cols if c.strip() in ("Source", "# Source")), cols[1])
    samp = [c for c in cols if ("Sampling" in c or c.startswith("stall_")) and "Not Issued" not in c]
    text = [r[text_col] for r in rs]
    reg = classify(text)
    acc = collections.defaultdict(collections.Counter)
    for i, r in enumerate(rs):
        g = reg.get(i, "other (producer, row warps, writer, epilogue)")
        for c in samp + ["Instructions Executed"]:
            acc[g][c] += num(r.get(c)) or 0
    show = [c for c in samp if sum(acc[g][c] for g in acc) > 0][:14]
    print(f"\n{'region':24s} {'instr.':>11s} " + " ".join(f"{c.replace('stall_', '')[:10]:>10s}" for c in show))
    for g in ORDER + [o + "(retry)" for o in ORDER] + ["other (producer, row warps, writer, epilogue)"]:
        if g in acc:
            print(f"{g[:24]:24s} {acc[g]['Instructions Executed']:11.0f} " + " ".join(f"{acc[g][c]:10.0f}" for c in show))
    main = samp[0] if samp else None
    if main:
        top = sorted(rs, key=lambda r: -(num(r[main]) or 0))[:40]
        print(f"\ntop instructions by {main}:")
        for r in top:
            print(f"  {num(r[main]) or 0:8.0f}  {r.get('# Address', r.get('Address', ''))}  {r[text_col][:90]}")


def report(d):
    import os
    a, b = raw(f"{d}/ours_raw.csv"), raw(f"{d}/cudnn_raw.csv")
    c = raw(f"{d}/ours2_raw.csv") if os.path.exists(f"{d}/ours2_raw.csv") else {}
    print(f"{'metric':80s} {'ours':>16s} {'cudnn':>16s}" + (f" {'ours PROBLEM2':>16s}" if c else ""))
    for k in sorted(set(a) | set(b) | set(c)):
        print(f"{k:80s} {str(a.get(k, '-'))[:16]:>16s} {str(b.get(k, '-'))[:16]:>16s}" +
              (f" {str(c.get(k, '-'))[:16]:>16s}" if c else ""))
    source_regions(f"{d}/ours_source.csv")


def tiles(path, n):
    """The consumer loop's regions per CTA tile: stall samples a thousand tiles, SASS a consumer warp (8) and tile."""
    n = float(n)
    rs = rows(path, '"Address"')
    text_col = next(c for c in rs[0] if c.strip() in ("Source", "# Source"))
    reg = classify([r[text_col] for r in rs])
    acc = collections.defaultdict(collections.Counter)
    for i, r in enumerate(rs):
        g = reg.get(i, "other").replace("(retry)", "")
        acc[g]["samples"] += num(r.get("Warp Stall Sampling (All Samples)")) or 0
        acc[g]["sass"] += num(r.get("Instructions Executed")) or 0
    print(f"{'region':12s} {'samples/k tiles':>16s} {'SASS/warp tile':>15s}")
    loop = collections.Counter()
    for g in ORDER + ["other"]:
        s, x = acc[g]["samples"] / n * 1e3, acc[g]["sass"] / n / 8
        if g != "other":
            loop["s"] += s
            loop["x"] += x
        print(f"{g:12s} {s:16.1f} {x:15.1f}")
    print(f"{'loop':12s} {loop['s']:16.1f} {loop['x']:15.1f}")


if __name__ == "__main__":
    {"list": kernel_list, "report": report, "tiles": tiles}[sys.argv[1]](*sys.argv[2:])
