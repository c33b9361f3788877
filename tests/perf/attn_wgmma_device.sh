#!/usr/bin/env bash
# attn.fwd.wgmma device run (issue 6): correctness, then the 8 shapes with a config sweep per shape beside
# cuDNN/flash SDPA (per shape: SDPA, then one `tilelab sweep` process), PASSES times over, then the GPU matrix.
# Bundle here first (branch attn: cmake/bundle_for_device.sh .dev/attn build/tilelab build/tests/test_library_gpu,
# cp -r kernels tests/perf/{attn_sdpa.py,cuda_timing.py,attn_wgmma_device.sh} .dev/attn/, and the NVRTC cache pre-filled
# here by the same tilelab commands without a GPU, tarred to .dev/attn/tlc.tgz), run as
# `bash .dev/attn/attn_wgmma_device.sh` with carry [".dev/attn"] (another bundle: BUNDLE=.dev/NAME). Knobs: STEPS (any
# of quick sweep timeline full gtest), PASSES, SPACE, CAUSAL_SPACE, SAMPLES, TIMELINES ('problem|config' entries
# separated by spaces: `tilelab timeline --stats` of each) and each step's time limit. The summary ($OUT/summary.txt)
# is printed last.
D=$PWD/${BUNDLE:-.dev/attn}
export LD_LIBRARY_PATH=$D/lib TILELAB_KERNELS_DIR=$D/kernels TILELAB_CACHE_DIR=/tmp/tlc TILELAB_DB=/tmp/tl_attn.db
export TILELAB_EXE=$D/tilelab
T=$D/tilelab S=$OUT/summary.txt STEPS=${STEPS:-quick sweep full gtest}
mkdir -p /tmp/tlc && [ -f $D/tlc.tgz ] && tar xzf $D/tlc.tgz -C /tmp/tlc
: > $S
say() { echo "$@" >> $S; }
has() { [[ " $STEPS " == *" $1 "* ]]; }
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader >> $S
if has quick; then  # the defaults and one variation: 6 problems x bf16/f16
  timeout ${QUICK_S:-60} $T test --kernel attn.fwd.wgmma --timeout 8 > $OUT/test_quick.txt 2>&1
  say "tilelab test (quick) rc=$?: $(tail -1 $OUT/test_quick.txt)"
  grep -E " FAIL " $OUT/test_quick.txt | head -8 | cut -c1-260 >> $S
fi
if has sweep; then  # SDPA (cuDNN, flash), then every config of the space, per shape
  for pass in $(seq 1 ${PASSES:-1}); do
    timeout ${SWEEP_S:-200} python3 $D/attn_sdpa.py --tilelab $T --samples ${SAMPLES:-128} \
      --space "${SPACE:-epilogue=direct,smem,tma;block_N=128,176;q_stages=1,2}" \
      --causal-space "${CAUSAL_SPACE:-section=0,8,16;epilogue=direct,tma;q_stages=1,2}" \
      --json $OUT/sdpa_$pass.json > $OUT/sdpa_$pass.txt 2>&1
    say "sdpa+sweep pass $pass rc=$?"
    cat $OUT/sdpa_$pass.txt >> $S
  done
fi
if has timeline; then  # per-region statistics of the probe build, one entry at a time
  n=0
  for e in $TIMELINES; do
    n=$((n + 1))
    timeout ${TIMELINE_S:-30} $T timeline attn.fwd.wgmma --problem "${e%%|*}" --config "${e#*|}" --stats \
      > $OUT/timeline_$n.txt 2>&1
    say "timeline $n rc=$? ($e)"
    grep -E "wait_|tma_issue|gemm_issue|softmax|rescale_p|epilogue|µs|us " $OUT/timeline_$n.txt | head -16 >> $S
  done
fi
if has full; then  # every one-parameter variation over the test problems
  timeout ${FULL_S:-90} $T test --kernel attn.fwd.wgmma --full --timeout 8 --junit $OUT/junit.xml > $OUT/test_full.txt 2>&1
  say "tilelab test --full rc=$?: $(tail -1 $OUT/test_full.txt)"
  grep -E " FAIL " $OUT/test_full.txt | head -8 | cut -c1-260 >> $S
fi
if has gtest; then  # every output position of the GPU matrix (compiles its own kernels: no cache)
  timeout ${GTEST_S:-100} $D/test_library_gpu --gtest_filter='*AttentionWgmma*' > $OUT/gtest.txt 2>&1
  say "gtest rc=$?: $(grep -E '^\[  (PASSED|FAILED) ' $OUT/gtest.txt | head -2 | tr '\n' ' ')"
  grep -E "Failure|attn_fwd_wgmma<" $OUT/gtest.txt | head -8 | cut -c1-260 >> $S
fi
cat $S
