#!/usr/bin/env bash
# Prepare the bundle DIR of tests/perf/issue21_state_device.sh here, without a GPU: the stripped binary and its
# libraries, kernels/, the scripts, and cache.tar.xz (the NVRTC cache of every case the call runs, compiled with the
# same knobs). Usage: bash tests/perf/issue21_state_prepare.sh DIR [TILELAB] (default build/tilelab); then on the
# device: bash DIR/run.sh.
set -u
dir=$1; bin=${2:-build/tilelab}; src=$(cd "$(dirname "$0")/../.." && pwd); P=$src/tests/perf
mkdir -p "$dir" && rm -rf "$dir/kernels" && cp -r "$src/kernels" "$dir/" || exit 1
cp "$bin" /tmp/tl_state21 && strip /tmp/tl_state21 && bash "$src/cmake/bundle_for_device.sh" "$dir" /tmp/tl_state21 > /dev/null \
  && mv "$dir/tl_state21" "$dir/tilelab" || exit 1
cp "$P/device_env.sh" "$P/gemm_fp8_cublas.lua" "$P/gemm_bf16.lua" "$P/gemm_grouped.lua" "$P/grouped_torch.py" \
   "$P/cuda_timing.py" "$P/gemv_rounds.lua" "$P/gemm_dequant_prefill.lua" "$dir/" || exit 1
cp "$P/issue21_state_device.sh" "$dir/run.sh" || exit 1
C=${PREPARE_CACHE:-/tmp/tlc_state21}
mkdir -p "$C"
export TILELAB_CACHE_DIR=$C TILELAB_KERNELS_DIR=$dir/kernels TILELAB_DB=$C/tl.db LD_LIBRARY_PATH=$dir/lib
R="nice -n 5 $dir/tilelab run"
GEMM_COMPILE_ONLY=1 GEMM_SETS=defaults GEMM_SHAPES=1,2,3,4,5 $R "$P/gemm_fp8_cublas.lua" > /tmp/s21_fp8.txt 2>&1
echo "fp8 rc=$?: $(wc -l < /tmp/s21_fp8.txt) configs; spilling or failing:"; grep -v " 0 B spills" /tmp/s21_fp8.txt
GEMM_COMPILE_ONLY=1 GEMM_CONFIGS= GEMM_PASSES=2 $R "$P/gemm_bf16.lua" > /tmp/s21_bf16.txt 2>&1
echo "bf16 rc=$?: $(wc -l < /tmp/s21_bf16.txt)"; grep -v " 0 B spills" /tmp/s21_bf16.txt
GEMM_COMPILE_ONLY=1 GEMM_CASES=1,5,6,7,11,12,13,17,18 $R "$P/gemm_grouped.lua" > /tmp/s21_gr.txt 2>&1
echo "grouped rc=$?: $(wc -l < /tmp/s21_gr.txt)"; grep -v " 0 B spills" /tmp/s21_gr.txt
CASES=
for nk in 28672,8192 8192,28672; do
  for m in 1 4 8 9 12 16; do CASES="$CASES$m,$nk,int4,128|auto;"; done
  CASES="${CASES}16,$nk,fp4,32|auto;16,$nk,fp4,128|auto;"
done
CASES="$CASES" $R "$P/gemv_rounds.lua" > /tmp/s21_gemv.txt 2>&1; echo "gemv rc=$?: $(tail -1 /tmp/s21_gemv.txt)"
DEQUANT_SHAPES="1024x8192x8192 4096x8192x8192 8192x8192x4096" DEQUANT_FORMATS="int4/128 fp4/32" \
  $R "$P/gemm_dequant_prefill.lua" > /tmp/s21_pf.txt 2>&1; echo "prefill rc=$?:"; grep -v " 0 B spills" /tmp/s21_pf.txt
rm -f "$C/tl.db"
tar cf - -C "$C" . | xz -2 > "$dir/cache.tar.xz" && du -sh "$dir"
