#!/usr/bin/env bash
# On a server with two or more GPUs: issue 24's multi-GPU sweep from a bundle (`cmake/bundle_for_device.sh DIR
# build/tilelab`): a 240-point gemm.wgmma sweep at 8192^3 (220 valid configs) on GPU 0, then on every GPU, each into
# a store of its own. An untimed pass first compiles every point (and runs it once, --repeat 0), so both timed runs
# find each kernel in the cache and compare what the GPUs do. Prints each run's wall time, the speedup, the points
# each GPU ran and the best configs of both. Usage: multi_gpu_sweep.sh DIR [JOBS] [OUTDIR]
set -euo pipefail
dir=$(cd "$1" && pwd)
export LD_LIBRARY_PATH=$dir/lib
tl=$dir/tilelab
jobs=${2:-$(nproc)}
out=${3:-$(mktemp -d)}
mkdir -p "$out"
export TILELAB_CACHE_DIR=$out/cache
space='block_M=64,128;block_N=128,256;num_stages=2,3,4;panel=1,2,4,8,16;raster=m,n;cluster_M=1,2'
args=(gemm.wgmma --problem M=8192,N=8192,K=8192 --space "$space" --jobs "$jobs" --plain)
echo "== untimed: compile every point (each runs once, --repeat 0)"
"$tl" sweep "${args[@]}" --gpus all --repeat 0 --no-store | grep -v '^\['
# RUNS: the --gpus of each timed run, in order (repeat them to see how much a best config moves between runs).
runs=(${RUNS:-0 all})
for i in "${!runs[@]}"; do
  gpus=${runs[$i]}
  echo "== run $i: --gpus $gpus"
  start=$(date +%s.%N)
  "$tl" sweep "${args[@]}" --gpus "$gpus" --db "$out/run$i.db" --json "$out/run$i.json" > "$out/run$i.log"
  end=$(date +%s.%N)
  grep -v '^\[' "$out/run$i.log"
  echo "$gpus $start $end" > "$out/run$i.wall"
done
python3 - "$out" "${#runs[@]}" <<'PY'
import json, sys
out, n = sys.argv[1], int(sys.argv[2])
walls, bests = {}, []
for i in range(n):
    s = json.load(open(f"{out}/run{i}.json"))
    gpus, start, end = open(f"{out}/run{i}.wall").read().split()
    start, end = float(start), float(end)
    passed = sorted((p for p in s["points"] if p["status"] == "passed"), key=lambda p: -p["tflops"])
    walls.setdefault(gpus, []).append((s["wall_s"], end - start))
    per_gpu = ", ".join(f"GPU {x['index']} ran {x['ran']} ({x['restarts']} restarts)" for x in s["gpus"])
    print(f"run {i} --gpus {gpus}: sweep wall {s['wall_s']:.2f} s, command {end - start:.2f} s; {s['ran']} ran, "
          f"{s['passed']} passed, {s['compiled']} compiled ({s['compile_cache_hits']} from cache); {per_gpu}")
    for p in passed[:3]:
        c = p["config"]
        print(f"   {p['tflops']:7.1f} TFLOP/s  GPU {p['gpu']}  " + ",".join(f"{k}={c[k]}" for k in sorted(c)))
    bests.append(passed[0]["config"])
if "0" in walls and "all" in walls:
    mean = lambda xs, j: sum(x[j] for x in xs) / len(xs)
    print(f"speedup (means): sweep wall {mean(walls['0'], 0) / mean(walls['all'], 0):.2f}x, command "
          f"{mean(walls['0'], 1) / mean(walls['all'], 1):.2f}x")
print("same best config in every run:", all(b == bests[0] for b in bests))
PY
