#!/usr/bin/env bash
# gemm.grouped on the H100, one device run: the quick correctness matrix, torch._grouped_mm at issue 21's anchor
# shapes, the timings (gemm_grouped.lua, one worker), torch again, then the --full matrix and a recorded timeline; a
# short table at the end. A self-contained bundle DIR (the device runs the session's checkout, so everything travels
# in DIR):
#   cmake/bundle_for_device.sh DIR build/tilelab; cp -r kernels tests/perf/{gemm_grouped.lua,grouped_torch.py,
#   cuda_timing.py,gemm_grouped_device.sh} DIR
#   tar cJf DIR/cache.tar.xz -C $TILELAB_CACHE_DIR .   (the NVRTC cache filled without a GPU: tilelab test --kernel
#   gemm.grouped --full; GEMM_COMPILE_ONLY=1 tilelab run tests/perf/gemm_grouped.lua)
# then on the device: bash DIR/gemm_grouped_device.sh. FULL=0 skips the --full matrix and the timeline, BENCH=0 the
# timings; GEMM_SET, GEMM_ROUNDS and GEMM_CASES pass through to gemm_grouped.lua. torch runs before and after it.
D=$(cd "$(dirname "$0")" && pwd)
export LD_LIBRARY_PATH=$D/lib TILELAB_KERNELS_DIR=$D/kernels TILELAB_CACHE_DIR=/tmp/tlc_grouped TILELAB_DB=/tmp/tl_grouped.db
mkdir -p $TILELAB_CACHE_DIR && tar xJf $D/cache.tar.xz -C $TILELAB_CACHE_DIR
T=$D/tilelab
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv,noheader
t0=$(date +%s)
timeout 100 $T test --kernel gemm.grouped --timeout 5 --junit $OUT/test_quick.xml > $OUT/test_quick.txt 2>&1
rc=$?
echo "quick rc=$rc $(( $(date +%s) - t0 ))s: $(grep -E 'passed, ' $OUT/test_quick.txt)"
grep -E " FAIL " $OUT/test_quick.txt | head -8 | cut -c1-300
if [ "${BENCH:-1}" = 1 ]; then
  t1=$(date +%s)
  PYTHONUNBUFFERED=1 timeout 80 python3 $D/grouped_torch.py > $OUT/torch.txt 2>&1
  echo "torch rc=$? $(( $(date +%s) - t1 ))s"
  t2=$(date +%s)
  OUT=$OUT timeout 180 $T run --launch-timeout 10 --allow-write $OUT $D/gemm_grouped.lua > $OUT/bench.txt 2>&1
  echo "bench rc=$? $(( $(date +%s) - t2 ))s"
  PYTHONUNBUFFERED=1 timeout 80 python3 $D/grouped_torch.py >> $OUT/torch.txt 2>&1
fi
if [ "${FULL:-1}" = 1 ] && [ $rc = 0 ]; then
  t3=$(date +%s)
  timeout 180 $T test --kernel gemm.grouped --full --timeout 5 --junit $OUT/test_full.xml > $OUT/test_full.txt 2>&1
  echo "full rc=$? $(( $(date +%s) - t3 ))s: $(grep -E 'passed, ' $OUT/test_full.txt)"
  grep -E " FAIL " $OUT/test_full.txt | head -8 | cut -c1-300
  # The probe build: a recorded timeline (its region statistics) at the G 32 anchor.
  timeout 30 $T timeline gemm.grouped --problem G=32,M=512 --out $OUT/timeline.json --stats > $OUT/timeline.txt 2>&1
  echo "timeline rc=$?"; grep -vE "^ *$" $OUT/timeline.txt | head -14 | cut -c1-120
fi
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv,noheader
if [ "${BENCH:-1}" = 1 ]; then
  grep -vE "^ *$" $OUT/bench.txt | cut -c1-110
  grep -E "TFLOP|unavailable|torch " $OUT/torch.txt | cut -c1-110
fi
