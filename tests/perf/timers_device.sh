#!/usr/bin/env bash
# bench --timer on the H100: the GPU tests of the timers, then a 1 MiB copy, mla.decode at b = 1 and a 256^3
# gemm.wgmma benched with each timer (events, cupti, graph), then the same benches under Nsight Compute
# (gpu__time_duration.sum of each launch of the kernel, clocks left alone, caches flushed as ncu does by default);
# and with ncu's cache flush off; prints the comparison table. Usage: timers_device.sh DIR [OUT] (DIR: a bundle of tilelab, test_bench_gpu and
# test_launch_gpu from cmake/bundle_for_device.sh, with this script and timers_table.py copied into it).
set -uo pipefail
dir=$(cd "$1" && pwd)
out=${2:-/tmp/timers_out}
mkdir -p "$out"
export LD_LIBRARY_PATH=$dir/lib TILELAB_CACHE_DIR=$dir/cache TILELAB_EXE=$dir/tilelab CUDA_VISIBLE_DEVICES=0
T=$dir/tilelab
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
for t in test_launch_gpu test_bench_gpu; do
  filter='*'
  [ $t = test_bench_gpu ] && filter='*Timer*:*WgmmaVsCublas*'
  timeout 120 "$dir/$t" --gtest_filter="$filter" > "$out/$t.log" 2>&1
  echo "$t: exit $? $(grep -E '^\[  (PASSED|FAILED) |^copy 1 MiB' "$out/$t.log" | tr '\n' ' ')"
  grep -E '^\[  FAILED  \]|Failure|Expected|Which is|actual' "$out/$t.log" | head -12
done
declare -A problem=([copy]="n=262144,dtype=f32" [mla.decode]="batch=1,seq_q=1,heads=64,seq_k=4096"
                    [gemm.wgmma]="M=256,N=256,K=256")
declare -A fn=([copy]=copy [mla.decode]=mla_decode [gemm.wgmma]=gemm_wgmma)
for k in copy mla.decode gemm.wgmma; do
  for timer in events cupti graph; do
    $T bench $k --problem "${problem[$k]}" --timer $timer --repeat 200 --warmup 20 --no-store \
      --json "$out/$k.$timer.json" > "$out/$k.$timer.log" 2>&1 || { echo "bench $k --timer $timer: exit $?"; tail -3 "$out/$k.$timer.log"; }
  done
  grep -h '^timer:' "$out/$k.graph.log"
done
# The graph timer on the alternated kernel / probe-build runs, and cuBLAS captured into graphs.
$T bench gemm.wgmma --problem M=256,N=256,K=256 --timer graph --timeline --vs cublas --repeat 20 --no-store 2>&1 | tail -6
for cache in all none; do  # ncu's default flushes every cache before each profiled kernel; none: as they are
  for k in copy mla.decode gemm.wgmma; do
    timeout 120 ncu --target-processes all --clock-control none --cache-control $cache --metrics gpu__time_duration.sum \
      -k "regex:${fn[$k]}" --csv --print-units base $T bench $k --problem "${problem[$k]}" --repeat 50 --warmup 5 \
      --no-store > "$out/$k.ncu.$cache.csv" 2> "$out/$k.ncu.$cache.err"
    echo "ncu --cache-control $cache $k: exit $? ($(grep -c gpu__time_duration "$out/$k.ncu.$cache.csv") launches profiled)"
  done
done
python3 "$dir/timers_table.py" "$out" | tee "$out/table.md"
