#!/usr/bin/env bash
# gemm.fp8 uniform_desc (docs/perf.md, 2026-11-28, fp8blk15, call 1): the quick matrix with uniform_desc=true forced;
# tests/perf/gemm_fp8_cublas.lua in one worker, A U U A twice at 4096^3 and 4096 x 7168 x 2048, every scaling, beside
# cuBLASLt (nvidia-smi sampled every 100 ms); the probe build's timeline at 4096^3 per-tensor, A and U; GEMM_CHECK=udchk.
# Prepare DIR here (no GPU): mkdir -p DIR && cp build/tilelab /tmp/tl && strip /tmp/tl && bash cmake/bundle_for_device.sh
#   DIR /tmp/tl && mv DIR/tl DIR/tilelab && cp -r kernels DIR/ && cp tests/perf/{device_env.sh,gemm_fp8_cublas.lua,
#   gemm_fp8_cublas_table.py,gemm_fp8_udesc_device.sh} DIR/, fill TILELAB_CACHE_DIR=/tmp/tlc_fp8blk15 (the lua with GEMM_COMPILE_ONLY=1 and
#   the same GEMM_SETS / GEMM_SHAPES / GEMM_CHECK, `tilelab test --kernel gemm.fp8 --config uniform_desc=true`,
#   `tilelab compile gemm.fp8 --problem M=4096,N=4096,K=4096 [--config uniform_desc=true] --timeline`), tar it into
#   DIR/cache.tar.xz; run `bash DIR/gemm_fp8_udesc_device.sh` on the device. The call ran GEMM_SETS=defaults,ud,ud,
#   defaults on the binary before uniform_desc=auto, whose defaults were udoff's kernels.
D=$(cd "$(dirname "$0")" && pwd); . "$D/device_env.sh" fp8blk15
smi() { nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv,noheader; }
echo "start: $(smi)" >> $S
t0=$(date +%s)
kernel_test test_ud 30 gemm.fp8 --config uniform_desc=true
echo "quick $(( $(date +%s) - t0 ))s" >> $S
mkdir -p $OUT/b
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,clocks_throttle_reasons.active --format=csv,noheader -lms 100 > $OUT/smi.csv 2>&1 &
SP=$!
t1=$(date +%s)
OUT=$OUT/b GEMM_SETS=udoff,ud,ud,udoff GEMM_SHAPES=2,3 GEMM_ROUNDS=2 GEMM_SUMMARY=1 \
  timeout 60 $T run --launch-timeout 10 --allow-write $OUT/b $D/gemm_fp8_cublas.lua > $OUT/b.txt 2>&1
echo "b rc=$? $(( $(date +%s) - t1 ))s $(grep -c FAIL $OUT/b.txt) FAIL lines; $(smi)" >> $S
kill $SP
n=0
for cfg in uniform_desc=false uniform_desc=true; do
  n=$((n + 1))
  timeout 12 $T timeline gemm.fp8 --problem M=4096,N=4096,K=4096 ${cfg:+--config $cfg} --out /tmp/tl$n.json --stats > /tmp/tl$n.txt 2>&1
  echo "== timeline rc=$? ${cfg:-default}" >> $OUT/tl.txt; cat /tmp/tl$n.txt >> $OUT/tl.txt
done
t2=$(date +%s)
env -u OUT GEMM_SETS= GEMM_CHECK=udchk timeout 30 $T run --launch-timeout 10 $D/gemm_fp8_cublas.lua > $OUT/c.txt 2>&1
echo "checks rc=$? $(( $(date +%s) - t2 ))s: $(grep -E '^checks' $OUT/c.txt)" >> $S
grep "CHECK FAIL" $OUT/c.txt | head -5 >> $S
echo "end $(( $(date +%s) - t0 ))s: $(smi)" >> $S
python3 $D/gemm_fp8_cublas_table.py $OUT/b/gemm_fp8_cublas.json > $OUT/tables.txt 2>&1
cat $S
grep -E "^(shape|[0-9]+x)" $OUT/b.txt | tail -30 | cut -c1-160
grep -E "epilogue|wgmma|promote|wait_full|timeline rc" $OUT/tl.txt | cut -c1-150
awk -F', ' '{print $2}' $OUT/smi.csv | sort | uniq -c | sort -rn | head -8
