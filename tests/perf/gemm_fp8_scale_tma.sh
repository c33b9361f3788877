#!/usr/bin/env bash
# gemm.fp8's block scales by TMA (`scale_tma`, opt-in) on the device, one call from a bundle DIR (the session's
# checkout travels, so everything is in DIR): the quick matrix (the defaults), then tests/perf/gemm_fp8_cublas.lua in
# one worker: GEMM_CHECK: every scale_tma config of the lists stma, stmanr and stmachk on the block-scaled odd problems
# (float64 reference, not timed), then the rows of GEMM_SETS (default brow,stma,stmanr,stmanr,stma,brow: the
# defaults with row and block scales, scale_tma, scale_tma with a_regs=false, and back: A B C C B A) at GEMM_SHAPES
# (default 1,2,3: 8192^3, 4096^3, 4096x7168x2048), each with cuBLASLt on the same buffers (block rows: cuBLASLt's
# block scales; row rows: its row-wise scales, the target), and the summary table (medians and minima per round, ÷ the
# defaults, row-wise cuBLASLt ÷ the row). Prepare DIR here, without a GPU (fills the kernel cache of exactly the
# cases the call runs, prints any case that spills or fails to compile):
#   bash tests/perf/gemm_fp8_scale_tma.sh --prepare DIR [TILELAB]   (default build/tilelab)
# then on the device: bash DIR/gemm_fp8_scale_tma.sh (logs to $OUT: test.txt, bench.txt, gemm_fp8_cublas.json).
# Without a GPU it says so and exits 2 at once.
set -u
export GEMM_CHECK=${GEMM_CHECK-stma,stmanr,stmachk} GEMM_CHECK_SCALING=${GEMM_CHECK_SCALING-block}
export GEMM_SETS=${GEMM_SETS:-brow,stma,stmanr,stmanr,stma,brow} GEMM_SHAPES=${GEMM_SHAPES:-1,2,3} GEMM_SUMMARY=1
if [ "${1:-}" = --prepare ]; then
  dir=$2; bin=${3:-build/tilelab}; src=$(cd "$(dirname "$0")/../.." && pwd)
  mkdir -p "$dir" && rm -rf "$dir/kernels" && cp -r "$src/kernels" "$dir/" || exit 1
  bash "$src/cmake/bundle_for_device.sh" "$dir" "$bin" > /dev/null && strip "$dir/tilelab" || exit 1
  cp "$src/tests/perf/gemm_fp8_cublas.lua" "$src/tests/perf/gemm_fp8_scale_tma.sh" "$dir/" || exit 1
  cache=$(mktemp -d)
  export TILELAB_CACHE_DIR=$cache TILELAB_KERNELS_DIR=$dir/kernels TILELAB_DB=$cache/tl.db
  "$dir/tilelab" test --kernel gemm.fp8 > "$cache/test.txt" 2>&1
  echo "compile-only quick matrix rc=$?: $(grep -E 'passed, ' "$cache/test.txt")"
  GEMM_COMPILE_ONLY=1 "$dir/tilelab" run "$dir/gemm_fp8_cublas.lua" > "$cache/compile.txt" 2>&1
  echo "compile-only lua rc=$?: $(wc -l < "$cache/compile.txt") configs; spilling or failing:"
  grep -v " 0 B spills" "$cache/compile.txt"  # prints only what spills or fails
  rm -f "$cache/tl.db" "$cache/test.txt" "$cache/compile.txt"
  tar cJf "$dir/cache.tar.xz" -C "$cache" . && rm -rf "$cache" && du -sh "$dir"
  exit 0
fi
D=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-/tmp/gemm_fp8_scale_tma_out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=$D/lib FONTCONFIG_FILE=$D/fonts.conf TILELAB_CACHE_DIR=/tmp/tlc TILELAB_DB=/tmp/tl.db
export TILELAB_KERNELS_DIR=$D/kernels
if ! timeout 20 nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu \
    --format=csv,noheader 2> "$OUT/nvidia-smi.txt"; then
  echo "gemm_fp8_scale_tma: no GPU (nvidia-smi: $(head -c 200 "$OUT/nvidia-smi.txt")): nothing run" >&2
  exit 2
fi
mkdir -p /tmp/tlc && tar xJf "$D/cache.tar.xz" -C /tmp/tlc || exit 1
t0=$(date +%s)
timeout "${TEST_TIMEOUT:-40}" "$D/tilelab" test --kernel gemm.fp8 --timeout 5 > "$OUT/test.txt" 2>&1
echo "test quick rc=$? $(( $(date +%s) - t0 ))s: $(grep -E 'passed, ' "$OUT/test.txt")"
grep -E " FAIL " "$OUT/test.txt" | head -8 | cut -c1-220
t0=$(date +%s)
OUT=$OUT timeout "${LUA_TIMEOUT:-90}" "$D/tilelab" run --launch-timeout 10 --allow-write "$OUT" \
  "$D/gemm_fp8_cublas.lua" > "$OUT/bench.txt" 2>&1
echo "lua rc=$? $(( $(date +%s) - t0 ))s"
grep -E "^CHECK FAIL|^checks:| FAIL|ERROR|baseline:" "$OUT/bench.txt" | head -12 | cut -c1-220
sed -n '/^shape /,$p' "$OUT/bench.txt"
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader
