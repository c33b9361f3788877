#!/bin/bash
# Merged main on the GPU in one call: every GPU test binary in .dev/main (stripped, cmake/bundle_for_device.sh), the
# changed kernels' quick matrices, the read-based L2 flush beside the memset one (.dev/main/tilelab_old: the previous
# main's binary), the session's kernels beside their baselines. Log also in $OUT.
D=$PWD/.dev/main
export LD_LIBRARY_PATH=$D/lib FONTCONFIG_FILE=$D/fonts.conf TILELAB_EXE=$D/tilelab TILELAB_CACHE_DIR=/tmp/tlc
export TL_CUDNN_LIBRARY=$(python3 -c 'import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], "lib"))')
T=$D/tilelab
L=${OUT:-/tmp}/log.txt
exec > >(tee -a "$L") 2>&1
nvidia-smi --query-gpu=index,name --format=csv,noheader
for t in "$D"/test_*_gpu; do
  s=$SECONDS; timeout 90 "$t" > "/tmp/$(basename "$t").log" 2>&1; rc=$?
  echo "$(basename "$t"): exit $rc $((SECONDS-s))s $(grep -E '^\[  (PASSED|FAILED) ' "/tmp/$(basename "$t").log" | tr '\n' ' ')"
  grep -E '^\[  FAILED  \] [A-Za-z]' "/tmp/$(basename "$t").log" | head -5
done
for k in attn.decode gemm.dequant gemm.wgmma attn.bwd.wgmma mla.sparse_decode attn.fwd.wgmma mla.sparse_prefill; do
  s=$SECONDS; timeout 120 $T test --kernel $k > /tmp/q.log 2>&1; echo "test $k: exit $? $((SECONDS-s))s: $(tail -1 /tmp/q.log)"
  grep -E " FAIL " /tmp/q.log | head -5
done
b() { local bin=$1; shift; echo "== $(basename $bin) bench $*"; timeout 60 $bin bench "$@" --no-store 2>&1 | grep -vE "^\s*$|^NVIDIA|^kernel " | tail -4; }
for bin in $D/tilelab_old $T; do
  b $bin gemm.dequant --problem M=1,N=28672,K=8192 $([ $bin = $T ] && echo --config path=wgmma)
  b $bin copy --problem n=67108864
  b $bin gemm.wgmma --problem M=4096,N=4096,K=4096 --vs cublas
done
b $T gemm.dequant --problem M=1,N=28672,K=8192
b $T gemm.wgmma --problem M=8192,N=8192,K=8192 --vs cublas
b $T attn.decode --problem batch=8,seq_q=1,seq_k=16384,heads=32,heads_kv=8,dim=128 --vs cudnn
b $T attn.bwd.wgmma --problem batch=8,seq_q=4096,seq_k=4096,heads=16,dim=128 --vs cudnn
b $T mla.sparse_decode --problem batch=64,seq_q=2,heads=128,seq_k=32768,topk=2048,varlen=true
