#!/usr/bin/env python3
"""Reads gemm_bf16_ncu_device.sh's ncu CSV exports (one report per shape, our gemm.wgmma and cuBLAS's kernel in it):
each kernel's key counters side by side, and per kernel the warp-stall samples of its SASS summed over the whole kernel
and over its main loop (the instructions from the first HGMMA to the last backward branch after it), and the
instructions with the most samples.

  report RAW.CSV SOURCE.CSV
"""
import collections
import csv
import re
import sys


def num(x):
    try:
        return float(str(x).replace(",", ""))
    except ValueError:
        return None


RAW = [
    r"^gpu__time_duration\.sum$", r"^sm__cycles_elapsed\.avg\.per_second$", r"^smsp__cycles_active\.avg$",
    r"^gpc__cycles_elapsed\.max$", r"^sm__throughput\.avg\.pct_of_peak_sustained_elapsed$",
    r"^launch__(grid_size|block_size|registers_per_thread|shared_mem_per_block_dynamic|shared_mem_per_block_static|cluster_dim_[xyz])$",
    r"tensor.*pct_of_peak_sustained_(active|elapsed)$", r"gmma.*pct_of_peak_sustained_(active|elapsed)$",
    r"^smsp__issue_active\.avg\.pct_of_peak_sustained_active$", r"^smsp__inst_executed\.sum$",
    r"^l1tex__data_pipe_lsu_wavefronts_mem_shared.*\.sum$", r"^l1tex__data_bank_conflicts_pipe_lsu_mem_shared.*\.sum$",
    r"shared.*pct_of_peak_sustained_elapsed$", r"^lts__t_sector_hit_rate\.pct$", r"^lts__t_bytes\.sum$",
    r"^lts__throughput\.avg\.pct_of_peak_sustained_elapsed$", r"^dram__bytes_(read|write)\.sum$",
    r"^dram__throughput\.avg\.pct_of_peak_sustained_elapsed$",
    r"^smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio$",
]


def csv_rows(lines):
    return list(csv.DictReader([ln for ln in lines if ln.startswith('"')]))


def raw(path):
    with open(path, errors="replace") as f:
        rs = csv_rows(f)
    out = []
    for r in rs:
        if not str(r.get("ID", "")).strip().isdigit():
            continue  # the units row
        m = {"name": r.get("Kernel Name", "?")[:100]}
        for k, v in r.items():
            if k and any(re.search(p, k) for p in RAW):
                m[k] = v
        out.append(m)
    return out


def sources(path):
    """The source page holds one table per kernel, each after a line naming the kernel."""
    with open(path, errors="replace") as f:
        lines = f.readlines()
    tables, cur, name = [], None, "?"
    for ln in lines:
        if ln.startswith('"Kernel Name"'):
            cur, name = None, ln.strip().split(",", 1)[-1].strip('"')[:100]
        elif ln.startswith('"Address"') or ln.startswith('"# Address"'):
            cur = [ln]
            tables.append((name, cur))
        elif cur is not None and ln.startswith('"'):
            cur.append(ln)
        else:
            cur = None
            if ln.strip():
                name = ln.strip()[:100]
    return [(n, list(csv.DictReader(t))) for n, t in tables]


def stalls(name, rs):
    if not rs:
        return
    cols = list(rs[0].keys())
    text = next((c for c in cols if c.strip() in ("Source", "# Source")), cols[1])
    samp = [c for c in cols if "Sampling" in c]
    print(f"\n== {name}\ncolumns: {', '.join(cols)[:600]}")
    first = next((i for i, r in enumerate(rs) if "HGMMA" in r[text]), 0)
    last = max((i for i, r in enumerate(rs) if i > first and re.search(r"\bBRA\b", r[text])), default=len(rs) - 1)
    for c in samp:
        tot = sum(num(r[c]) or 0 for r in rs) or 1
        loop = sum(num(r[c]) or 0 for r in rs[first:last + 1])
        print(f"{c}: total {tot:.0f}, instructions {first}..{last} (first HGMMA to last branch): {loop:.0f} ({100 * loop / tot:.1f}%)")
    reason_cols = [c for c in cols if c not in samp and c != text and any(num(r[c]) for r in rs[:2000])]
    main = samp[0] if samp else None
    # Samples by kind of instruction, with each kind's largest stall reasons.
    groups = collections.defaultdict(collections.Counter)
    reasons = [c for c in cols if c.startswith("stall_") and "Not Issued" not in c]
    for r in rs:
        s = r[text]
        g = ("HGMMA" if "HGMMA" in s else "wgmma wait (DEPBAR)" if "DEPBAR" in s else
             "barrier-wait loops (BRA, PHASECHK, NANOSLEEP)" if re.search(r"\bBRA\b|PHASECHK|NANOSLEEP", s) else
             "epilogue (STS, STSM, F2FP)" if re.search(r"STS|F2FP", s) else "other")
        groups[g]["all"] += (num(r[main]) or 0) if main else 0
        for c in reasons:
            groups[g][c] += num(r[c]) or 0
    total = sum(groups[g]["all"] for g in groups) or 1
    for g in sorted(groups, key=lambda g: -groups[g]["all"]):
        top = sorted(((v, c) for c, v in groups[g].items() if c != "all"), reverse=True)[:4]
        print(f"  {g:48s} {groups[g]['all']:8.0f} {100 * groups[g]['all'] / total:5.1f}%  " +
              ", ".join(f"{c[6:]} {v:.0f}" for v, c in top))
    if main:
        top = sorted(range(len(rs)), key=lambda i: -(num(rs[i][main]) or 0))[:30]
        print(f"top instructions by {main} (index, samples, text):")
        for i in top:
            print(f"  {i:5d} {num(rs[i][main]) or 0:8.0f}  {rs[i][text][:100]}")
    print("other numeric columns:", ", ".join(reason_cols)[:800])


def report(raw_path, source_path):
    ks = raw(raw_path)
    keys = sorted({k for m in ks for k in m if k != "name"})
    for i, m in enumerate(ks):
        print(f"kernel {i}: {m['name']}")
    for k in keys:
        print(f"{k:78s} " + " ".join(f"{str(m.get(k, '-'))[:16]:>16s}" for m in ks))
    for n, rs in sources(source_path):
        stalls(n, rs)


if __name__ == "__main__":
    report(sys.argv[2], sys.argv[3])
