#!/usr/bin/env bash
# gemm.fp8 beside cuBLASLt at issue 21's anchors, one device call from a bundle DIR (the session's checkout travels,
# so everything is in DIR): optionally the quick matrix with FORCE's config (e.g. FORCE=panel=4), then
# tests/perf/gemm_fp8_cublas.lua in one worker over GEMM_SETS (default defaults,tailb,tailb,defaults: A B B A) at
# GEMM_SHAPES (default the five anchors), each row cuBLASLt's matching mode on the same buffers (and the summary's
# block rows ÷ row-wise cuBLASLt), then a table of every row: median and minimum ms, cuBLASLt's, and their ratios.
# Prepare DIR here, without a GPU (fills the NVRTC cache of exactly the cases the call runs, prints what spills):
#   GEMM_SETS=... [FORCE=...] bash tests/perf/gemm_fp8_state.sh --prepare DIR [TILELAB]   (default build/tilelab)
# then on the device: GEMM_SETS=... [FORCE=...] bash DIR/gemm_fp8_state.sh (logs to $OUT).
set -u
export GEMM_SETS=${GEMM_SETS:-defaults,tailb,tailb,defaults} GEMM_SHAPES=${GEMM_SHAPES:-1,2,3,4,5} GEMM_SUMMARY=1
FORCE=${FORCE:-}
if [ "${1:-}" = --prepare ]; then
  dir=$2; bin=${3:-build/tilelab}; src=$(cd "$(dirname "$0")/../.." && pwd)
  mkdir -p "$dir" && rm -rf "$dir/kernels" && cp -r "$src/kernels" "$dir/" || exit 1
  bash "$src/cmake/bundle_for_device.sh" "$dir" "$bin" > /dev/null && strip "$dir/tilelab" || exit 1
  cp "$src/tests/perf/gemm_fp8_cublas.lua" "$src/tests/perf/gemm_fp8_cublas_table.py" "$src/tests/perf/gemm_fp8_state.sh" "$dir/" || exit 1
  cache=$(mktemp -d)
  export TILELAB_CACHE_DIR=$cache TILELAB_KERNELS_DIR=$dir/kernels TILELAB_DB=$cache/tl.db LD_LIBRARY_PATH=$dir/lib
  if [ -n "$FORCE" ]; then
    "$dir/tilelab" test --kernel gemm.fp8 --config "$FORCE" > "$cache/test.txt" 2>&1
    echo "compile-only quick matrix $FORCE rc=$?: $(grep -E 'passed, ' "$cache/test.txt")"
  fi
  GEMM_COMPILE_ONLY=1 "$dir/tilelab" run "$dir/gemm_fp8_cublas.lua" > "$cache/compile.txt" 2>&1
  echo "compile-only lua rc=$?: $(wc -l < "$cache/compile.txt") configs; spilling or failing:"
  grep -v " 0 B spills" "$cache/compile.txt"
  rm -f "$cache/tl.db" "$cache/test.txt" "$cache/compile.txt"
  tar cJf "$dir/cache.tar.xz" -C "$cache" . && rm -rf "$cache" && du -sh "$dir"
  exit 0
fi
D=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-/tmp/gemm_fp8_state_out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=$D/lib FONTCONFIG_FILE=$D/fonts.conf TILELAB_CACHE_DIR=/tmp/tlc TILELAB_DB=/tmp/tl.db
export TILELAB_KERNELS_DIR=$D/kernels
T=$D/tilelab
if ! timeout 20 nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu \
    --format=csv,noheader 2> "$OUT/nvidia-smi.txt"; then
  echo "gemm_fp8_state: no GPU (nvidia-smi: $(head -c 200 "$OUT/nvidia-smi.txt")): nothing run" >&2
  exit 2
fi
mkdir -p /tmp/tlc && tar xJf "$D/cache.tar.xz" -C /tmp/tlc || exit 1
if [ -n "$FORCE" ]; then
  t0=$(date +%s)
  timeout "${TEST_TIMEOUT:-40}" "$T" test --kernel gemm.fp8 --config "$FORCE" --timeout 5 > "$OUT/test.txt" 2>&1
  echo "test quick --config $FORCE rc=$? $(( $(date +%s) - t0 ))s: $(grep -E 'passed, ' "$OUT/test.txt")"
  grep -E " FAIL " "$OUT/test.txt" | head -8 | cut -c1-220
fi
t0=$(date +%s)
OUT=$OUT timeout "${LUA_TIMEOUT:-150}" "$T" run --launch-timeout 10 --allow-write "$OUT" "$D/gemm_fp8_cublas.lua" \
  > "$OUT/bench.txt" 2>&1
echo "lua rc=$? $(( $(date +%s) - t0 ))s"
grep -E "FAIL|ERROR|baseline:" "$OUT/bench.txt" | head -8 | cut -c1-200
python3 "$D/gemm_fp8_cublas_table.py" "$OUT/gemm_fp8_cublas.json"
sed -n '/^shape /,$p' "$OUT/bench.txt"
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader
