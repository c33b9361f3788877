#!/bin/bash
# gemm.fp8 at small M (issue 21 item 1; fp8small1's script of session 46, trimmed and run by fp8small2 in session 47):
# the quick matrix with cuBLASLt's 64 x 112 tile forced (block_M=64,block_N=112; also with uniform_desc, and on two
# consumers), then tests/perf/gemm_fp8_cublas.lua at M 128 (N 7168, K 2048): the defaults (dtr) beside n112 / n112u
# (tensor and row) and n112s / n112us (row: scale_stage=true, which is auto on the default's 128-row tile) in the order
# A B C D E E D C B A, twice (GEMM_ROUNDS=2), 200 timed runs a row, each row's cuBLASLt in the same worker — once with
# the cupti timer (kernel durations, no launch latency; GEMM_CHECK=n112chk first: the 112-column tiles on the odd
# problems, float64-checked) and once with CUDA events; then M 64 and 256 (cupti, A B B A once) while time is left.
# Bundle: tilelab (bundle_for_device.sh), kernels/, device_env.sh, gemm_fp8_cublas.lua and the NVRTC cache
# (cache.tar.xz) filled without a GPU; run as run(command="bash .dev/NAME/run.sh", carry=[".dev/NAME"]).
# 8 files come back: summary, smi, and per step the log and the JSON.
D=$(cd "$(dirname "$0")" && pwd); . "$D/device_env.sh" fp8small2
t0=$SECONDS
nvidia-smi --query-gpu=name,clocks.sm,clocks_throttle_reasons.active,power.draw,temperature.gpu --format=csv,noheader -lms 250 > $OUT/smi.csv 2>&1 &
SMI=$!
for cfg in block_M=64,block_N=112 block_M=64,block_N=112,uniform_desc=true block_M=128,block_N=112; do
  timeout 25 $T test --kernel gemm.fp8 --config $cfg --timeout 8 > /tmp/q.txt 2>&1
  echo "quick --config $cfg: rc=$? $(grep -E 'passed, ' /tmp/q.txt | tail -1) [$((SECONDS - t0)) s]" >> $S
  grep -E " FAIL " /tmp/q.txt | head -5 | cut -c1-250 >> $S
done
lua() {  # NAME SECONDS: gemm_fp8_cublas.lua with the GEMM_* variables set by the caller
  mkdir -p /tmp/o_$1
  OUT=/tmp/o_$1 timeout $2 $T run --launch-timeout 10 --allow-write /tmp/o_$1 $D/gemm_fp8_cublas.lua > $OUT/$1_log.txt 2>&1
  echo "lua $1 rc=$? $(grep -c ' PASS ' $OUT/$1_log.txt) PASS $(grep -c 'FAIL' $OUT/$1_log.txt) FAIL; $(grep checks: $OUT/$1_log.txt) [$((SECONDS - t0)) s]" >> $S
  cp /tmp/o_$1/gemm_fp8_cublas.json $OUT/$1.json 2>/dev/null
}
SETS=dtr,n112,n112u,n112s,n112us,n112us,n112s,n112u,n112,dtr
GEMM_TIMER=cupti GEMM_CHECK=n112chk GEMM_SETS=$SETS GEMM_SHAPES=4 GEMM_ROUNDS=2 GEMM_REP=200 lua cupti 40
GEMM_TIMER=events GEMM_SETS=$SETS GEMM_SHAPES=4 GEMM_ROUNDS=2 GEMM_REP=200 lua events 30
[ $((SECONDS - t0)) -lt 70 ] && GEMM_TIMER=cupti GEMM_SETS=dtr,n112,n112,dtr GEMM_SHAPES=6,8 GEMM_REP=200 lua edge 20
kill $SMI
cat $S
awk -F', ' '{print $2, $3}' $OUT/smi.csv | sort | uniq -c | sort -rn | head -5
