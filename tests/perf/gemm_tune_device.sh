#!/usr/bin/env bash
# Issue 21's bf16 and dequant-prefill targets on a GPU machine, one run: gemm.wgmma's and gemm.dequant's quick test
# matrices; tests/perf/gemm_streamk.lua (stream-K checks on odd shapes, the eight issue-21 shapes with each schedule
# beside cuBLAS); the stream-K schedule alone with the base's kernels and this tree's, alternated (skbase); a sweep of
# tile shapes, clusters and orders at the two shapes furthest below cuBLAS (--vs cublas); and
# tests/perf/gemm_dequant_prefill.lua with each tree's kernels in turn (DEQUANT_TREES), each beside bf16 gemm.wgmma in
# its own process.
#
# Here, without a GPU: `bash tests/perf/gemm_tune_device.sh --prepare DIR [BASE_COMMIT [NAME=COMMIT ...]]` builds the
# bundle (cmake/bundle_for_device.sh DIR build/tilelab, kernels/, the base commit's kernels/ as kernels_base/ and each
# NAME's as kernels_NAME/, the scripts, and cache.tar.xz: the NVRTC cache filled by compiling every case). There:
# `bash DIR/gemm_tune_device.sh DIR` (device tool: carry [DIR]); $OUT (default DIR/out) receives the logs and
# summary.txt, printed last.
# Knobs: STEPS (any of test streamk skbase sweep dequant; default test streamk sweep dequant; --prepare compiles only
# what they need), SWEEP_SPACE, SWEEP_PROBLEMS (space-separated), GEMM_PASSES / GEMM_REP / GEMM_SCHEDULES /
# GEMM_PARTS (gemm_streamk.lua's), DEQUANT_TREES (kernel folders of the bundle, in run order; default "kernels
# kernels_base kernels kernels_base"), and gemm_dequant_prefill.lua's DEQUANT_SHAPES / DEQUANT_REP (passed through).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." 2>/dev/null && pwd)
SWEEP_SPACE=${SWEEP_SPACE:-block_N=128,256;raster=m,n;panel=8,16;cluster_M=1,2;cluster_N=1,2}
SWEEP_PROBLEMS=${SWEEP_PROBLEMS:-M=3000,N=5000,K=4096 M=4096,N=4096,K=4096}
export GEMM_PARTS=${GEMM_PARTS:-check,time} GEMM_SCHEDULES=${GEMM_SCHEDULES:-data_parallel,stream_k,auto}
export GEMM_PASSES=${GEMM_PASSES:-2} GEMM_REP=${GEMM_REP:-20}
sweep_args() { for p in $SWEEP_PROBLEMS; do printf -- '--problem %s ' "$p"; done; }
STEPS=${STEPS:-test streamk sweep dequant}
has() { [[ " $STEPS " == *" $1 "* ]]; }

if [ "${1:-}" = "--prepare" ]; then
  D=${2:?usage: gemm_tune_device.sh --prepare DIR [BASE_COMMIT]}
  BASE=${3:-main}
  EXTRA=("${@:4}")
  T=$ROOT/build/tilelab
  mkdir -p "$D" && cp "$T" /tmp/tilelab-gemmtune && strip /tmp/tilelab-gemmtune
  bash "$ROOT/cmake/bundle_for_device.sh" "$D" /tmp/tilelab-gemmtune > /dev/null || exit 1
  mv "$D/tilelab-gemmtune" "$D/tilelab"
  rm -rf "$D/kernels" "$D/kernels_base" && cp -r "$ROOT/kernels" "$D/kernels"
  for t in "base=$BASE" "${EXTRA[@]}"; do
    rm -rf "$D/kernels_${t%%=*}" && mkdir -p "$D/kernels_${t%%=*}"
    git -C "$ROOT" archive "${t#*=}" kernels | tar x -C "$D/kernels_${t%%=*}" --strip-components=1
  done
  cp "$0" "$D/gemm_tune_device.sh" && cp "$HERE/device_env.sh" "$HERE/gemm_streamk.lua" "$HERE/gemm_dequant_prefill.lua" "$D/"
  C=$(mktemp -d)
  export TILELAB_CACHE_DIR=$C TILELAB_KERNELS_DIR=$D/kernels
  for k in gemm.wgmma gemm.dequant; do
    "$T" test --kernel $k > "$D/prepare_$k.txt" 2>&1
    echo "$k quick matrix compiled: $(tail -2 "$D/prepare_$k.txt" | head -1)"
  done
  has streamk && GEMM_COMPILE_ONLY=1 "$T" run "$HERE/gemm_streamk.lua" 2>&1 | grep -vc "registers" |
    sed 's/^/gemm_streamk.lua compile failures: /'
  has sweep && "$T" sweep gemm.wgmma $(sweep_args) --space "$SWEEP_SPACE" --no-store --plain 2>&1 | tail -2
  for kd in "$D"/kernels*; do
    TILELAB_KERNELS_DIR=$kd "$T" run "$HERE/gemm_dequant_prefill.lua" 2>&1 | tail -1
  done
  has skbase && TILELAB_KERNELS_DIR=$D/kernels_base GEMM_COMPILE_ONLY=1 GEMM_PARTS=time GEMM_SCHEDULES=stream_k \
    "$T" run "$HERE/gemm_streamk.lua" 2>&1 | grep -vc "registers" | sed 's/^/base stream-K compile failures: /'
  tar cJf "$D/cache.tar.xz" -C "$C" . && rm -rf "$C"
  du -sh "$D"
  exit 0
