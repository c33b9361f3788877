#!/usr/bin/env bash
# gemm.fp8 on the H100, one device run: the quick correctness matrix, the timings at issue 21's anchor shapes
# (gemm_fp8.lua, one worker) between two runs of torch._scaled_mm (cuBLASLt) at the same shapes, then the --full
# matrix and a recorded timeline.
# A self-contained bundle DIR (the device runs the session's checkout, so everything travels in DIR):
#   cmake/bundle_for_device.sh DIR build/tilelab; cp -r kernels tests/perf/{gemm_fp8.lua,fp8_torch.py,cuda_timing.py,gemm_fp8_device.sh} DIR
#   tar cJf DIR/cache.tar.xz -C $TILELAB_CACHE_DIR .   (the NVRTC cache filled without a GPU: tilelab test --kernel
#   gemm.fp8 --full; GEMM_COMPILE_ONLY=1 tilelab run tests/perf/gemm_fp8.lua)
# then on the device: bash DIR/gemm_fp8_device.sh. FULL=0 skips the --full matrix and the timeline, BENCH=0 the
# timings; WGMMA=1 also runs gemm.wgmma's quick matrix and its 8192^3 / 4096^3 benches beside cuBLAS (it shares the
# epilogue, gemm_store.cuh); GEMM_CONFIGS / GEMM_SHAPES pass through to gemm_fp8.lua.
D=$(cd "$(dirname "$0")" && pwd)
export LD_LIBRARY_PATH=$D/lib TILELAB_KERNELS_DIR=$D/kernels TILELAB_CACHE_DIR=/tmp/tlc_fp8 TILELAB_DB=/tmp/tl_fp8.db
mkdir -p $TILELAB_CACHE_DIR && tar xJf $D/cache.tar.xz -C $TILELAB_CACHE_DIR
T=$D/tilelab
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv,noheader
t0=$(date +%s)
timeout 150 $T test --kernel gemm.fp8 --timeout 5 --junit $OUT/test_quick.xml > $OUT/test_quick.txt 2>&1
rc=$?
echo "quick rc=$rc $(( $(date +%s) - t0 ))s: $(grep -E 'passed, ' $OUT/test_quick.txt)"
grep -E " FAIL " $OUT/test_quick.txt | head -8 | cut -c1-260
if [ "${WGMMA:-0}" = 1 ]; then
  timeout 150 $T test --kernel gemm.wgmma --timeout 5 > $OUT/test_wgmma.txt 2>&1
  echo "gemm.wgmma quick rc=$?: $(grep -E 'passed, ' $OUT/test_wgmma.txt)"
  grep -E " FAIL " $OUT/test_wgmma.txt | head -8 | cut -c1-260
  for p in M=8192,N=8192,K=8192 M=4096,N=4096,K=4096; do
    echo "== gemm.wgmma $p"; timeout 60 $T bench gemm.wgmma --problem $p --vs cublas --no-store 2>&1 | tail -4
  done
fi
if [ "${BENCH:-1}" = 1 ]; then
  t1=$(date +%s)
  timeout 120 python3 $D/fp8_torch.py > $OUT/torch_before.txt 2>&1
  OUT=$OUT timeout 300 $T run --launch-timeout 10 --allow-write $OUT $D/gemm_fp8.lua > $OUT/bench.txt 2>&1
  echo "bench rc=$? $(( $(date +%s) - t1 ))s"
  t2=$(date +%s)
  timeout 120 python3 $D/fp8_torch.py > $OUT/torch.txt 2>&1
  echo "torch rc=$? $(( $(date +%s) - t2 ))s (torch_before.txt: the same before the bench)"
fi
if [ "${FULL:-1}" = 1 ] && [ $rc = 0 ]; then
  t3=$(date +%s)
  timeout 200 $T test --kernel gemm.fp8 --full --timeout 5 --junit $OUT/test_full.xml > $OUT/test_full.txt 2>&1
  echo "full rc=$? $(( $(date +%s) - t3 ))s: $(grep -E 'passed, ' $OUT/test_full.txt)"
  grep -E " FAIL " $OUT/test_full.txt | head -8 | cut -c1-260
fi
if [ "${FULL:-1}" = 1 ]; then
  # The probe build: a recorded timeline (its region statistics) at 4096^3, block scales.
  timeout 60 $T timeline gemm.fp8 --problem M=4096,N=4096,K=4096,scaling=block --out $OUT/timeline.json --stats \
    > $OUT/timeline.txt 2>&1
  echo "timeline rc=$?"; grep -vE "^ *$" $OUT/timeline.txt | head -16 | cut -c1-120
fi
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv,noheader
if [ "${BENCH:-1}" = 1 ]; then
  grep -vE "^ *$" $OUT/bench.txt | cut -c1-110
  for f in torch_before torch; do
    echo "== $f"; grep -E "TFLOP|unavailable|torch " $OUT/$f.txt | sed -E 's/torch._scaled_mm //' | cut -c1-110
  done
fi
