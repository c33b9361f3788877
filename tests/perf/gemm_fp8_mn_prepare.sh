#!/usr/bin/env bash
# The bundle DIR of tests/perf/gemm_fp8_mn_device.sh, made here without a GPU: the stripped binary and its libraries,
# kernels/ and the DIAG copies (gemm_fp8_scale_diag.sh --kernels: A, B, AB), the scripts, and cache.tar.xz (the NVRTC
# cache of every case the call compiles). Usage: bash tests/perf/gemm_fp8_mn_prepare.sh DIR [TILELAB]; then bash
# DIR/run.sh.
set -u
dir=$1; bin=${2:-build/tilelab}; src=$(cd "$(dirname "$0")/../.." && pwd); P=$src/tests/perf
mkdir -p "$dir" && rm -rf "$dir/kernels" "$dir/diag" && cp -r "$src/kernels" "$dir/" || exit 1
bash "$P/gemm_fp8_scale_diag.sh" --kernels "$dir" "A B AB" || exit 1
cp "$bin" /tmp/tl_fp8blk17 && strip /tmp/tl_fp8blk17 && bash "$src/cmake/bundle_for_device.sh" "$dir" /tmp/tl_fp8blk17 > /dev/null \
  && mv "$dir/tl_fp8blk17" "$dir/tilelab" || exit 1
cp "$P/device_env.sh" "$P/gemm_fp8_cublas.lua" "$P/gemm_fp8_scale_diag.lua" "$dir/" && cp "$P/gemm_fp8_mn_device.sh" "$dir/run.sh" || exit 1
C=${PREPARE_CACHE:-/tmp/tlc_fp8blk17}
mkdir -p "$C"
export TILELAB_CACHE_DIR=$C TILELAB_KERNELS_DIR=$dir/kernels TILELAB_DB=$C/tl.db LD_LIBRARY_PATH=$dir/lib
nice -n 5 $dir/tilelab test --kernel gemm.fp8 > /tmp/fp8blk17_t.txt 2>&1
echo "test rc=$?: $(tail -1 /tmp/fp8blk17_t.txt)"
R="nice -n 5 $dir/tilelab run"
Q=1x130x400,1x130x2048,1x7200x400,1x7200x2048,65x130x400,65x130x2048,65x7200x400,65x7200x2048,200x130x400
Q=$Q,200x130x2048,200x7200x400,200x7200x2048,257x130x400,257x130x2048,257x7200x400,257x7200x2048
GEMM_COMPILE_ONLY=1 GEMM_SETS= GEMM_CHECK=mnodd GEMM_CHECK_SCALING=block GEMM_CHECK_PROBLEMS=$Q \
  $R "$P/gemm_fp8_cublas.lua" > /tmp/fp8blk17_c1.txt 2>&1
echo "odd rc=$?: $(wc -l < /tmp/fp8blk17_c1.txt) configs"; grep -v " 0 B spills" /tmp/fp8blk17_c1.txt
GEMM_COMPILE_ONLY=1 GEMM_SETS=brow,bmn GEMM_SHAPES=1,5,2,3,4 GEMM_CHECK=mnchk GEMM_CHECK_SCALING=block \
  $R "$P/gemm_fp8_cublas.lua" > /tmp/fp8blk17_c2.txt 2>&1
echo "timed + mnchk rc=$?: $(wc -l < /tmp/fp8blk17_c2.txt) configs"; grep -v " 0 B spills" /tmp/fp8blk17_c2.txt
for tag in ref A B AB; do
  kd=$dir/kernels; [ $tag = ref ] || kd=$dir/diag/k$tag
  TAG=$tag ROW=1 MN=1 DIAG_SHAPES=1 TILELAB_KERNELS_DIR=$kd GEMM_COMPILE_ONLY=1 $R "$P/gemm_fp8_scale_diag.lua"
done
rm -f "$C/tl.db"
tar cf - -C "$C" . | xz -2 > "$dir/cache.tar.xz" && du -sh "$dir"
