#!/usr/bin/env bash
# attn.fwd.wgmma's causal rows beside cuDNN (issue 20 item 3) on a GPU, one call: the quick (and/or --full) matrix,
# `tilelab timeline --stats` of TIMELINES, then each BENCHES shape benched beside cuDNN's SDPA with its configs
# alternated, ROUNDS times (this card varies run to run more than the configs do).
#
# Here, without a GPU: `bash tests/perf/attn_fwd_causal_device.sh --prepare DIR` builds the bundle
# (cmake/bundle_for_device.sh DIR build/tilelab, kernels/, this script, device_env.sh and cache.tar.xz: the NVRTC cache
# filled by compiling everything below for sm_90a; FULL=1 adds the --full matrix). There: `bash
# DIR/attn_fwd_causal_device.sh DIR`; $OUT receives the logs and summary.txt. Knobs: STEPS (any of test full check
# timeline bench; default test timeline bench), ROUNDS (default 2), TEST_S, FULL_S, BENCH_S. BENCHES_FILE,
# TIMELINES_FILE and CHECKS_FILE (one entry a line) replace the lists below, at --prepare (copied into DIR).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." 2>/dev/null && pwd)
K=attn.fwd.wgmma
# problem|configs (space separated; - = the defaults), benched with --vs cudnn: issue 20's forward shapes and the
# configs that the auto schedule and section replaced (BENCHES_FILE, one entry a line, replaces the list).
BENCHES=(
  "batch=4,seq_q=4096,seq_k=4096,heads=16,dim=256,causal=true|- section=16 schedule=static"
  "batch=4,seq_q=4096,seq_k=4096,heads=16,dim=256|- schedule=dynamic"
  "batch=8,seq_q=2048,seq_k=2048,heads=16,dim=256,causal=true|- section=32"
  "batch=2,seq_q=8192,seq_k=8192,heads=16,dim=256,causal=true|- section=8"
  "batch=4,seq_q=4096,seq_k=4096,heads=128,dim=192,dim_v=128,causal=true|- section=16 schedule=static"
  "batch=1,seq_q=16384,seq_k=16384,heads=128,dim=192,dim_v=128,causal=true|-"
  "batch=4,seq_q=4096,seq_k=4096,heads=128,dim=192,dim_v=128|- schedule=dynamic"
  "batch=8,seq_q=4096,seq_k=4096,heads=16,dim=128|- schedule=dynamic"
  "batch=8,seq_q=4096,seq_k=4096,heads=16,dim=128,causal=true|- schedule=static"
  "batch=16,seq_q=2048,seq_k=2048,heads=16,dim=128,causal=true|- schedule=static"
  "batch=4,seq_q=8192,seq_k=8192,heads=16,dim=128,causal=true|- schedule=static"
  "batch=2,seq_q=16384,seq_k=16384,heads=16,dim=128,causal=true|- schedule=static"
  "batch=8,seq_q=4096,seq_k=4096,heads=32,heads_kv=8,dim=128,causal=true|- schedule=static"
  "batch=4,seq_q=8192,seq_k=8192,heads=32,dim=128,causal=true|-"
  "batch=16,seq_q=2048,seq_k=2048,heads=16,dim=64|- schedule=dynamic"
  "batch=16,seq_q=2048,seq_k=2048,heads=16,dim=64,causal=true|- schedule=static"
  "batch=4,seq_q=4096,seq_k=4096,heads=64,heads_kv=8,dim=64,causal=true,sinks=true|- schedule=static"
  "batch=4,seq_q=4096,seq_k=4096,heads=64,heads_kv=8,dim=64,causal=true,sinks=true,window=128|- schedule=static"
  "batch=4,seq_q=4096,seq_k=4096,heads=64,heads_kv=8,dim=64,causal=true,sinks=true,window=2048|- schedule=static"
)
# problem|config: `tilelab timeline --stats` (probe build).
TIMELINES=(
  "batch=4,seq_q=4096,seq_k=4096,heads=16,dim=256,causal=true|"
  "batch=4,seq_q=4096,seq_k=4096,heads=16,dim=256|"
)
# problem|config: float64-checked once, not timed (STEPS check).
CHECKS=()
[ -n "${BENCHES_FILE:-}" ] && mapfile -t BENCHES < "$BENCHES_FILE"
[ -n "${TIMELINES_FILE:-}" ] && mapfile -t TIMELINES < "$TIMELINES_FILE"
[ -n "${CHECKS_FILE:-}" ] && mapfile -t CHECKS < "$CHECKS_FILE"

