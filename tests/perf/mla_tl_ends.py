# Summarizes an mla.decode timeline (Chrome trace from `tilelab timeline --out F.json`): kernel span, per block the
# end time, the first KV wait's end (pipeline fill) and its last `combine` (the part's final epilogue), and the ten
# blocks that end last. Usage: python3 mla_tl_ends.py TRACE.json
import json, sys, statistics as st
ev = json.load(open(sys.argv[1]))
ev = ev["traceEvents"] if isinstance(ev, dict) else ev
blocks = {}
for e in ev:
    if e.get("ph") != "X" or "ts" not in e:
        continue
    a = e.get("args", {})
    b = blocks.setdefault((e.get("pid"), a.get("block", 0)), {"t0": 1e30, "t1": 0, "comb": [], "kv0": None})
    t0, t1 = e["ts"], e["ts"] + e.get("dur", 0)
    b["t0"] = min(b["t0"], t0); b["t1"] = max(b["t1"], t1)
    if e.get("name") == "combine":
        b["comb"].append((t0, t1 - t0))
    if e.get("name") == "wait_kv" and (b["kv0"] is None or t1 < b["kv0"]):
        b["kv0"] = t1
g0 = min(b["t0"] for b in blocks.values())
ends = sorted(((b["t1"] - g0, k, b) for k, b in blocks.items()), key=lambda x: x[0])
print(f"blocks {len(blocks)}, span {ends[-1][0]:.1f} us, block ends: median {st.median([x[0] for x in ends]):.1f}, "
      f"p10 {ends[len(ends)//10][0]:.1f}, min {ends[0][0]:.1f}; block starts max {max(b['t0'] for b in blocks.values()) - g0:.1f} us")
fill = [b["kv0"] - b["t0"] for b in blocks.values() if b["kv0"]]
print(f"first KV block ready after block start: median {st.median(fill):.1f} us, max {max(fill):.1f}")
lastc = [sorted(b["comb"])[-1][1] for b in blocks.values() if b["comb"]]
allc = [d for b in blocks.values() for (_, d) in b["comb"]]
print(f"last combine of a block: median {st.median(lastc):.1f} us, max {max(lastc):.1f}; all combines sum per block "
      f"median {st.median([sum(d for _, d in b['comb']) for b in blocks.values()]):.1f} us")
print("last ten blocks: end us | last combine us | combines (start us: dur)")
for t, k, b in ends[-10:]:
    cs = " ".join(f"{c0 - g0:.0f}:{d:.1f}" for c0, d in sorted(b["comb"]))
    print(f"  {t:7.1f} | {sorted(b['comb'])[-1][1] if b['comb'] else 0:5.1f} | {cs}")
