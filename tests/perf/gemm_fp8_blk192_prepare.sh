#!/usr/bin/env bash
# The bundle DIR of tests/perf/gemm_fp8_blk192_device.sh, made here without a GPU: the stripped binary and its libraries,
# kernels/, the scripts, and cache.tar.xz (the NVRTC cache of every case the call compiles: the forced quick matrices,
# the odd checks, the timed rows). Usage: bash tests/perf/gemm_fp8_blk192_prepare.sh DIR [TILELAB]; then bash DIR/run.sh.
set -u
dir=$1; bin=${2:-build/tilelab}; src=$(cd "$(dirname "$0")/../.." && pwd); P=$src/tests/perf
mkdir -p "$dir" && rm -rf "$dir/kernels" && cp -r "$src/kernels" "$dir/" || exit 1
cp "$bin" /tmp/tl_fp8blk16 && strip /tmp/tl_fp8blk16 && bash "$src/cmake/bundle_for_device.sh" "$dir" /tmp/tl_fp8blk16 > /dev/null \
  && mv "$dir/tl_fp8blk16" "$dir/tilelab" || exit 1
cp "$P/device_env.sh" "$P/gemm_fp8_cublas.lua" "$dir/" && cp "$P/gemm_fp8_blk192_device.sh" "$dir/run.sh" || exit 1
C=${PREPARE_CACHE:-/tmp/tlc_fp8blk16}
mkdir -p "$C"
export TILELAB_CACHE_DIR=$C TILELAB_KERNELS_DIR=$dir/kernels TILELAB_DB=$C/tl.db LD_LIBRARY_PATH=$dir/lib
for ud in true false; do
  nice -n 5 $dir/tilelab test --kernel gemm.fp8 --config block_N=192,wgmma_N=192,uniform_desc=$ud > /tmp/fp8blk16_t$ud.txt 2>&1
  echo "test ud=$ud rc=$?: $(tail -1 /tmp/fp8blk16_t$ud.txt)"
done
R="nice -n 5 $dir/tilelab run"
GEMM_COMPILE_ONLY=1 GEMM_SETS=brow,b192,b192s4,b192nu GEMM_SHAPES=1,5,2,3 GEMM_CHECK=b192chk GEMM_CHECK_SCALING=block \
  $R "$P/gemm_fp8_cublas.lua" > /tmp/fp8blk16_c.txt 2>&1
echo "fp8 rc=$?: $(wc -l < /tmp/fp8blk16_c.txt) configs; spilling or failing:"; grep -v " 0 B spills" /tmp/fp8blk16_c.txt
rm -f "$C/tl.db"
tar cf - -C "$C" . | xz -2 > "$dir/cache.tar.xz" && du -sh "$dir"
