#!/usr/bin/env bash
# fp8blk16 (issue 21 item 1): gemm.fp8 block scales on the row-scaled defaults' 128 x 192 tiles (one 192-column chain
# a consumer) against the block default (128 x 256, two 128-column chains), at 8192^3 and 16384^2 x 4096, in one call:
#   1. `tilelab test --kernel gemm.fp8` with block_N=192,wgmma_N=192 and uniform_desc true / false forced;
#   2. gemm_fp8_cublas.lua GEMM_CHECK=b192chk: both on the odd block problems, float64-checked;
#   3. events, A B C D D C B A twice (GEMM_ROUNDS=2): the defaults (`brow`: row and block, with cuBLASLt row-wise and
#      block in the same rows; at 4096^3 and 4096 x 7168 x 2048 too), `b192` (uniform_desc), `b192s4` (+ a fourth
#      stage, 16384^2 x 4096 only), `b192nu` (per-thread descriptors);
#   4. cupti, A B B A once at the two large shapes (defaults, b192).
# nvidia-smi every 500 ms in the background (clocks, power, throttle reasons). Everything into $OUT/fp8blk16.tgz.
# The bundle DIR: tests/perf/gemm_fp8_blk192_prepare.sh. Usage on the device: bash DIR/run.sh.
D=$(cd "$(dirname "$0")" && pwd); . "$D/device_env.sh" fp8blk16
T0=$(date +%s)
DEADLINE=${DEADLINE:-160}
W=/tmp/fp8blk16_work; rm -rf $W; mkdir -p $W
el() { echo $(( $(date +%s) - T0 )); }
lim() { local l=$(( DEADLINE - $(el) )); [ $l -gt $1 ] && l=$1; [ $l -lt 1 ] && l=1; echo $l; }
pack() { cp $S $W/ 2>/dev/null; tar czf $OUT/fp8blk16.tgz -C $W . 2>/dev/null; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,power.limit --format=csv,noheader >> $S 2>&1
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active \
  --format=csv,noheader -lms 500 > $W/smi.csv 2>&1 &
SMI=$!
for ud in true false; do
  t=$(el)
  timeout -k 3 $(lim 25) $T test --kernel gemm.fp8 --config block_N=192,wgmma_N=192,uniform_desc=$ud --timeout 8 \
    > $W/test_ud$ud.txt 2>&1
  echo "test 192 ud=$ud rc=$? $(( $(el) - t ))s: $(tail -1 $W/test_ud$ud.txt)" >> $S
  grep -E " FAIL " $W/test_ud$ud.txt | head -5 | cut -c1-250 >> $S
done
pack
RUN="$T run --launch-timeout 10 --allow-write $W"
t=$(el)
OUT=$W GEMM_SETS= GEMM_CHECK=b192chk GEMM_CHECK_SCALING=block timeout -k 3 $(lim 25) $RUN $D/gemm_fp8_cublas.lua \
  > $W/check.txt 2>&1
echo "odd checks rc=$? $(( $(el) - t ))s: $(grep -E '^checks' $W/check.txt)" >> $S
grep "CHECK FAIL" $W/check.txt | head -5 | cut -c1-250 >> $S; pack
t=$(el)
OUT=$W GEMM_SETS=brow,b192,b192s4,b192nu,b192nu,b192s4,b192,brow GEMM_SHAPES=1,5,2,3 GEMM_ROUNDS=2 GEMM_REP=30 \
  GEMM_SUMMARY=1 GEMM_VERIFY=shape timeout -k 3 $(lim 95) $RUN $D/gemm_fp8_cublas.lua > $W/events.txt 2>&1
echo "events rc=$? $(( $(el) - t ))s; FAIL|ERROR rows: $(grep -cE "FAIL|ERROR" $W/events.txt)" >> $S
mv $W/gemm_fp8_cublas.json $W/events.json 2>/dev/null; pack
t=$(el)
OUT=$W GEMM_TIMER=cupti GEMM_SETS=brow,b192,b192,brow GEMM_SHAPES=1,5 GEMM_ROUNDS=1 GEMM_REP=30 GEMM_SUMMARY=1 \
  GEMM_VERIFY=shape timeout -k 3 $(lim 40) $RUN $D/gemm_fp8_cublas.lua > $W/cupti.txt 2>&1
echo "cupti rc=$? $(( $(el) - t ))s; FAIL|ERROR rows: $(grep -cE "FAIL|ERROR" $W/cupti.txt)" >> $S
mv $W/gemm_fp8_cublas.json $W/cupti.json 2>/dev/null
kill $SMI 2>/dev/null
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv,noheader >> $S 2>&1
echo "total $(el)s" >> $S; pack
cat $S
sed -n '/^shape /,$p' $W/events.txt | cut -c1-170
sed -n '/^shape /,$p' $W/cupti.txt | cut -c1-170
