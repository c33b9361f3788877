#!/usr/bin/env bash
# On a GPU server: the sweep benchmark of issue 7 from a bundle (`cmake/bundle_for_device.sh DIR build/tilelab`):
# 120 gemm.wgmma points (115 valid configs) at 4096^3, cold kernel cache (target: under 2 minutes), then the same
# sweep again with a warm cache (--fresh: every point runs again; target: under 10 ms per config outside the
# kernels' own launches, which `tilelab sweep` prints as "overhead"). Usage: sweep_bench.sh DIR [JOBS]
set -euo pipefail
dir=$(cd "$1" && pwd)
export LD_LIBRARY_PATH=$dir/lib
tl=$dir/tilelab
jobs=${2:-$(nproc)}
work=$(mktemp -d)
export TILELAB_CACHE_DIR=$work/cache
space='block_M=64,128;block_N=128,256;num_stages=2,3,4;panel=1,2,4,8,16;tma_store=true,false'
args=(gemm.wgmma --problem M=4096,N=4096,K=4096 --space "$space" --jobs "$jobs" --db "$work/results.db" --plain)
echo "== cold cache ($jobs compile threads)"
TIMEFORMAT='cold sweep: %R s wall'
time "$tl" sweep "${args[@]}" | tail -12
echo "== warm cache, every point again (--fresh)"
TIMEFORMAT='warm sweep: %R s wall'
time "$tl" sweep "${args[@]}" --fresh | tail -12
echo "== rerun: everything stored, nothing runs"
"$tl" sweep "${args[@]}" | tail -4
"$tl" results --db "$work/results.db" --best tflops
