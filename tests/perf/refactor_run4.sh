#!/usr/bin/env bash
# Fourth device call: `tilelab test --full` of each kernel, one process per kernel at once; a kernel whose matrix
# outlasts the time prints how far it got (passed/failed so far).
D=$(cd "${1:?usage: BUNDLE_DIR (see refactor_check_device.sh)}" && pwd)
export LD_LIBRARY_PATH=$D/lib FONTCONFIG_FILE=$D/fonts.conf TILELAB_KERNELS_DIR=$D/after/kernels
R=${OUT:-/tmp}
for k in gemm.wgmma gemm.mma attn.fwd.wgmma attn.fwd.mma mla.decode attn.bwd.mma gemm.simt softmax rmsnorm; do
  (TILELAB_CACHE_DIR=/tmp/c4_$k TILELAB_DB=/tmp/db4_$k timeout 500 $D/after/tilelab test --kernel $k --full --timeout 10 > $R/f_$k.txt 2>&1; rc=$?
   echo "$k rc=$rc: $(tail -1 $R/f_$k.txt | cut -c1-60) | PASS $(grep -c ' PASS ' $R/f_$k.txt) FAIL $(grep -cE ' FAIL | FAULT | TIMEOUT ' $R/f_$k.txt) SKIP $(grep -c ' SKIP ' $R/f_$k.txt)") &
done
wait
grep -hE " FAIL | FAULT | TIMEOUT " $R/f_*.txt | cut -c1-200 | head -12
