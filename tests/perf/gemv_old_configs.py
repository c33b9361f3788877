# For each problem (stdin: NAME|PROBLEM per line): the explicit config that makes this build (NEW) compile the default
# kernel of an older build (OLD, a bundle's stripped tilelab with its lib/) — name, grid and split — so the two defaults
# can be timed in one process; writes $CANDS (gemv_screen.lua's cands.json, each shape's old config as its "force").
# Usage: OLD=.dev/X/tilelab python3 tests/perf/gemv_old_configs.py < probs.txt (session 49, gemvh200).
import itertools, json, os, subprocess, sys
OLD, NEW = os.environ["OLD"], os.environ.get("NEW", "build/tilelab")
env_old = dict(os.environ, LD_LIBRARY_PATH=os.path.join(os.path.dirname(OLD), "lib"))
def key(T, prob, cfg, env=None):
    r = subprocess.run([T, "compile", "gemm.dequant", "--problem", prob, "--config", "path=gemv" + ("," + cfg if cfg else ""), "--json"],
                       capture_output=True, text=True, env=env)
    if r.returncode: return None
    d = json.loads(r.stdout)
    ss = [a["value"] for a in d["args"] if a["name"] == "split_steps"][0]
    return (d["name_expression"], tuple(d["launch"]["grid"]), ss, d["cache_key"] if T == NEW else None)
out = {}
for name, prob in [l.split("|") for l in sys.stdin.read().split()]:
    o = key(OLD, prob, "", env_old); n = key(NEW, prob, "")
    if o[:3] == n[:3]: print(name, "unchanged"); continue
    found = None
    for sl, rd, sc, cps in itertools.product(["", "step_loop=runtime"], ["", "reduce=cluster"], ["", "stage_copy=regs"], ["", "ctas_per_sm=4"]):
        cfg = ",".join(x for x in (sl, rd, sc, cps) if x)
        k = key(NEW, prob, cfg)
        if k and k[:3] == o[:3]: found = cfg; break
    print(name, prob, "old =", found, flush=True)
    if found: out[name] = {"group": name, "problem": prob, "cands": [], "force": [found]}
json.dump(out, open(os.environ.get("CANDS", "cands.json"), "w"), indent=1)
