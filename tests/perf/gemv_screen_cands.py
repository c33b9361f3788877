# gemv22: the screen's candidates, compiled here (fills the NVRTC cache), refusals and duplicate builds dropped.
# Usage: python3 tests/perf/gemv_screen_cands.py build/tilelab (writes $CANDS (cands.json) for gemv_screen.lua and
# $KEYS (keys.txt): the cache keys of every build, for a bundle's cache). SET=wide (session 49, the H200): every int4
# decode M of both anchor shapes and fp4 M 16, over the launch shape (splits x prefetch x ctas_per_sm x warp_rows)
# and one switch at a time around the default; compiled two at a time.
import concurrent.futures, itertools, json, os, subprocess, sys
T = sys.argv[1] if len(sys.argv) > 1 else "build/tilelab"
A, B = "N=28672,K=8192", "N=8192,K=28672"
if os.environ.get("SET") == "wide":
  groups = {  # name: (problem, Ms, dims)
    "A": (A + ",wtype=int4,group=128", [1, 4, 8, 16], ["shape"]),
    "B": (B + ",wtype=int4,group=128", [1, 4, 8, 16], ["shape"]),
    "AF": (A + ",wtype=fp4,group=32", [16], ["shape"]),
    "BF": (B + ",wtype=fp4,group=32", [16], ["shape"]),
  }
  shape = [",".join(c) for c in itertools.product(
      ["splits=%d" % s for s in (2, 4, 8, 16, 32)], ["prefetch=%d" % p for p in (2, 4)],
      ["ctas_per_sm=%d" % c for c in (2, 3, 4)], ["warp_rows=16", "warp_rows=32"])]
  singles = ["reduce=global", "reduce=cluster", "batch=on", "batch=off", "step_loop=runtime", "step_loop=unrolled",
             "l2_prefetch=true", "stage_copy=regs", "stage_copy=async", "stage_copy=tma", "schedule=stream",
             "prefetch=3", "prefetch=4", "prefetch=6", "prefetch=1", "act_first=off", "tile_rounds=2"]
  vals = {"shape": shape + singles}
  extra = {g: [] for g in groups}
elif os.environ.get("SET") == "wide2":
  # Round 2 on the H200: the switches SET=wide found (the unrolled loop at M 1-8 where auto kept the indexed one,
  # global sums at M <= 4, fp4's 16-way split at 3 CTAs an SM) forced into every shape's rounds ("force", plus their
  # neighbours at the other Ms and at two non-anchor shapes), the launch shape screened around them at a few Ms.
  U, UG, F16 = "step_loop=unrolled", "step_loop=unrolled,reduce=global", "splits=16,ctas_per_sm=3"
  C, E = "N=14336,K=4096", "N=4096,K=14336"
  around = lambda base: [base + "," + ",".join(c) for c in itertools.product(
      ["splits=%d" % s for s in (4, 8, 16)], ["prefetch=%d" % p for p in (2, 4)],
      ["ctas_per_sm=%d" % c for c in (3, 4)], ["warp_rows=16", "warp_rows=32"])] + [
      base + "," + x for x in ("batch=off", "stage_copy=async", "l2_prefetch=true", "act_first=off", "prefetch=3")]
  groups = {  # name: (problem, Ms, candidates screened, forced)
    "A": (A + ",wtype=int4,group=128", [1], around("reduce=global"), ["reduce=global"]),
    "A_": (A + ",wtype=int4,group=128", [2, 3, 6], [], [U, UG]),
    "A4": (A + ",wtype=int4,group=128", [4], around(UG), [U, UG]),
    "A8": (A + ",wtype=int4,group=128", [8], [], ["tile_rounds=2"]),
    "B": (B + ",wtype=int4,group=128", [1, 4, 8], around(U), [U]),
    "B_": (B + ",wtype=int4,group=128", [2, 6], [], [U]),
    "C": (C + ",wtype=int4,group=128", [1, 4], [], [U, UG, "reduce=global"]),
    "E": (E + ",wtype=int4,group=128", [1, 4], [], [U, UG, "reduce=global"]),
    "BF": (B + ",wtype=fp4,group=32", [16], [], [F16]),
    "BG": (B + ",wtype=fp4,group=128", [16], around("splits=16"), [F16]),
    "AG": (A + ",wtype=fp4,group=128", [16], [], ["splits=16,ctas_per_sm=3", "ctas_per_sm=3"]),
  }
  vals, extra = None, {g: [] for g in groups}
