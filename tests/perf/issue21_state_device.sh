#!/usr/bin/env bash
# Issue 21's whole anchor table on one GPU in one call (items 1-4), every family beside its baseline in the same
# worker or call, two rounds of each, every (problem, config)'s first timed run float64-checked (the rest at one
# sampled position), the parts under one deadline (DEADLINE seconds, default 232):
#   1. gemm.fp8 at the five anchors, tensor / row / block scales, defaults, beside cuBLASLt's matching mode
#      (gemm_fp8_cublas.lua, GEMM_ROUNDS=2: the whole list twice; its summary divides block rows by row-wise cuBLASLt);
#   2. gemm.wgmma bf16 at the eight shapes, defaults, beside cuBLAS (gemm_bf16.lua, two passes);
#   3. torch._grouped_mm (grouped_torch.py), gemm.grouped bf16 / e4m3 row / e4m3 block at the three anchors, each run
#      twice back to back (its host reference inputs made once), then torch again;
#   4. gemm.dequant gemv at M 1, 4, 8, 9, 12, 16 (int4 group 128) and fp4 (groups 32 and 128) at M 16, on 28672 x 8192
#      and 8192 x 28672, path auto, two rounds, beside the HBM copy measured in the same process (gemv_rounds.lua);
#   5. gemm.dequant prefill (M 1024, 4096 at 8192 x 8192, and 8192 x 8192 x 4096; int4/128, fp4/32) beside bf16
#      gemm.wgmma before and after (gemm_dequant_prefill.lua, two passes).
# Logs and JSON into a work folder, tarred into $OUT/state21.tgz after every part (the device tool returns 8 files).
# The bundle DIR holds the stripped tilelab (cmake/bundle_for_device.sh), kernels/, device_env.sh, the scripts named
# above, cuda_timing.py and cache.tar.xz (the NVRTC cache filled here: tests/perf/issue21_state_prepare.sh).
# Usage on the device: bash DIR/run.sh (this file copied as run.sh).
D=$(cd "$(dirname "$0")" && pwd); . "$D/device_env.sh" state21
T0=$(date +%s)
DEADLINE=${DEADLINE:-232}
W=/tmp/state21_work; rm -rf $W; mkdir -p $W
el() { echo $(( $(date +%s) - T0 )); }
lim() { local l=$(( DEADLINE - $(el) )); [ $l -gt $1 ] && l=$1; [ $l -lt 1 ] && l=1; echo $l; }
pack() { tar czf $OUT/state21.tgz -C $W . 2>/dev/null; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,power.limit --format=csv,noheader >> $S 2>&1
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active \
  --format=csv,noheader -lms 500 > $W/smi.csv 2>&1 &
SMI=$!
RUN="$T run --launch-timeout 10 --allow-write $W"
t=$(el)
OUT=$W GEMM_SETS=defaults GEMM_SHAPES=1,2,3,4,5 GEMM_ROUNDS=2 GEMM_REP=30 GEMM_SUMMARY=1 GEMM_VERIFY=shape \
  timeout -k 5 $(lim 75) $RUN $D/gemm_fp8_cublas.lua > $W/fp8.txt 2>&1
echo "fp8 rc=$? $(( $(el) - t ))s; FAIL|ERROR rows: $(grep -cE "FAIL|ERROR" $W/fp8.txt)" >> $S; pack
t=$(el)
OUT=$W GEMM_CONFIGS= GEMM_PASSES=2 GEMM_REP=30 GEMM_VERIFY=first \
  timeout -k 5 $(lim 50) $RUN $D/gemm_bf16.lua > $W/bf16.txt 2>&1
echo "bf16 rc=$? $(( $(el) - t ))s; FAIL|ERROR rows: $(grep -cE "FAIL|ERROR" $W/bf16.txt)" >> $S; pack
t=$(el)
PYTHONUNBUFFERED=1 timeout -k 5 $(lim 25) python3 $D/grouped_torch.py > $W/torch1.txt 2>&1
echo "torch1 rc=$? $(( $(el) - t ))s" >> $S
t=$(el)
OUT=$W GEMM_CASES=1,1,5,5,6,6,7,7,11,11,12,12,13,13,17,17,18,18 GEMM_VERIFY=problem GEMM_REP=30 \
  timeout -k 5 $(lim 55) $RUN $D/gemm_grouped.lua > $W/grouped.txt 2>&1
echo "grouped rc=$? $(( $(el) - t ))s; FAIL|ERROR rows: $(grep -cE "FAIL|ERROR" $W/grouped.txt)" >> $S
t=$(el)
PYTHONUNBUFFERED=1 timeout -k 5 $(lim 25) python3 $D/grouped_torch.py > $W/torch2.txt 2>&1
echo "torch2 rc=$? $(( $(el) - t ))s" >> $S; pack
CASES=
for nk in 28672,8192 8192,28672; do
  for m in 1 4 8 9 12 16; do CASES="$CASES$m,$nk,int4,128|auto;"; done
  CASES="${CASES}16,$nk,fp4,32|auto;16,$nk,fp4,128|auto;"
done
t=$(el)
OUT=$W CASES="$CASES" ROUNDS=2 VERIFY=first DEQUANT_REP=50 timeout -k 5 $(lim 45) $RUN $D/gemv_rounds.lua > $W/gemv.txt 2>&1
echo "gemv rc=$? $(( $(el) - t ))s; $(tail -1 $W/gemv.txt)" >> $S; pack
t=$(el)
OUT=$W DEQUANT_SHAPES="1024x8192x8192 4096x8192x8192 8192x8192x4096" DEQUANT_FORMATS="int4/128 fp4/32" DEQUANT_PASSES=2 \
  DEQUANT_REP=30 timeout -k 5 $(lim 40) $RUN $D/gemm_dequant_prefill.lua > $W/prefill.txt 2>&1
echo "prefill rc=$? $(( $(el) - t ))s; FAIL|ERROR rows: $(grep -cE "FAIL|ERROR" $W/prefill.txt)" >> $S
kill $SMI 2>/dev/null
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv,noheader >> $S 2>&1
echo "total $(el)s" >> $S; pack
cat $S
sed -n '/^shape /,$p' $W/fp8.txt | cut -c1-150
grep -E "^means|geometric|^[0-9]+,[0-9]+,[0-9]+ " $W/bf16.txt | cut -c1-120
grep -E "TFLOP|unavailable" $W/torch1.txt $W/torch2.txt | cut -c1-140
grep -E "G=" $W/grouped.txt | cut -c1-130
grep -E "^r[12] |HBM" $W/gemv.txt | cut -c1-120
grep -vE "^ *$" $W/prefill.txt | cut -c1-120
