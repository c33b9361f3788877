#!/usr/bin/env python3
"""Reads an ncu source export (`ncu -i R.ncu-rep --page source --print-source sass --csv`) against the nvdisasm listing
of the same cubin: warp-stall samples and executed instructions by warp role (SASS address ranges) and by region.
mla_dense_ncu_device.sh's reading of mla.decode beside FlashMLA's dense decode (docs/perf.md, mladec11).

  roles SOURCE.CSV LISTING.SASS NAME:START-END,...         per role: samples, share, instructions, top stall reasons
  segments SOURCE.CSV LISTING.SASS ROLES ROLE NAME:START-END ...   a role's regions: share of its samples, reasons
  top SOURCE.CSV LISTING.SASS ROLES ROLE [N]                 a role's N most-sampled instructions

Offsets are hex, from the kernel's first instruction. Code after the last range (ptxas's out-of-line spin loops) goes
to the role its closing branch returns into. LISTING: `nvdisasm -c cubin` (ours: `tilelab compile ... --cubin`).
"""
import collections
import csv
import re
import sys


def parse_ranges(spec):
    out = []
    for item in spec.split(","):
        name, span = item.split(":")
        a, b = span.split("-")
        out.append((name, int(a, 16), int(b, 16)))
    return out


def listing(path):
    """[(offset, text)] and {label: index} of an nvdisasm listing."""
    ins, labels = [], {}
    for line in open(path):
        m = re.match(r"^\s*/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;", line)
        if m:
            ins.append((int(m.group(1), 16), m.group(2).strip()))
            continue
        m = re.match(r"^(\.L_x_\d+):", line)
        if m:
            labels[m.group(1)] = len(ins)
    return ins, labels


def roles_of(ranges, ins, labels):
    """offset -> role: the ranges, then each out-of-line chunk after them by its unconditional branch's target."""
    def inside(off):
        return next((n for n, a, b in ranges if a <= off < b), None)
    role = {off: inside(off) or "other" for off, _ in ins}
    last = max(b for _, _, b in ranges)
    chunk = []
    for off, text in ins:
        if off < last:
            continue
        chunk.append(off)
        m = re.search(r"BRA\s+`\((\.L_x_\d+)\)", text)
        if m and not text.startswith("@"):
            t = labels.get(m.group(1))
            r = inside(ins[t][0]) if t is not None and t < len(ins) else None
            for o in chunk:
                role[o] = r or "other"
            chunk = []
    for o in chunk:
        role[o] = "other"
    return role


def samples(csv_path):
    """[(offset, source, samples, executed, {stall: samples})] of the source export."""
    with open(csv_path, errors="replace") as f:
        lines = [ln for ln in f if ln.startswith('"')]
    start = next(i for i, ln in enumerate(lines) if ln.startswith('"Address"'))
    rows = list(csv.DictReader(lines[start:]))
    rows = [r for r in rows if r["Address"].startswith("0x")]
    base = int(rows[0]["Address"], 16)
    stalls = [k for k in rows[0] if k.startswith("stall_") and "(Not" not in k]
    n = lambda x: int(x or 0)
    return [(int(r["Address"], 16) - base, r["Source"].strip(), n(r["Warp Stall Sampling (All Samples)"]),
             n(r["Instructions Executed"]), {s[6:]: n(r[s]) for s in stalls}) for r in rows]


def reasons(counter, total, k=6):
    return ", ".join(f"{s} {100 * v / max(total, 1):.0f}%" for s, v in counter.most_common(k) if v)


def main(argv):
    cmd, src, sass = argv[1], argv[2], argv[3]
    ins, labels = listing(sass)
    data = samples(src)
    if cmd == "roles":
        role = roles_of(parse_ranges(argv[4]), ins, labels)
        agg = collections.defaultdict(collections.Counter)
        for off, _, s, e, st in data:
            a = agg[role.get(off, "other")]
            a["#samples"] += s
            a["#inst"] += e
            a.update(st)
        total = sum(a["#samples"] for a in agg.values())
        for r, a in agg.items():
            st = collections.Counter({k: v for k, v in a.items() if not k.startswith("#")})
            print(f"{r:10s} samples {a['#samples']:8d} ({100 * a['#samples'] / max(total, 1):5.1f}%)  instructions "
                  f"{a['#inst']:11d} | {reasons(st, a['#samples'], 7)}")
        return 0
    role = roles_of(parse_ranges(argv[4]), ins, labels)
    who = argv[5]
    mine = [d for d in data if role.get(d[0]) == who]
    total = sum(d[2] for d in mine)
    if cmd == "segments":
        for spec in argv[6:]:
            name, a, b = parse_ranges(spec)[0]
            part = [d for d in mine if a <= d[0] < b]
            st = collections.Counter()
            for d in part:
                st.update(d[4])
            s = sum(d[2] for d in part)
            print(f"{name:12s} {100 * s / max(total, 1):5.1f}% of {who}, {len(part):4d} instructions, executed "
                  f"{sum(d[3] for d in part):11d}: {reasons(st, s)}")
    elif cmd == "top":
        for off, text, s, e, st in sorted(mine, key=lambda d: -d[2])[:int(argv[6]) if len(argv) > 6 else 25]:
            print(f"{off:#07x} {100 * s / max(total, 1):5.1f}% executed {e:9d}  {text[:60]:60s} "
                  f"{reasons(collections.Counter(st), s, 3)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