elif os.environ.get("SET") == "wide3":
  # Round 3 on the H200, after gemvh200's autos: the M 9-16 rows (int4 M 9 / 12, fp4 at M 9-16) over the launch shape
  # and one switch at a time around their defaults (call 1 screened only M 16 of int4 and fp4 group 32).
  groups = {
    "A": (A + ",wtype=int4,group=128", [9, 12], ["shape"]),
    "B": (B + ",wtype=int4,group=128", [9, 12], ["shape"]),
    "AF": (A + ",wtype=fp4,group=32", [9, 12], ["shape"]),
    "AG": (A + ",wtype=fp4,group=128", [16], ["shape"]),
    "BG": (B + ",wtype=fp4,group=128", [12], ["shape"]),
  }
  shape = [",".join(c) for c in itertools.product(
      ["splits=%d" % s for s in (4, 8, 16, 28, 32)], ["prefetch=%d" % p for p in (2, 4)],
      ["ctas_per_sm=%d" % c for c in (2, 3, 4)])]
  singles = ["batch=on", "batch=off", "step_loop=runtime", "step_loop=unrolled", "stage_copy=async",
             "stage_copy=tma", "stage_copy=tma,act_multicast=2", "tile_rounds=1", "tile_rounds=2", "step_unroll=all",
             "step_unroll=2", "scale_copy=smem", "scale_copy=regs", "int4_lop3=on", "int4_lop3=off", "prefetch=3",
             "warp_rows=32", "l2_prefetch=true"]
  vals = {"shape": shape + singles}
  extra = {g: [] for g in groups}
else:
  groups = {
    # name: (problem, Ms, dims)
    "A8":  (A + ",wtype=int4,group=128", [8], ["sl", "sc", "b"]),
    "A16": (A + ",wtype=int4,group=128", [9, 12, 16], ["sl", "sc", "b", "scl"]),
    "B":   (B + ",wtype=int4,group=128", [9, 12, 16], ["sl", "sc", "b", "scl"]),
    "C":   (B + ",wtype=fp4,group=128", [9, 12], ["sl", "sc", "b"]),
  }
  vals = {"sl": ["step_loop=runtime", "step_loop=unrolled"],
          "sc": ["stage_copy=async", "stage_copy=tma,act_multicast=1", "stage_copy=tma,act_multicast=2"],
          "b": ["batch=on", "batch=off"], "scl": ["scale_copy=smem", "scale_copy=regs"]}
  extra = {"A8": ["step_loop=unrolled,splits=8"], "A16": ["step_loop=unrolled,splits=16"],
           "B": ["step_loop=unrolled,splits=28", "step_loop=unrolled,stage_copy=async,batch=on,scale_copy=smem,splits=28"],
           "C": ["step_loop=unrolled,splits=56"]}
def compile_(prob, cfg):
  r = subprocess.run([T, "compile", "gemm.dequant", "--problem", prob, "--config", "path=gemv" + ("," + cfg if cfg else ""),
                      "--json"], capture_output=True, text=True)
  if r.returncode != 0:
    return None, (r.stderr.strip() or r.stdout.strip())[-200:]
  return json.loads(r.stdout), None
def key(d):
  ss = [a["value"] for a in d["args"] if a["name"] == "split_steps"][0]
  return (d["name_expression"], tuple(d["launch"]["grid"]), ss)
def info(d):
  ss = [a["value"] for a in d["args"] if a["name"] == "split_steps"][0]
  r = d["resources"]
  ne = d["name_expression"]
  return "grid %s steps %d regs %d spill %d/%d smem %d %s" % (d["launch"]["grid"][:2], ss, r["registers"], r["spill_store_bytes"],
        r["spill_load_bytes"], d["launch"]["dynamic_smem"], "U" if ".unroll = 0" not in ne else "R")
out, keys = {}, set()
for g, (pb, Ms, dims, *force) in groups.items():
  force = force[0] if force else []
  for m in Ms:
    prob = "M=%d,%s" % (m, pb)
    dflt, err = compile_(prob, "")
    keys.add(dflt["cache_key"])
    seen = {key(dflt): "-"}
    print(g, "M", m, "default", info(dflt), dflt["name_expression"], flush=True)
    cands = []
    cfgs = (dims if vals is None else [",".join(c) for c in itertools.product(*[vals[x] for x in dims])]) + extra[g]
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
      built = list(pool.map(lambda c: compile_(prob, c), cfgs))
    for cfg, (d, err) in zip(cfgs, built):
      if d is None:
        print(g, m, "REFUSED", cfg, err.replace("\n", " ")[:160], flush=True); continue
      keys.add(d["cache_key"])
      k = key(d)
      if k in seen:
        print(g, m, "dup", cfg, "=", seen[k], flush=True); continue
      seen[k] = cfg
      cands.append(cfg)
      print(g, m, "cand", cfg, info(d), flush=True)
    forced = []
    for cfg, (d, err) in zip(force, [compile_(prob, c) for c in force]):
      if d is None:
        print(g, m, "REFUSED (forced)", cfg, err.replace("\n", " ")[:160], flush=True); continue
      keys.add(d["cache_key"])
      if key(d) == key(dflt):
        print(g, m, "forced = default", cfg, flush=True); continue
      forced.append(cfg)
      print(g, m, "force", cfg, info(d), flush=True)
    out["%s_M%d" % (g, m)] = {"group": g, "problem": prob, "cands": [c for c in cands if c not in forced],
                             "force": forced}
open(os.environ.get("KEYS", "keys.txt"), "w").write("\n".join(sorted(keys)) + "\n")
json.dump(out, open(os.environ.get("CANDS", "cands.json"), "w"), indent=1)
