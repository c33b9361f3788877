#!/usr/bin/env bash
# `bench --vs cudnn` device run (issue 23 item 2): the GPU tests of the cuDNN and cuBLAS rows, then `tilelab bench
# attn.fwd.wgmma --vs cudnn` on issue 20's anchor shapes (attn.fwd.mma on one, attn.bwd.mma on BWD_SHAPES, varlen's
# refusal, the row without libcudnn), then PyTorch SDPA's cuDNN backend at the same shapes, forward and backward, in
# the same call (tests/perf/attn_cudnn_torch.py). SHAPES='b,h,h_kv,s,d,causal …' (and BWD_SHAPES) pick other shapes.
# Bundle here: cmake/bundle_for_device.sh .dev/cudnn build/tilelab build/tests/test_bench_gpu, cp -r kernels, this
# script, attn_cudnn_torch.py and cuda_timing.py into it, and the NVRTC cache filled by `tilelab compile` of the same
# problems, tarred to tlc.tgz; run as `bash .dev/cudnn/attn_cudnn_device.sh` with carry [".dev/cudnn"]. libcudnn:
# $TL_CUDNN_LIBRARY, else PyTorch's wheel.
D=$PWD/${BUNDLE:-.dev/cudnn}
export LD_LIBRARY_PATH=$D/lib TILELAB_KERNELS_DIR=$D/kernels TILELAB_CACHE_DIR=/tmp/tlc TILELAB_EXE=$D/tilelab
T=$D/tilelab S=$OUT/summary.txt
mkdir -p /tmp/tlc && [ -f $D/tlc.tgz ] && tar xzf $D/tlc.tgz -C /tmp/tlc
export TL_CUDNN_LIBRARY=${TL_CUDNN_LIBRARY:-$(python3 -c 'import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], "lib"))')}
: > $S
say() { echo "$@" >> $S; }
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader >> $S
say "TL_CUDNN_LIBRARY=$TL_CUDNN_LIBRARY: $(ls $TL_CUDNN_LIBRARY | grep -c libcudnn) libcudnn files"
timeout ${GTEST_S:-90} $D/test_bench_gpu --gtest_filter='*Cudnn*:*Cublas*' > $OUT/gtest.txt 2>&1
say "gtest rc=$?: $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' $OUT/gtest.txt | tr '\n' ' ')"
grep -E "Failure|error|Skipped" -A3 $OUT/gtest.txt | head -12 | cut -c1-300 >> $S
SHAPES=${SHAPES:-"8,16,16,4096,128,0 8,16,16,4096,128,1 2,16,16,16384,128,0 2,16,16,16384,128,1 16,16,16,2048,64,0 8,32,8,4096,128,1"}
n=0
for sh in $SHAPES; do
  IFS=, read -r b h hkv s d c <<< "$sh"
  p="batch=$b,heads=$h,heads_kv=$hkv,seq_q=$s,dim=$d,causal=$([ $c = 1 ] && echo true || echo false)"
  for k in attn.fwd.wgmma $([ $n = 0 ] && echo attn.fwd.mma); do
    n=$((n + 1))
    timeout ${BENCH_S:-40} $T bench $k --problem $p --vs cudnn --no-store --json /tmp/rec.json > /tmp/b.txt 2>&1
    say "== $k $p rc=$?"
    grep -E "^(kernel|attn|cudnn)|throughput|error" /tmp/b.txt | cut -c1-300 >> $S
    { echo "== $k $p"; cat /tmp/rec.json; } >> $OUT/records.txt
  done
done
BWD_SHAPES=${BWD_SHAPES:-"8,16,16,4096,128,0 8,16,16,4096,128,1 16,16,16,2048,64,0"}
for sh in $BWD_SHAPES; do
  IFS=, read -r b h hkv s d c <<< "$sh"
  p="batch=$b,heads=$h,heads_kv=$hkv,seq_q=$s,dim=$d,causal=$([ $c = 1 ] && echo true || echo false)"
  timeout ${BENCH_S:-40} $T bench attn.bwd.mma --problem $p --vs cudnn --no-store --json /tmp/rec.json > /tmp/b.txt 2>&1
  say "== attn.bwd.mma $p rc=$?"
  grep -E "^(kernel|attn|cudnn)|throughput|error" /tmp/b.txt | cut -c1-300 >> $S
  { echo "== attn.bwd.mma $p"; cat /tmp/rec.json; } >> $OUT/records.txt
done
timeout 40 $T bench attn.fwd.mma --problem batch=3,seq_q=512,varlen=true --vs cudnn --no-store > /tmp/b.txt 2>&1
say "== varlen rc=$?"; grep -E "^(attn|cudnn)" /tmp/b.txt | cut -c1-300 >> $S
TL_CUDNN_LIBRARY=/nonexistent timeout 40 $T bench attn.fwd.mma --problem batch=2,seq_q=512 --vs cudnn --no-store > /tmp/b.txt 2>&1
say "== no libcudnn rc=$?"; grep -E "^(attn|cudnn)" /tmp/b.txt | cut -c1-300 >> $S
timeout ${TORCH_S:-60} python3 $D/attn_cudnn_torch.py $SHAPES >> $S 2>&1
say "torch rc=$?"
timeout ${TORCH_S:-60} python3 $D/attn_cudnn_torch.py --backward $BWD_SHAPES >> $S 2>&1
say "torch backward rc=$?"
cat $S
