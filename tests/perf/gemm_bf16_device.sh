#!/usr/bin/env bash
# Issue 21's bf16 targets on a GPU machine, one run: gemm.wgmma's quick test matrix (FULL=1: --full), then
# tests/perf/gemm_bf16.lua (configs alternated beside cuBLAS in one worker at the eight shapes, checks on odd shapes),
# then the recorded timeline's region statistics of each TIMELINES entry.
#
# Here, without a GPU: `bash tests/perf/gemm_bf16_device.sh --prepare DIR` builds the bundle (cmake/bundle_for_device.sh
# DIR build/tilelab, kernels/, the scripts, and cache.tar.xz: the NVRTC cache filled by compiling every case with the
# same knobs as the run). There: `bash DIR/gemm_bf16_device.sh DIR` (device tool: carry [DIR]); $OUT (default DIR/out)
# receives the logs and summary.txt, printed last.
# Knobs: TEST (1: the quick matrix), FULL (0), GEMM_CONFIGS / GEMM_SHAPES / GEMM_EXTRA / GEMM_CHECKS / GEMM_PASSES /
# GEMM_REP (gemm_bf16.lua's), TIMELINES ('M=..,N=..,K=..|config' entries, ';'-separated). KNOBS=FILE (--prepare): a
# shell file setting them, copied into the bundle as knobs.sh, which the run sources first (so both compile and run
# the same cases).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." 2>/dev/null && pwd)

if [ "${1:-}" = "--prepare" ]; then
  D=${2:?usage: gemm_bf16_device.sh --prepare DIR}
  mkdir -p "$D" && : > "$D/knobs.sh"
  if [ -n "${KNOBS:-}" ]; then cp "$KNOBS" "$D/knobs.sh" && . "$D/knobs.sh"; fi
  TIMELINES=${TIMELINES:-}
  T=$ROOT/build/tilelab
  cp "$T" /tmp/tilelab-gemmbf && strip /tmp/tilelab-gemmbf
  bash "$ROOT/cmake/bundle_for_device.sh" "$D" /tmp/tilelab-gemmbf > /dev/null || exit 1
  mv "$D/tilelab-gemmbf" "$D/tilelab"
  rm -rf "$D/kernels" && cp -r "$ROOT/kernels" "$D/kernels"
  cp "$0" "$D/gemm_bf16_device.sh" && cp "$HERE/device_env.sh" "$HERE/gemm_bf16.lua" "$D/"
  C=${PREPARE_CACHE:-$(mktemp -d)}
  export TILELAB_CACHE_DIR=$C TILELAB_KERNELS_DIR=$D/kernels
  flag=--quick
  [ "${FULL:-0}" = 1 ] && flag=--full
  "$T" test --kernel gemm.wgmma $flag > "$D/prepare_test.txt" 2>&1
  echo "gemm.wgmma $flag compiled: $(tail -1 "$D/prepare_test.txt")"
  GEMM_COMPILE_ONLY=1 "$T" run "$HERE/gemm_bf16.lua" > "$D/prepare_lua.txt" 2>&1
  echo "gemm_bf16.lua: $(grep -c registers "$D/prepare_lua.txt") compiled, $(grep -vc registers "$D/prepare_lua.txt") not"
  # The probe builds: a timeline run compiles the kernel with -DTL_TIMELINE=1 (`compile --timeline`).
  IFS=';' read -ra tls <<< "$TIMELINES"
  for e in "${tls[@]}"; do
    [ -z "$e" ] && continue
    "$T" compile gemm.wgmma --arch sm_90a --timeline --problem "${e%%|*}" --config "${e#*|}" 2>&1 | grep -E 'spills|error'
  done
  tar cJf "$D/cache.tar.xz" -C "$C" . && [ -z "${PREPARE_CACHE:-}" ] && rm -rf "$C"
  du -sh "$D"
  exit 0
fi

D=$(cd "${1:-$HERE}" && pwd)
[ -f "$D/knobs.sh" ] && . "$D/knobs.sh"
TIMELINES=${TIMELINES:-}
. "$D/device_env.sh" gemmbf
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv,noheader >> "$S" 2>&1
if [ "${TEST:-1}" = 1 ]; then
  t0=$(date +%s)
  if [ "${FULL:-0}" = 1 ]; then kernel_test test_full 300 gemm.wgmma --full; else kernel_test test_quick 120 gemm.wgmma; fi
  echo "(test: $(( $(date +%s) - t0 )) s)" >> "$S"
fi
t0=$(date +%s)
timeout 400 "$T" run --launch-timeout 10 --allow-write "$OUT" "$D/gemm_bf16.lua" > "$OUT/bench.txt" 2>&1
echo "== gemm_bf16.lua: rc=$? in $(( $(date +%s) - t0 )) s" >> "$S"
grep -vE "^ *$" "$OUT/bench.txt" | sed -E 's/  +/ /g' | cut -c1-170 >> "$S"
IFS=';' read -ra tls <<< "$TIMELINES"
for e in "${tls[@]}"; do
  [ -z "$e" ] && continue
  echo "== timeline ${e%%|*} config ${e#*|}" >> "$S"
  timeout 60 "$T" timeline gemm.wgmma --problem "${e%%|*}" --config "${e#*|}" --stats -o /tmp/tl.json 2>&1 | tail -12 >> "$S"
done
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv,noheader >> "$S" 2>&1
cat "$S"
