#!/usr/bin/env bash
# attn.fwd.wgmma variants on a GPU (issue 20 items 2-4), one call: `tilelab test` of the kernel, then `tilelab bench
# --vs cudnn` per BENCHES entry ('problem|config', config may be empty) and `tilelab sweep --vs cudnn` per SWEEPS
# entry ('problem|space'), cuDNN's SDPA timed in the same process. Bundle here first: cmake/bundle_for_device.sh
# .dev/attnfwd build/tilelab (stripped), cp -r kernels and this script into it, and the NVRTC cache filled by
# `tilelab compile` of the same problems and configs, tarred to .dev/attnfwd/tlc.tgz; run as
# `bash .dev/attnfwd/attn_fwd_variants_device.sh` with carry [".dev/attnfwd"]. TEST_ARGS (e.g. --full) and each
# step's time limit are knobs. The summary ($OUT/summary.txt) is printed last.
D=$PWD/${BUNDLE:-.dev/attnfwd}
export LD_LIBRARY_PATH=$D/lib FONTCONFIG_FILE=$D/fonts.conf TILELAB_KERNELS_DIR=$D/kernels TILELAB_CACHE_DIR=/tmp/tlc
export TILELAB_EXE=$D/tilelab
export TL_CUDNN_LIBRARY=${TL_CUDNN_LIBRARY:-$(python3 -c 'import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], "lib"))')}
T=$D/tilelab S=$OUT/summary.txt
mkdir -p /tmp/tlc && [ -f $D/tlc.tgz ] && tar xzf $D/tlc.tgz -C /tmp/tlc
: > $S
say() { echo "$@" >> $S; }
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader >> $S
timeout ${TEST_S:-90} $T test --kernel attn.fwd.wgmma $TEST_ARGS --timeout 8 > $OUT/test.txt 2>&1
say "tilelab test $TEST_ARGS rc=$?: $(tail -1 $OUT/test.txt)"
grep -E " FAIL " $OUT/test.txt | head -8 | cut -c1-300 >> $S
for e in $BENCHES; do
  p=${e%%|*} c=${e#*|}
  timeout ${BENCH_S:-40} $T bench attn.fwd.wgmma --problem $p ${c:+--config $c} --vs cudnn --no-store > /tmp/b.txt 2>&1
  say "== bench $p | $c rc=$?"
  grep -E "^(kernel|attn|cudnn)|throughput|error" /tmp/b.txt | cut -c1-300 >> $S
done
n=0
for e in $SWEEPS; do
  n=$((n + 1))
  timeout ${SWEEP_S:-90} $T sweep attn.fwd.wgmma --problem ${e%%|*} --space "${e#*|}" --vs cudnn --plain \
    --db /tmp/sweep_$n.db > $OUT/sweep_$n.txt 2>&1
  say "== sweep $e rc=$?"
  tail -${SWEEP_LINES:-24} $OUT/sweep_$n.txt | cut -c1-220 >> $S
done
cat $S
