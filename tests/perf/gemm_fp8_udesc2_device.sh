#!/usr/bin/env bash
# gemm.fp8 uniform_desc (docs/perf.md, 2026-11-28, fp8blk15, call 2): A U U A twice beside cuBLASLt at 8192^3, M 128 and
# 256 of N 7168, K 2048, and 16384^2 x 4096, every scaling (nvidia-smi sampled every 100 ms).
# Prepare DIR here (no GPU): mkdir -p DIR && cp build/tilelab /tmp/tl && strip /tmp/tl && bash cmake/bundle_for_device.sh
#   DIR /tmp/tl && mv DIR/tl DIR/tilelab && cp -r kernels DIR/ && cp tests/perf/{device_env.sh,gemm_fp8_cublas.lua,
#   gemm_fp8_cublas_table.py,gemm_fp8_udesc2_device.sh} DIR/, fill TILELAB_CACHE_DIR=/tmp/tlc_fp8blk15 (the lua with GEMM_COMPILE_ONLY=1 and
#   the same GEMM_SETS / GEMM_SHAPES / GEMM_CHECK, `tilelab test --kernel gemm.fp8 --config uniform_desc=true`,
#   `tilelab compile gemm.fp8 --problem M=4096,N=4096,K=4096 [--config uniform_desc=true] --timeline`), tar it into
#   DIR/cache.tar.xz; run `bash DIR/gemm_fp8_udesc2_device.sh` on the device. The call ran GEMM_SETS=defaults,ud,ud,
#   defaults on the binary before uniform_desc=auto, whose defaults were udoff's kernels.
D=$(cd "$(dirname "$0")" && pwd); . "$D/device_env.sh" fp8blk15
smi() { nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv,noheader; }
echo "start: $(smi)" >> $S
mkdir -p $OUT/b
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,clocks_throttle_reasons.active --format=csv,noheader -lms 100 > $OUT/smi.csv 2>&1 &
SP=$!
t1=$(date +%s)
OUT=$OUT/b GEMM_SETS=udoff,ud,ud,udoff GEMM_SHAPES=1,4,5,8 GEMM_ROUNDS=2 GEMM_SUMMARY=1 \
  timeout 75 $T run --launch-timeout 10 --allow-write $OUT/b $D/gemm_fp8_cublas.lua > $OUT/b.txt 2>&1
echo "b rc=$? $(( $(date +%s) - t1 ))s $(grep -c FAIL $OUT/b.txt) FAIL lines; $(smi)" >> $S
kill $SP
cat $S
grep -E "^(shape|[0-9]+x)" $OUT/b.txt | tail -13 | cut -c1-170
awk -F', ' '{print $2}' $OUT/smi.csv | sort | uniq -c | sort -rn | head -8
