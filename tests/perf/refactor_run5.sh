#!/usr/bin/env bash
# Fifth device call: gemm.mma and gemm.simt at the final main (after the plan-mma tail): quick matrices, and each
# benched by both sides twice.
D=$(cd "${1:?usage: BUNDLE_DIR (see refactor_check_device.sh)}" && pwd)
export LD_LIBRARY_PATH=$D/lib FONTCONFIG_FILE=$D/fonts.conf TILELAB_DB=/tmp/db5
for k in gemm.mma gemm.simt; do (TILELAB_CACHE_DIR=/tmp/c5$k TILELAB_KERNELS_DIR=$D/after/kernels timeout 100 $D/after/tilelab test --kernel $k > /tmp/t5$k.txt 2>&1; echo "$k quick: $(tail -1 /tmp/t5$k.txt)") & done; wait
for r in 1 2; do for s in before after; do
  echo "$s simt $(timeout 40 $D/$s/tilelab bench gemm.simt --problem M=4096,N=4096,K=4096 --kernels-dir $D/$s/kernels --no-store 2>&1 | grep -E 'gemm.simt ' | awk '{print $2, $NF}')"
  echo "$s mma $(timeout 40 $D/$s/tilelab bench gemm.mma --problem M=8192,N=8192,K=8192 --config block_N=256,num_stages=3 --kernels-dir $D/$s/kernels --no-store 2>&1 | grep -E 'gemm.mma ' | awk '{print $2, $NF}')"
done; done
