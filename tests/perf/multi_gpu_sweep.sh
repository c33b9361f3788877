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
for gpus in 0 all; do
  echo "== --gpus $gpus"
  start=$(date +%s.%N)
  "$tl" sweep "${args[@]}" --gpus "$gpus" --db "$out/gpus-$gpus.db" --json "$out/gpus-$gpus.json" > "$out/gpus-$gpus.log"
  end=$(date +%s.%N)
  grep -v '^\[' "$out/gpus-$gpus.log"
  echo "command wall: $start $end" > "$out/gpus-$gpus.wall"
done
python3 - "$out" <<'PY'
import json, sys
out = sys.argv[1]
runs = {}
for g in ("0", "all"):
    s = json.load(open(f"{out}/gpus-{g}.json"))
    start, end = map(float, open(f"{out}/gpus-{g}.wall").read().split()[2:4])
    passed = sorted((p for p in s["points"] if p["status"] == "passed"), key=lambda p: -p["tflops"])
    runs[g] = (s, end - start, passed)
    per_gpu = ", ".join(f"GPU {x['index']} ran {x['ran']} ({x['restarts']} restarts)" for x in s["gpus"])
    print(f"--gpus {g}: sweep wall {s['wall_s']:.2f} s, command {end - start:.2f} s; {s['ran']} ran, {s['passed']} "
          f"passed, {s['compiled']} compiled ({s['compile_cache_hits']} from cache); {per_gpu}")
    for p in passed[:5]:
        c = p["config"]
        print(f"   {p['tflops']:7.1f} TFLOP/s  GPU {p['gpu']}  " + ",".join(f"{k}={c[k]}" for k in sorted(c)))
one, two = runs["0"], runs["all"]
print(f"speedup: sweep wall {one[0]['wall_s'] / two[0]['wall_s']:.2f}x, command {one[1] / two[1]:.2f}x")
print("same best config:", one[2][0]["config"] == two[2][0]["config"])
PY
