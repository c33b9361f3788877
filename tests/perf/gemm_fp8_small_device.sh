#!/bin/bash
# gemm.fp8 at small M (issue 21 item 1; fp8small1, session 46): the quick matrix with cuBLASLt's 64 x 112 tile forced
# (block_M=64,block_N=112; also with uniform_desc and on two consumers), then tests/perf/gemm_fp8_cublas.lua at M 128, 64
# and 256 (N 7168, K 2048), tensor and row scales, the defaults (dtr) beside n112 / n112u / sud / m64n128 in the order
# A B C D E E D C B A, twice (GEMM_ROUNDS=2), 200 timed runs a row, each row's cuBLASLt in the same worker — once with
# the cupti timer (kernel durations, no launch latency; GEMM_CHECK=n112chk first: the 112-column tiles on the odd
# problems, float64-checked) and once with CUDA events. Bundle: tilelab, kernels/, device_env.sh, gemm_fp8_cublas.lua,
# gemm_fp8_cublas_table.py and the NVRTC cache (cache.tar.xz) filled without a GPU; run as
# run(command="bash .dev/fp8small1/run.sh", carry=[".dev/fp8small1"]). At most 8 files come back: summary, smi, and per
# timer the log, the JSON and its table. Not run in session 46 (no device time left to start a machine).
D=$(cd "$(dirname "$0")" && pwd); . "$D/device_env.sh" fp8small1
nvidia-smi --query-gpu=name,clocks.sm,clocks_throttle_reasons.active,power.draw --format=csv,noheader -lms 250 > $OUT/smi.csv 2>&1 &
SMI=$!
for cfg in block_M=64,block_N=112 block_M=64,block_N=112,uniform_desc=true block_M=128,block_N=112; do
  timeout 30 $T test --kernel gemm.fp8 --config $cfg --timeout 8 > /tmp/q.txt 2>&1
  echo "quick --config $cfg: rc=$? $(tail -2 /tmp/q.txt | head -1)" >> $S; grep -E " FAIL " /tmp/q.txt | head -5 | cut -c1-250 >> $S
done
SETS=dtr,n112,n112u,sud,m64n128,m64n128,sud,n112u,n112,dtr
for tm in cupti events; do
  chk=""; [ $tm = cupti ] && chk=n112chk
  mkdir -p /tmp/o_$tm
  OUT=/tmp/o_$tm GEMM_TIMER=$tm GEMM_CHECK=$chk GEMM_SETS=$SETS GEMM_SHAPES=4,6,8 GEMM_ROUNDS=2 GEMM_REP=200 \
    timeout 150 $T run $D/gemm_fp8_cublas.lua > $OUT/${tm}_log.txt 2>&1
  echo "lua $tm rc=$? $(grep -c PASS $OUT/${tm}_log.txt) PASS $(grep -c FAIL $OUT/${tm}_log.txt) FAIL; $(grep checks: $OUT/${tm}_log.txt)" >> $S
  cp /tmp/o_$tm/gemm_fp8_cublas.json $OUT/${tm}.json
  python3 $D/gemm_fp8_cublas_table.py $OUT/${tm}.json > $OUT/${tm}_table.txt 2>&1
done
kill $SMI
cat $S
awk -F', ' '{print $2}' $OUT/smi.csv | sort | uniq -c | sort -rn | head -5
