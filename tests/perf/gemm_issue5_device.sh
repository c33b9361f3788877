#!/usr/bin/env bash
# gemm (issue 5) device run: timings first (alone on the GPU), then both correctness matrices in parallel.
D=$PWD/.dev/gemm
export LD_LIBRARY_PATH=$D/lib TILELAB_KERNELS_DIR=$D/kernels TILELAB_CACHE_DIR=/tmp/tlc TILELAB_DB=/tmp/tl_gemm.db
mkdir -p /tmp/tlc && tar xJf $D/cache.tar.xz -C /tmp/tlc
T=$D/tilelab
$T info > $OUT/info.txt 2>&1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,power.limit --format=csv > $OUT/smi.txt 2>&1
t0=$(date +%s)
OUT=$OUT timeout 150 stdbuf -oL $T run --allow-write $OUT $D/gemm_issue5.lua > $OUT/bench.txt 2>&1; echo "bench rc=$? $(( $(date +%s) - t0 ))s"
timeout 30 $T bench gemm.wgmma --problem M=8192,N=8192,K=8192 --vs cublas --no-store > $OUT/bench_cli.txt 2>&1
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv >> $OUT/smi.txt 2>&1
t1=$(date +%s)
timeout 110 $T test --kernel gemm.wgmma --full --junit $OUT/test_wgmma.xml > $OUT/test_wgmma.txt 2>&1 &
timeout 110 $T test --kernel gemm.mma --full --junit $OUT/test_mma.xml > $OUT/test_mma.txt 2>&1 &
wait
echo "tests $(( $(date +%s) - t1 ))s"
if command -v cuobjdump > /dev/null; then
  for k in 5e4bbefaffd83189ddff7f428fe2d662 774d5413c2414401e505c73f4f2e551e b0821148353a0ff93fe91247ba69f146 2aa1f353d377fa2baef671a8e6f0c188; do
    cuobjdump -sass /tmp/tlc/kernels/${k:0:2}/$k.cubin > $OUT/sass_$k.txt 2>&1
  done
fi
head -4 $OUT/info.txt | cut -c1-160
cat $OUT/smi.txt
cat $OUT/bench.txt
grep -E "cublas|TFLOP|median" $OUT/bench_cli.txt | head -6
for f in test_wgmma test_mma; do echo "== $f"; tail -1 $OUT/$f.txt; grep -E " FAIL " $OUT/$f.txt | head -8 | cut -c1-260; done
