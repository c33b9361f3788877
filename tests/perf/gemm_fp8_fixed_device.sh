#!/bin/bash
# gemm.fp8's fixed costs and small M (issue 21 item 1; fp8small3, session 47): the quick matrix at the new defaults
# (scale_early and prefetch_maps auto on), with both off, and on 64 x 64 tiles; then tests/perf/gemm_fp8_cublas.lua,
# 200 timed runs a row, each row's cuBLASLt in the same worker, once with the cupti timer and once with events:
# (a) at M 64, 128, 256 (N 7168, K 2048) and 4096 x 7168 x 2048: eold / ese / epm / dtr (both off, scale_early
# alone, prefetch_maps alone, both on; row scales: eold / dtr) in the order A B C D D C B A, twice; (b) at M 64: the
# default 128 x 64 beside the one-consumer tiles 64 x 64, 64 x 112 (± uniform_desc) and 64 x 128 (row scales staged),
# A B C D E E D C B A, twice. Bundle: tilelab (bundle_for_device.sh), kernels/, device_env.sh, gemm_fp8_cublas.lua,
# the NVRTC cache (cache.tar.xz) filled without a GPU; run(command="bash .dev/NAME/run.sh", carry=[".dev/NAME"]).
# 8 files come back: summary, smi, the quick matrices' log, the four lua logs, their JSON records (json.tgz).
D=$(cd "$(dirname "$0")" && pwd); . "$D/device_env.sh" fp8small3
t0=$SECONDS
nvidia-smi --query-gpu=name,clocks.sm,clocks_throttle_reasons.active,power.draw,temperature.gpu --format=csv,noheader -lms 250 > $OUT/smi.csv 2>&1 &
SMI=$!
: > $OUT/quick.txt
for cfg in "" scale_early=false,prefetch_maps=false block_M=64,block_N=64; do
  timeout 25 $T test --kernel gemm.fp8 ${cfg:+--config $cfg} --timeout 8 > /tmp/q.txt 2>&1
  echo "quick ${cfg:-default}: rc=$? $(grep -E 'passed, ' /tmp/q.txt | tail -1) [$((SECONDS - t0)) s]" >> $S
  grep -E " FAIL " /tmp/q.txt | head -5 | cut -c1-250 >> $S
  cat /tmp/q.txt >> $OUT/quick.txt
done
lua() {  # NAME SECONDS: gemm_fp8_cublas.lua with the GEMM_* variables set by the caller
  mkdir -p /tmp/o_$1
  OUT=/tmp/o_$1 timeout $2 $T run --launch-timeout 10 --allow-write /tmp/o_$1 $D/gemm_fp8_cublas.lua > $OUT/$1_log.txt 2>&1
  echo "lua $1 rc=$? $(grep -c ' PASS ' $OUT/$1_log.txt) PASS $(grep -c FAIL $OUT/$1_log.txt) FAIL $(grep -c ERROR $OUT/$1_log.txt) ERROR [$((SECONDS - t0)) s]" >> $S
  mkdir -p /tmp/json && cp /tmp/o_$1/gemm_fp8_cublas.json /tmp/json/$1.json 2>/dev/null
}
A=eold,ese,epm,dtr,dtr,epm,ese,eold
B=dtr,s64,s112,s112u,s128,s128,s112u,s112,s64,dtr
GEMM_TIMER=cupti GEMM_SETS=$A GEMM_SHAPES=6,4,8,3 GEMM_ROUNDS=2 GEMM_REP=200 lua a_cupti 40
GEMM_TIMER=events GEMM_SETS=$A GEMM_SHAPES=6,4,8,3 GEMM_ROUNDS=2 GEMM_REP=200 lua a_events 35
GEMM_TIMER=cupti GEMM_SETS=$B GEMM_SHAPES=6 GEMM_ROUNDS=2 GEMM_REP=200 lua b_cupti 20
GEMM_TIMER=events GEMM_SETS=$B GEMM_SHAPES=6 GEMM_ROUNDS=2 GEMM_REP=200 lua b_events 20
kill $SMI
tar czf $OUT/json.tgz -C /tmp/json .
cat $S
awk -F', ' '{print $2, $3}' $OUT/smi.csv | sort | uniq -c | sort -rn | head -5
