#!/usr/bin/env bash
# gemm.wgmma 2-CTA clusters, one device run: smoke checks of the cluster paths (a hang costs a watchdog timeout per
# case, so the matrix and the timings of clusters run only when these pass), the timings (alone on the GPU), the
# CLI benches, then the --full correctness matrix. Bundle: cmake/bundle_for_device.sh .dev/cluster build/tilelab,
# kernels/, this script, gemm_cluster.lua and cache.tar.xz (the NVRTC cache filled here without a GPU).
D=$PWD/.dev/cluster
export LD_LIBRARY_PATH=$D/lib TILELAB_KERNELS_DIR=$D/kernels TILELAB_CACHE_DIR=/tmp/tlc_cluster TILELAB_DB=/tmp/tl_cluster.db
mkdir -p $TILELAB_CACHE_DIR && tar xJf $D/cache.tar.xz -C $TILELAB_CACHE_DIR
T=$D/tilelab
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv > $OUT/smi.txt 2>&1
ok=1
for pc in "M=257,N=136,K=72|cluster_M=2,tma_store=false" "M=257,N=136,K=72|cluster_N=2,tma_store=false" \
          "M=513,N=520,K=1000,trans_B=false|cluster_M=2" "M=1,N=8,K=8,trans_B=false|cluster_N=2" \
          "M=2113,N=2312,K=136|cluster_M=2" "M=2113,N=2312,K=136|cluster_N=2"; do
  timeout 40 $T bench gemm.wgmma --problem ${pc%|*} --config ${pc#*|} --repeat 0 --timeout 5 --no-store > $OUT/smoke.txt 2>&1
  rc=$?; echo "smoke ${pc}: rc=$rc $(grep -E 'PASS|FAIL|error' $OUT/smoke.txt | head -2 | tr '\n' ' ' | cut -c1-200)"
  [ $rc -eq 0 ] || ok=0
done
# The launcher's persistent-grid fit (how many CTAs / pairs run at once), from the worker's debug log.
for c in cluster_M=1 cluster_M=2; do
  TILELAB_LOG=debug timeout 30 $T bench gemm.wgmma --problem M=4096,N=4096,K=4096 --config $c --repeat 3 --no-store 2>&1 |
    grep -i "persistent grid" | head -2 | cut -c1-200
done
t0=$(date +%s)
if [ $ok = 1 ]; then
  OUT=$OUT timeout 200 stdbuf -oL $T run --allow-write $OUT $D/gemm_cluster.lua > $OUT/bench.txt 2>&1; echo "bench rc=$? $(( $(date +%s) - t0 ))s"
  for p in M=8192,N=8192,K=8192 M=4096,N=4096,K=4096 M=8192,N=8192,K=1024 M=4096,N=4096,K=512; do
    for c in cluster_M=1 cluster_M=2 cluster_N=2; do
      echo "== $p $c"; timeout 30 $T bench gemm.wgmma --problem $p --config $c --vs cublas --no-store 2>&1 | tail -6
    done
  done > $OUT/bench_cli.txt 2>&1
  echo "cli benches $(( $(date +%s) - t0 ))s"
  t1=$(date +%s)
  timeout 170 $T test --kernel gemm.wgmma --full --timeout 5 --junit $OUT/test_wgmma.xml > $OUT/test_wgmma.txt 2>&1
  echo "tests rc=$? $(( $(date +%s) - t1 ))s"
fi
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv >> $OUT/smi.txt 2>&1
cat $OUT/smi.txt
cat $OUT/bench.txt 2>/dev/null
grep -E "^==|cublas|TFLOP" $OUT/bench_cli.txt 2>/dev/null | cut -c1-150 | head -40
tail -2 $OUT/test_wgmma.txt 2>/dev/null; grep -E " FAIL " $OUT/test_wgmma.txt 2>/dev/null | head -8 | cut -c1-260
