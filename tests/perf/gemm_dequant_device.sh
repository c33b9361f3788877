#!/usr/bin/env bash
# gemm.dequant on a Hopper GPU, one device run: the quick correctness matrix, the measured HBM ceiling, the timings of
# samples/dequant_gemm.lua (decode shapes against HBM, prefill against bf16 gemm.wgmma in the same worker), then the
# --full matrix.
# A self-contained bundle DIR (the device runs the session's checkout, so everything travels in DIR):
#   cmake/bundle_for_device.sh DIR build/tilelab; cp -r kernels samples/dequant_gemm.lua tests/perf/gemm_dequant_device.sh DIR
#   tar cJf DIR/cache.tar.xz -C $TILELAB_CACHE_DIR .   (the NVRTC cache filled without a GPU: tilelab test --kernel
#   gemm.dequant --full; tilelab run samples/dequant_gemm.lua configs)
# then on the device: bash DIR/gemm_dequant_device.sh. FULL=0 skips the --full matrix; CONFIGS=0 times the sample's
# default configs only (as does a failed quick matrix).
D=$(cd "$(dirname "$0")" && pwd)
export LD_LIBRARY_PATH=$D/lib TILELAB_KERNELS_DIR=$D/kernels TILELAB_CACHE_DIR=/tmp/tlc_dq TILELAB_DB=/tmp/tl_dq.db
export FONTCONFIG_FILE=$D/fonts.conf
mkdir -p $TILELAB_CACHE_DIR && tar xJf $D/cache.tar.xz -C $TILELAB_CACHE_DIR
T=$D/tilelab
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv,noheader
t0=$(date +%s)
timeout 120 $T test --kernel gemm.dequant --timeout 5 > $OUT/test_quick.txt 2>&1
rc=$?
echo "quick rc=$rc $(( $(date +%s) - t0 ))s: $(grep -E 'passed, ' $OUT/test_quick.txt)"
grep -E " FAIL " $OUT/test_quick.txt | head -8 | cut -c1-260
t1=$(date +%s)
timeout 90 $T info --measure > $OUT/info.txt 2>&1
echo "measure rc=$? $(( $(date +%s) - t1 ))s: $(grep -iE 'HBM' $OUT/info.txt | head -2 | tr -s ' ' | tr '\n' ' ')"
t2=$(date +%s)
if [ "${CONFIGS:-1}" = 1 ] && [ $rc = 0 ]; then arg=configs; else arg=; fi
OUT=$OUT timeout 180 $T run --launch-timeout 10 --allow-write $OUT $D/dequant_gemm.lua $arg > $OUT/bench.txt 2>&1
echo "bench rc=$? $(( $(date +%s) - t2 ))s"
if [ "${FULL:-1}" = 1 ] && [ $rc = 0 ]; then
  t3=$(date +%s)
  timeout ${FULL_TIMEOUT:-120} $T test --kernel gemm.dequant --full --timeout 5 > $OUT/test_full.txt 2>&1
  echo "full rc=$? $(( $(date +%s) - t3 ))s: $(grep -E 'passed, ' $OUT/test_full.txt)"
  grep -E " FAIL " $OUT/test_full.txt | head -8 | cut -c1-260
fi
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv,noheader
grep -vE "^ *$" $OUT/bench.txt | cut -c1-160
