#!/bin/bash
# gemm.fp8 per-tensor at M 128 (issue 21 item 1; fp8m128t, session 48): first the per-CTA timeline (probe build, three
# captures a case: the defaults at M 128 tensor / row, M 64, M 256, and each candidate at M 128; summarized by
# gemm_fp8_m128_timeline.py), then the quick matrix at the defaults and with early_loads forced, the odd problems of
# gemm_fp8_cublas.lua with it (GEMM_CHECK), and gemm_fp8_cublas.lua's sets m1d (the defaults), m1el, m1s4 in the
# order A B C C B A, twice (GEMM_ROUNDS=2), 200 runs a row (fp8m128t's call also timed prefetch_b / exit_read, taken
# out since: this script as it ran is on branch fp8m128t),
# each row's cuBLASLt in the same worker, once under cupti and once under events. Bundle: tilelab
# (bundle_for_device.sh), kernels/, device_env.sh, the two lua scripts, the python summary, the NVRTC cache
# (cache.tar.xz) filled here; run(command="bash .dev/fp8m128t/run.sh", carry=[".dev/fp8m128t"]).
# 7 files come back: summary.txt, timeline.txt (the summary), cupti_log.txt, events_log.txt, traces.tar.xz (the default
# M 128 traces, one with early_loads, one of M 64), json.tgz (the timed rows' records) and logs.tgz (nvidia-smi
# every 250 ms, the timeline run's log, the quick matrices, the odd-problem checks).
D=$(cd "$(dirname "$0")" && pwd); . "$D/device_env.sh" fp8m128t
t0=$SECONDS
L=/tmp/logs; mkdir -p $L
cap() { local left=$((140 - (SECONDS - t0))); [ $left -lt $1 ] && echo $((left > 1 ? left : 1)) || echo $1; }  # one deadline
nvidia-smi --query-gpu=name,clocks.sm,clocks_throttle_reasons.active,power.draw,temperature.gpu --format=csv,noheader -lms 250 > $L/smi.csv 2>&1 &
SMI=$!
mkdir -p /tmp/tl
OUT=/tmp/tl TL_CAPTURES=4 timeout $(cap 30) $T run --launch-timeout 10 --allow-write /tmp/tl $D/gemm_fp8_m128_timeline.lua > $L/timeline_log.txt 2>&1
echo "timeline rc=$? $(grep -c PASS $L/timeline_log.txt) PASS $(grep -c -E 'FAIL|ERROR' $L/timeline_log.txt) FAIL/ERROR [$((SECONDS - t0)) s]" >> $S
python3 $D/gemm_fp8_m128_timeline.py $(ls /tmp/tl/tl_*.json) > $OUT/timeline.txt 2>&1
echo "summary rc=$? [$((SECONDS - t0)) s]" >> $S
tar cJf $OUT/traces.tar.xz -C /tmp/tl $(cd /tmp/tl && ls tl_d128_*.json tl_el128_1.json tl_d64_1.json 2>/dev/null)
: > $L/quick.txt
for cfg in "" early_loads=true; do
  timeout $(cap 15) $T test --kernel gemm.fp8 ${cfg:+--config $cfg} --timeout 8 > /tmp/q.txt 2>&1
  echo "quick ${cfg:-default}: rc=$? $(grep -E 'passed, ' /tmp/q.txt | tail -1) [$((SECONDS - t0)) s]" >> $S
  grep -E " FAIL " /tmp/q.txt | head -5 | cut -c1-250 >> $S
  cat /tmp/q.txt >> $L/quick.txt
done
lua() {  # NAME SECONDS: gemm_fp8_cublas.lua with the GEMM_* variables set by the caller
  mkdir -p /tmp/o_$1
  local log=$OUT/$1_log.txt
  [ "$1" = check ] && log=$L/check_log.txt
  OUT=/tmp/o_$1 timeout $(cap $2) $T run --launch-timeout 10 --allow-write /tmp/o_$1 $D/gemm_fp8_cublas.lua > $log 2>&1
  echo "lua $1 rc=$? $(grep -c ' PASS ' $log) PASS $(grep -c FAIL $log) FAIL $(grep -c ERROR $log) ERROR [$((SECONDS - t0)) s]" >> $S
  grep -E "^checks:|CHECK FAIL" $log | head -6 | cut -c1-250 >> $S
  mkdir -p /tmp/json && cp /tmp/o_$1/gemm_fp8_cublas.json /tmp/json/$1.json 2>/dev/null
}
GEMM_CHECK=m1el GEMM_SETS=m1d GEMM_SHAPES=4 GEMM_REP=1 lua check 20
A=m1d,m1el,m1s4,m1s4,m1el,m1d
GEMM_TIMER=cupti GEMM_SETS=$A GEMM_SHAPES=6,4,8,3 GEMM_ROUNDS=2 GEMM_REP=200 GEMM_VERIFY=shape lua cupti 35
GEMM_TIMER=events GEMM_SETS=$A GEMM_SHAPES=6,4,8,3 GEMM_ROUNDS=2 GEMM_REP=200 lua events 30
kill $SMI
tar czf $OUT/json.tgz -C /tmp/json .
tar czf $OUT/logs.tgz -C $L .
cat $S
awk -F', ' '{print $2, $3}' $L/smi.csv | sort | uniq -c | sort -rn | head -5
