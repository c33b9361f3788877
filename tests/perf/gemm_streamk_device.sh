#!/usr/bin/env bash
# gemm.wgmma's stream-K and gemm.fp8's cuBLASLt baseline on the H100/H200, one device run: gemm.wgmma's quick test
# matrix, then tests/perf/gemm_streamk.lua (stream-K checks on odd shapes, the eight issue-21 shapes with each
# schedule beside cuBLAS, gemm.fp8 beside cuBLASLt in each scaling).
# A self-contained bundle DIR (the device runs the session's checkout, so everything travels in DIR):
#   cmake/bundle_for_device.sh DIR build/tilelab; cp -r kernels tests/perf/{gemm_streamk.lua,gemm_streamk_device.sh} DIR
#   tar cJf DIR/cache.tar.xz -C $TILELAB_CACHE_DIR .   (the NVRTC cache filled without a GPU:
#   GEMM_COMPILE_ONLY=1 tilelab run tests/perf/gemm_streamk.lua)
# then on the device: bash DIR/gemm_streamk_device.sh. TEST=0 skips the test matrix, FULL=1 adds the --full one
# (FULL_TIMEOUT s); GEMM_PARTS / GEMM_REP / GEMM_PASSES / GEMM_SCHEDULES pass through to gemm_streamk.lua; TIMELINE
# (below).
D=$(cd "$(dirname "$0")" && pwd)
export LD_LIBRARY_PATH=$D/lib TILELAB_KERNELS_DIR=$D/kernels TILELAB_CACHE_DIR=/tmp/tlc_streamk TILELAB_DB=/tmp/tl_sk.db
# libcublas / libcublasLt: the system's, else PyTorch's wheel (nvidia/cu13/lib or nvidia/cublas/lib).
for w in $(python3 -c 'import nvidia, os; [print(os.path.join(p, s, "lib")) for p in nvidia.__path__ for s in ("cu13", "cublas")]' 2>/dev/null); do
  [ -d "$w" ] && LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$w
done
mkdir -p $TILELAB_CACHE_DIR && tar xJf $D/cache.tar.xz -C $TILELAB_CACHE_DIR
T=$D/tilelab
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv,noheader
t1=$(date +%s)
OUT=$OUT timeout ${LUA_TIMEOUT:-400} $T run --launch-timeout 10 --allow-write $OUT $D/gemm_streamk.lua > $OUT/bench.txt 2>&1
echo "gemm_streamk.lua rc=$? $(( $(date +%s) - t1 ))s"
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv,noheader
grep -vE "^ *$" $OUT/bench.txt | sed -E 's/  +/ /g' | cut -c1-200
# TIMELINE=M=...,N=...,K=...: that problem's recorded timeline for each schedule of GEMM_SCHEDULES (region statistics
# printed, the Chrome trace gzipped into $OUT).
if [ -n "$TIMELINE" ]; then
  for s in $(echo "${GEMM_SCHEDULES:-data_parallel,stream_k}" | tr , ' '); do
    echo "== timeline $TIMELINE schedule=$s"
    timeout 60 $T timeline gemm.wgmma --problem "$TIMELINE" --config schedule=$s --stats -o /tmp/tl_$s.json 2>&1 | tail -9
    gzip -c /tmp/tl_$s.json > $OUT/tl_$s.json.gz
  done
fi
# The test matrices after the timings (a run cut short by its timeout keeps the timings and the cases it finished).
if [ "${TEST:-1}" = 1 ]; then
  t0=$(date +%s)
  timeout 120 $T test --kernel gemm.wgmma --timeout 5 > $OUT/test_quick.txt 2>&1
  echo "gemm.wgmma quick rc=$? $(( $(date +%s) - t0 ))s: $(grep -E 'passed, ' $OUT/test_quick.txt)"
  grep -E " FAIL " $OUT/test_quick.txt | head -8 | cut -c1-260
fi
if [ "${FULL:-0}" = 1 ]; then
  t0=$(date +%s)
  timeout ${FULL_TIMEOUT:-300} $T test --kernel gemm.wgmma --full --timeout 5 > $OUT/test_full.txt 2>&1
  echo "gemm.wgmma --full rc=$? $(( $(date +%s) - t0 ))s: $(grep -E 'passed, ' $OUT/test_full.txt)" \
    "(rows so far: $(grep -cE ' PASS ' $OUT/test_full.txt) PASS, $(grep -cE ' FAIL ' $OUT/test_full.txt) FAIL," \
    "$(grep -cE ' SKIP ' $OUT/test_full.txt) SKIP)"
  grep -E " FAIL " $OUT/test_full.txt | head -8 | cut -c1-260
fi