fi

D=$(cd "${1:-$HERE}" && pwd)
. "$D/device_env.sh" gemmtune
echo "steps: $STEPS" >> "$S"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv,noheader >> "$S" 2>&1
if has test; then
  for k in gemm.wgmma gemm.dequant; do
    t0=$(date +%s)
    timeout 120 "$T" test --kernel $k --timeout 10 > "$OUT/test_$k.txt" 2>&1
    echo "tilelab test --kernel $k: rc=$? in $(( $(date +%s) - t0 )) s: $(grep -E 'passed, ' "$OUT/test_$k.txt")" >> "$S"
    grep -E " FAIL | FAULT | TIMEOUT " "$OUT/test_$k.txt" | head -8 | cut -c1-300 >> "$S"
  done
fi
if has streamk; then
  t0=$(date +%s)
  timeout 300 "$T" run --launch-timeout 10 --allow-write "$OUT" "$D/gemm_streamk.lua" > "$OUT/streamk.txt" 2>&1
  echo "== gemm_streamk.lua ($GEMM_PARTS; $GEMM_SCHEDULES; passes $GEMM_PASSES, rep $GEMM_REP): rc=$? in $(( $(date +%s) - t0 )) s" >> "$S"
  grep -vE "^ *$" "$OUT/streamk.txt" | sed -E 's/  +/ /g' | cut -c1-170 >> "$S"
fi
if has skbase; then
  for kd in kernels_base kernels kernels_base kernels; do
    t0=$(date +%s)
    TILELAB_KERNELS_DIR=$D/$kd GEMM_PARTS=time GEMM_SCHEDULES=stream_k GEMM_PASSES=1 \
      env -u OUT timeout 120 "$T" run --launch-timeout 10 "$D/gemm_streamk.lua" > "$OUT/skbase_$kd.txt" 2>&1
    echo "== stream_k, $kd: rc=$? in $(( $(date +%s) - t0 )) s" >> "$S"
    grep -E "^gemm" "$OUT/skbase_$kd.txt" | sed -E 's/  +/ /g' | cut -c1-170 >> "$S"
  done
fi
if has sweep; then
  t0=$(date +%s)
  timeout 240 "$T" sweep gemm.wgmma $(sweep_args) --space "$SWEEP_SPACE" --vs cublas --no-store --plain --timeout 10 \
    --json "$OUT/sweep.json" > "$OUT/sweep.txt" 2>&1
  echo "== sweep $SWEEP_SPACE: rc=$? in $(( $(date +%s) - t0 )) s" >> "$S"
  grep -vE "^ *$" "$OUT/sweep.txt" | cut -c1-200 >> "$S"
fi
if has dequant; then
  for kd in ${DEQUANT_TREES:-kernels kernels_base kernels kernels_base}; do
    t0=$(date +%s)
    echo "== gemm_dequant_prefill.lua, $kd" >> "$S"
    TILELAB_KERNELS_DIR=$D/$kd timeout 90 "$T" run "$D/gemm_dequant_prefill.lua" >> "$S" 2>&1
    echo "rc=$? in $(( $(date +%s) - t0 )) s" >> "$S"
  done
fi
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv,noheader >> "$S" 2>&1
cat "$S"
