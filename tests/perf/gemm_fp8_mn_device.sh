#!/usr/bin/env bash
# fp8blk17 (issue 21 item 1): gemm.fp8 block scales with scale_A M-major (scale_a_layout=mn, DeepGEMM's layout) beside
# the K-major default and row-wise cuBLASLt on the H200, and where block scales' cost goes, in one call:
#   1. `tilelab test --kernel gemm.fp8` (quick; holds M-major problems: M 2116 with the TMA box, M 257 cp.async);
#   2. gemm_fp8_cublas.lua GEMM_CHECK=mnodd on M 1/65/200/257 x N 130/7200 x K 400/2048 (block, both layouts, the
#      defaults) and GEMM_CHECK=mnchk on the odd problems (every M-major scale path), float64-checked;
#   3. events, A B B A twice (GEMM_SETS=brow,bmn,bmn,brow, GEMM_ROUNDS=2): the row and block (K-major) defaults with
#      cuBLASLt row-wise / block in the same rows, block with scale_A M-major (cuBLASLt's block mode reading the same
#      M-major scales), at 8192^3, 16384^2 x 4096, 4096^3, 4096 x 7168 x 2048 and M 128;
#   4. the DIAG kernels (gemm_fp8_scale_diag.sh's: A the promotion an FADD, B no scale boxes, AB both; wrong sums,
#      unchecked) beside the kernel (ref) at 8192^3, block K-major and M-major and the row gauge on 128 x 256 tiles, one
#      process each in the order DIAG_ORDER (default ref A B AB AB B A ref).
# nvidia-smi every 500 ms in the background. Everything into $OUT/fp8blk17.tgz. The bundle DIR:
# tests/perf/gemm_fp8_mn_prepare.sh. Usage on the device: bash DIR/run.sh.
D=$(cd "$(dirname "$0")" && pwd); . "$D/device_env.sh" fp8blk17
T0=$(date +%s)
DEADLINE=${DEADLINE:-116}
W=/tmp/fp8blk17_work; rm -rf $W; mkdir -p $W
el() { echo $(( $(date +%s) - T0 )); }
lim() { local l=$(( DEADLINE - $(el) )); [ $l -gt $1 ] && l=$1; [ $l -lt 1 ] && l=1; echo $l; }
pack() { cp $S $W/ 2>/dev/null; tar czf $OUT/fp8blk17.tgz -C $W . 2>/dev/null; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,power.limit --format=csv,noheader >> $S 2>&1
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active \
  --format=csv,noheader -lms 500 > $W/smi.csv 2>&1 &
SMI=$!
t=$(el)
timeout -k 3 $(lim 20) $T test --kernel gemm.fp8 --timeout 8 > $W/test.txt 2>&1
echo "quick matrix rc=$? $(( $(el) - t ))s: $(tail -1 $W/test.txt)" >> $S
grep -E " FAIL " $W/test.txt | head -5 | cut -c1-250 >> $S
RUN="$T run --launch-timeout 10 --allow-write $W"
P=1x130x400,1x130x2048,1x7200x400,1x7200x2048,65x130x400,65x130x2048,65x7200x400,65x7200x2048,200x130x400
P=$P,200x130x2048,200x7200x400,200x7200x2048,257x130x400,257x130x2048,257x7200x400,257x7200x2048
t=$(el)
OUT=$W GEMM_SETS= GEMM_CHECK=mnodd GEMM_CHECK_SCALING=block GEMM_CHECK_PROBLEMS=$P GEMM_CHECK_VERBOSE=1 \
  timeout -k 3 $(lim 20) $RUN $D/gemm_fp8_cublas.lua > $W/check_odd.txt 2>&1
echo "odd checks (mnodd) rc=$? $(( $(el) - t ))s: $(grep -E '^checks' $W/check_odd.txt)" >> $S
grep -E "CHECK (FAIL|REFUSED)" $W/check_odd.txt | head -5 | cut -c1-250 >> $S
t=$(el)
OUT=$W GEMM_SETS= GEMM_CHECK=mnchk GEMM_CHECK_SCALING=block timeout -k 3 $(lim 20) $RUN $D/gemm_fp8_cublas.lua \
  > $W/check_mnchk.txt 2>&1
echo "odd checks (mnchk) rc=$? $(( $(el) - t ))s: $(grep -E '^checks' $W/check_mnchk.txt)" >> $S
grep "CHECK FAIL" $W/check_mnchk.txt | head -5 | cut -c1-250 >> $S; pack
t=$(el)
OUT=$W GEMM_SETS=brow,bmn,bmn,brow GEMM_SHAPES=1,5,2,3,4 GEMM_ROUNDS=${ROUNDS:-2} GEMM_REP=30 GEMM_SUMMARY=1 \
  GEMM_VERIFY=shape timeout -k 3 $(lim ${EVENTS_S:-72}) $RUN $D/gemm_fp8_cublas.lua > $W/events.txt 2>&1
echo "events rc=$? $(( $(el) - t ))s; rows $(grep -cE '^[0-9]+x' $W/events.txt); FAIL|ERROR rows: $(grep -cE "FAIL|ERROR" $W/events.txt)" >> $S
mv $W/gemm_fp8_cublas.json $W/events.json 2>/dev/null; pack
t=$(el)
for tag in ${DIAG_ORDER:-ref A B AB AB B A ref}; do
  [ $(( DEADLINE - $(el) )) -lt 4 ] && { echo "diag: out of time before $tag" >> $S; break; }
  kd=$D/kernels; [ $tag = ref ] || kd=$D/diag/k$tag
  TAG=$tag ROW=1 MN=1 DIAG_SHAPES=1 TILELAB_KERNELS_DIR=$kd timeout -k 2 $(lim 15) $T run --launch-timeout 10 \
    $D/gemm_fp8_scale_diag.lua >> $W/diag.txt 2>&1
done
echo "diag $(( $(el) - t ))s" >> $S
kill $SMI 2>/dev/null
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv,noheader >> $S 2>&1
echo "total $(el)s" >> $S; pack
cat $S
sed -n '/^shape /,$p' $W/events.txt | cut -c1-200
grep -E "median" $W/diag.txt | cut -c1-120
