#!/usr/bin/env bash
# attn.fwd.wgmma device run (issue 6): correctness first, then the shapes beside cuDNN/flash SDPA, then a
# timeline. Bundle here first (cmake/bundle_for_device.sh .dev/fa3 build/tilelab build/tests/test_library_gpu,
# cp -r kernels tests/perf/attn_sdpa.py tests/perf/attn_wgmma_device.sh .dev/fa3/), run as
# `bash .dev/fa3/attn_wgmma_device.sh` with carry [".dev/fa3"]. Every step has its own time limit and its output in
# $OUT; the summary (also $OUT/summary.txt) comes last.
D=$PWD/.dev/fa3
export LD_LIBRARY_PATH=$D/lib TILELAB_KERNELS_DIR=$D/kernels TILELAB_CACHE_DIR=/tmp/tlc TILELAB_DB=/tmp/tl_fa3.db
export TILELAB_EXE=$D/tilelab
T=$D/tilelab S=$OUT/summary.txt
: > $S
say() { echo "$@" | tee -a $S; }
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee -a $S
# Correctness: every config variation (section and smem_epilogue included) over the test problems, and the worker
# based GPU matrix (25 problems, every output element).
timeout 150 $T test --kernel attn.fwd.wgmma --full --timeout 8 --junit $OUT/junit.xml > $OUT/test.txt 2>&1
say "tilelab test --full rc=$?: $(tail -1 $OUT/test.txt)"
grep -E " FAIL " $OUT/test.txt | head -12 | cut -c1-260 | tee -a $S
timeout 90 $D/test_library_gpu --gtest_filter='*AttentionWgmma*' > $OUT/gtest.txt 2>&1
say "gtest rc=$?: $(grep -E '^\[  (PASSED|FAILED) ' $OUT/gtest.txt | head -2 | tr '\n' ' ')"
grep -E "Failure|attn_fwd_wgmma<" $OUT/gtest.txt | head -16 | cut -c1-260 | tee -a $S
# The shapes: defaults, the balanced causal order, the staged epilogue, and both.
timeout 240 python3 $D/attn_sdpa.py --tilelab $T --run attn.fwd.wgmma --run attn.fwd.wgmma:section=8 \
  --run attn.fwd.wgmma:smem_epilogue=true --run attn.fwd.wgmma:section=8,smem_epilogue=true --json $OUT/sdpa.json \
  > $OUT/sdpa.txt 2>&1
say "sdpa rc=$?"
cat $OUT/sdpa.txt | tee -a $S > /dev/null
timeout 30 $T timeline attn.fwd.wgmma --problem batch=4,seq_q=2048,seq_k=2048,heads=16,causal=true \
  --config section=8,smem_epilogue=true --stats > $OUT/timeline.txt 2>&1
say "timeline rc=$?"
head -14 $OUT/timeline.txt >> $S
cat $S
