#!/usr/bin/env bash
# Third device call: the quick correctness matrix of every kernel but attn.bwd.mma (run before), one process per
# kernel at once (compiles on 16 cores; runs only check results, so sharing the GPU does not matter).
D=$(cd "${1:?usage: BUNDLE_DIR (see refactor_check_device.sh)}" && pwd)
export LD_LIBRARY_PATH=$D/lib FONTCONFIG_FILE=$D/fonts.conf TILELAB_KERNELS_DIR=$D/after/kernels
R=${OUT:-/tmp}
for k in gemm.wgmma gemm.mma gemm.simt attn.fwd.wgmma attn.fwd.mma mla.decode copy elementwise rmsnorm softmax; do
  (TILELAB_CACHE_DIR=/tmp/c3_$k TILELAB_DB=/tmp/db3_$k timeout 420 $D/after/tilelab test --kernel $k --junit $R/t_$k.xml > $R/t_$k.txt 2>&1; echo "$k rc=$? $(tail -1 $R/t_$k.txt)") &
done
wait
grep -hE " FAIL | FAULT | TIMEOUT |error" $R/t_*.txt | head -10