if [ "${1:-}" = "--prepare" ]; then
  D=${2:?usage: attn_fwd_causal_device.sh --prepare DIR}
  T=$ROOT/build/tilelab
  S=$(mktemp -d)/tilelab && cp "$T" "$S" && strip "$S"
  bash "$ROOT/cmake/bundle_for_device.sh" "$D" "$S" || exit 1
  rm -rf "$D/kernels" && cp -r "$ROOT/kernels" "$D/kernels" && cp "$0" "$D/attn_fwd_causal_device.sh" &&
    cp "$HERE/device_env.sh" "$D/"
  [ -n "${BENCHES_FILE:-}" ] && cp "$BENCHES_FILE" "$D/benches.txt"
  [ -n "${TIMELINES_FILE:-}" ] && cp "$TIMELINES_FILE" "$D/timelines.txt"
  [ -n "${CHECKS_FILE:-}" ] && cp "$CHECKS_FILE" "$D/checks.txt"
  C=${CACHE:-$(mktemp -d)}
  export TILELAB_CACHE_DIR=$C TILELAB_KERNELS_DIR=$D/kernels
  "$T" test --kernel $K > "$D/prepare_test.txt" 2>&1
  echo "compile-only matrix: $(tail -1 "$D/prepare_test.txt")"
  [ -n "${FULL:-}" ] && "$T" test --kernel $K --full > "$D/prepare_full.txt" 2>&1 &&
    echo "compile-only --full: $(tail -1 "$D/prepare_full.txt")"
  for e in "${BENCHES[@]}"; do
    for c in ${e#*|}; do
      [ "$c" = - ] && c=""
      "$T" compile $K --arch sm_90a --problem "${e%%|*}" --config "$c" > /dev/null 2>&1 || echo "compile failed: $e $c"
    done
  done
  for e in "${CHECKS[@]}"; do
    "$T" compile $K --arch sm_90a --problem "${e%%|*}" --config "${e#*|}" > /dev/null 2>&1 || echo "compile failed: check $e"
  done
  for e in "${TIMELINES[@]}"; do
    "$T" compile $K --arch sm_90a --timeline --problem "${e%%|*}" --config "${e#*|}" > /dev/null 2>&1 ||
      echo "compile failed: timeline $e"
  done
  tar cJf "$D/cache.tar.xz" -C "$C" .
  du -sh "$D"
  exit 0
fi

D=$(cd "${1:-$HERE}" && pwd)
. "$D/device_env.sh" attn_fwd_causal
[ -f "$D/benches.txt" ] && mapfile -t BENCHES < "$D/benches.txt"
[ -f "$D/timelines.txt" ] && mapfile -t TIMELINES < "$D/timelines.txt"
[ -f "$D/checks.txt" ] && mapfile -t CHECKS < "$D/checks.txt"
STEPS=${STEPS:-test timeline bench}
has() { [[ " $STEPS " == *" $1 "* ]]; }
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader >> "$S" 2>&1
has test && kernel_test test "${TEST_S:-120}" $K
has full && kernel_test test_full "${FULL_S:-200}" $K --full
if has check; then
  for e in "${CHECKS[@]}"; do kernel_check $K "${e%%|*}" "${e#*|}"; done
fi
if has timeline; then
  for e in "${TIMELINES[@]}"; do
    c=${e#*|}
    timeout 60 "$T" timeline $K --problem "${e%%|*}" ${c:+--config "$c"} --stats > /tmp/t.txt 2>&1
    echo "== timeline $e rc=$?" >> "$S"
    grep -vE "^\s*$" /tmp/t.txt | head -40 | cut -c1-200 >> "$S"
  done
fi
if has bench; then
  for r in $(seq "${ROUNDS:-2}"); do
    for e in "${BENCHES[@]}"; do
      for c in ${e#*|}; do
        [ "$c" = - ] && c=""
        timeout "${BENCH_S:-40}" "$T" bench $K --problem "${e%%|*}" ${c:+--config "$c"} --vs cudnn --no-store > /tmp/b.txt 2>&1
        echo "== round $r ${e%%|*} | ${c:-defaults} rc=$?" >> "$S"
        grep -E "^($K|cudnn)|throughput|rror" /tmp/b.txt | cut -c1-200 >> "$S"
      done
    done
  done
fi
cat "$S"
