#!/usr/bin/env bash
# gemm.fp8 beside cuBLASLt, one device call from a bundle DIR (the session's checkout travels, so everything is in
# DIR): the quick matrix (or TESTARGS=--full), then tests/perf/gemm_fp8_cublas.lua in one worker with GEMM_SETS /
# GEMM_SHAPES / GEMM_CHECK / GEMM_ROUNDS passed through (its CHECK lines and its table), then the region statistics
# of each TIMELINES entry's recorded timeline (PROBLEM at the defaults, or PROBLEM@CONFIG). Prepare DIR here,
# without a GPU:
#   cmake/bundle_for_device.sh DIR <stripped tilelab>; cp -r kernels tests/perf/{gemm_fp8_cublas.lua,gemm_fp8_sets_device.sh} DIR
#   TILELAB_CACHE_DIR=C tilelab test --kernel gemm.fp8 [--full]; TILELAB_CACHE_DIR=C GEMM_COMPILE_ONLY=1 GEMM_SETS=.. tilelab run
#   tests/perf/gemm_fp8_cublas.lua; tar cJf DIR/cache.tar.xz -C C .
# then on the device: bash DIR/gemm_fp8_sets_device.sh.
D=$(cd "$(dirname "$0")" && pwd)
export LD_LIBRARY_PATH=$D/lib FONTCONFIG_FILE=$D/fonts.conf TILELAB_CACHE_DIR=/tmp/tlc TILELAB_KERNELS_DIR=$D/kernels
export TILELAB_DB=/tmp/tl.db
mkdir -p /tmp/tlc && tar xJf "$D/cache.tar.xz" -C /tmp/tlc
T=$D/tilelab
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv,noheader
t0=$(date +%s)
timeout "${TEST_TIMEOUT:-150}" "$T" test --kernel gemm.fp8 --timeout 5 ${TESTARGS:-} > "$OUT/test.txt" 2>&1
echo "test ${TESTARGS:-quick} rc=$? $(( $(date +%s) - t0 ))s: $(grep -E 'passed, ' "$OUT/test.txt")"
grep -E " FAIL " "$OUT/test.txt" | head -8 | cut -c1-220
if [ "${BENCH:-1}" = 1 ]; then
  t0=$(date +%s)
  OUT=$OUT timeout "${LUA_TIMEOUT:-240}" "$T" run --launch-timeout 10 --allow-write "$OUT" "$D/gemm_fp8_cublas.lua" \
    > "$OUT/bench.txt" 2>&1
  echo "lua rc=$? $(( $(date +%s) - t0 ))s"
  cut -c1-150 "$OUT/bench.txt"
fi
for e in ${TIMELINES:-}; do
  p=${e%%@*}; c=; [ "$p" != "$e" ] && c=${e#*@}  # PROBLEM or PROBLEM@CONFIG
  timeout 60 "$T" timeline gemm.fp8 --problem "$p" --config "$c" --out "$OUT/timeline.json" --stats \
    > "$OUT/timeline.txt" 2>&1
  echo "== timeline $e rc=$?"; grep -vE "^ *$" "$OUT/timeline.txt" | head -16 | cut -c1-120
done
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader
