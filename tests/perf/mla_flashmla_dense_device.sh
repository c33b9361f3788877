#!/usr/bin/env bash
# mla.decode beside FlashMLA's dense decode on a GPU machine (issue 19 item 3): the quick test matrix, check-only
# runs of CHECK_CONFIGS, `tilelab bench mla.decode` at FlashMLA's recipe (b 128 varlen: MB s_q 1, h_q 64, s_k
# 4096/8192/16384; CB s_q 2, h_q 128, causal, s_k 4096/8192; and b 32, s_q 1, h_q 128, s_k 32768) for each of
# CONFIGS, alternated per shape and repeated PASSES times, a timeline with stats (TL_PROBLEM, default CB 4096;
# TIMELINE_CONFIG), flashmla_dense.py on the same shapes in one Python process, then (STEPS full) the --full matrix;
# one summary table.
#
# Here, without a GPU: `bash tests/perf/mla_flashmla_dense_device.sh --prepare DIR` builds the bundle
# (cmake/bundle_for_device.sh DIR with a stripped copy of build/tilelab, kernels/, this script, device_env.sh,
# flashmla_dense.py and cache.tar.xz: the NVRTC cache of the test matrix, every bench and check config and the
# timeline's probe build; set the same knobs as for the run). There: `bash .dev/flashmla/unpack.sh; bash
# DIR/mla_flashmla_dense_device.sh DIR` (FlashMLA importable from /tmp/flashmla); $OUT (default DIR/out) receives
# the logs and summary.txt, printed last.
# Knobs: STEPS (any of test check bench timeline flashmla full, run in that order; default test bench timeline
# flashmla), CHECK_CONFIGS (checked on the quick matrix's problems first; one that fails leaves CONFIGS), CONFIGS
# (space-separated, - for the defaults), MB_CONFIGS (benched at the MB shapes only), TL_PROBLEM, TIMELINE_CONFIG,
# PASSES (default 1), ONLY (a regex of the shape names, FlashMLA's too), REPEAT (default 30), FULL_S (the --full run's time limit).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." 2>/dev/null && pwd)
K=mla.decode
SHAPES=(
  "MB 4096|batch=128,seq_q=1,heads=64,seq_k=4096,varlen=true"
  "MB 8192|batch=128,seq_q=1,heads=64,seq_k=8192,varlen=true"
  "MB 16384|batch=128,seq_q=1,heads=64,seq_k=16384,varlen=true"
  "CB 4096|batch=128,seq_q=2,heads=128,seq_k=4096,varlen=true,causal=true"
  "CB 8192|batch=128,seq_q=2,heads=128,seq_k=8192,varlen=true,causal=true"
  "L32 32768|batch=32,seq_q=1,heads=128,seq_k=32768,varlen=true"
)
TL_PROBLEM=${TL_PROBLEM:-batch=128,seq_q=2,heads=128,seq_k=4096,varlen=true,causal=true}

if [ "${1:-}" = "--prepare" ]; then
  D=${2:?usage: mla_flashmla_dense_device.sh --prepare DIR}
  T=$ROOT/build/tilelab
  st=$(mktemp -d) && cp "$T" "$st/tilelab" && strip "$st/tilelab"  # a stripped copy travels
  bash "$ROOT/cmake/bundle_for_device.sh" "$D" "$st/tilelab" || exit 1
  rm -rf "$st"
  rm -rf "$D/kernels" && cp -r "$ROOT/kernels" "$D/kernels"
  cp "$0" "$D/mla_flashmla_dense_device.sh" && cp "$HERE/device_env.sh" "$HERE/flashmla_dense.py" "$HERE/mla_lengths.py" "$HERE/cuda_timing.py" "$D/"
  C=$(mktemp -d)
  export TILELAB_CACHE_DIR=$C TILELAB_KERNELS_DIR=$D/kernels
  flag=$([[ " ${STEPS:-} " == *" full "* ]] && echo --full || echo --quick)
  "$T" test --kernel $K $flag > "$D/prepare_test.txt" 2>&1
  echo "compile-only matrix: $(tail -2 "$D/prepare_test.txt" | head -1)"
  for a in "${SHAPES[@]}"; do
    IFS='|' read -r name problem <<< "$a"
    for c in ${CONFIGS:--} ${MB_CONFIGS:-} ${CHECK_CONFIGS:-}; do
      [ "$c" = - ] && c=""
      "$T" compile $K --problem "$problem" --config "$c" > /dev/null 2>&1 || echo "compile failed: $name $c"
    done
  done
  "$T" compile $K --problem "$TL_PROBLEM" --config "${TIMELINE_CONFIG:-}" --timeline > /dev/null 2>&1 || echo "probe build failed"
  tar cJf "$D/cache.tar.xz" -C "$C" . && rm -rf "$C"
  du -sh "$D"
  exit 0
fi

D=$(cd "${1:-$HERE}" && pwd)
. "$D/device_env.sh" mladense
STEPS=${STEPS:-test bench timeline flashmla}
has() { [[ " $STEPS " == *" $1 "* ]]; }
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader >> "$S" 2>&1

run_test() {
  local m=$1
  has $m || return
  t0=$(date +%s)
  flag=$([ $m = full ] && echo --full || echo --quick)
  timeout "${FULL_S:-300}" "$T" test --kernel $K $flag --timeout 30 > "$OUT/test_$m.txt" 2>&1
  echo "tilelab test --kernel $K $flag: rc=$? in $(( $(date +%s) - t0 )) s: $(grep -E 'passed, ' "$OUT/test_$m.txt" | tail -1)" >> "$S"
  grep -E " (FAIL|ERROR|TIMEOUT|FAULT) " "$OUT/test_$m.txt" | head -12 | cut -c1-300 >> "$S"
}
run_test test

# Check-only runs (`bench --repeat 0`: the float64 comparison, no timing) of CHECK_CONFIGS on the quick matrix's
# problems; a config that errs (a hang, a fault) or fails is dropped from the benches (the call's time is scarce).
CHECK_PROBLEMS=(
  "batch=1,seq_q=1,heads=64,seq_k=20"
  "batch=2,seq_q=2,heads=16,seq_k=140,causal=true"
  "batch=6,seq_q=1,heads=64,seq_k=4096,varlen=true"
  "batch=6,seq_q=4,heads=16,seq_k=140,varlen=true,causal=true,zero_lengths=true"
  "batch=2,seq_q=2,heads=128,seq_k=4096,causal=true"
  "batch=64,seq_q=1,heads=16,seq_k=140,varlen=true,zero_lengths=true"
)
if has check; then
  for c in ${CHECK_CONFIGS:-}; do
    for pr in "${CHECK_PROBLEMS[@]}"; do
      j=$OUT/check_$(echo "$c $pr" | md5sum | cut -c1-8).json
      timeout 40 "$T" bench $K --problem "$pr" --config "$c" --repeat 0 --timeout 10 --no-store --json "$j" > "$j.txt" 2>&1
      res=$(python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print('PASS' if r['passed'] else 'FAIL %.1e' % r['rel_error'])" "$j" 2>/dev/null ||
            echo "ERROR($(grep -m1 -iE 'error|fail|timeout' "$j.txt" | cut -c1-100))")
      echo "check $c | $pr: $res" >> "$S"
      if [ "$res" != PASS ]; then
        CONFIGS=$(for x in ${CONFIGS:--}; do [[ "$x" != *"$c"* ]] && echo "$x"; done | tr '\n' ' ')
        echo "check $c: stopped, dropped from the benches" >> "$S"
        break
      fi
    done
  done
fi

if has bench; then
  printf "%-10s %-34s %9s %9s %8s %6s\n" shape config ms GB/s TFLOP/s check >> "$S"
  for pass in $(seq "${PASSES:-1}"); do
    for a in "${SHAPES[@]}"; do
      IFS='|' read -r name problem <<< "$a"
      [[ "$name" =~ ${ONLY:-.} ]] || continue
      cs=${CONFIGS:--}
      [[ "$name" == MB* ]] && cs="$cs ${MB_CONFIGS:-}"
      for c in $cs; do
        [ "$c" = - ] && c=""
        j=$OUT/bench_${pass}_$(echo "$name $c" | tr ' =,.' '____').json
        timeout 90 "$T" bench $K --problem "$problem" --config "$c" --repeat "${REPEAT:-30}" --timeout 20 --no-store \
          --json "$j" > "$j.txt" 2>&1
        row=$(python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print(f\"{r['time_ms']['median']:.4f} {r['gbps']:.1f} {r['tflops']:.1f} {'PASS' if r['passed'] else 'FAIL'}\")" "$j" 2>/dev/null ||
              echo "- - - ERROR($(grep -m1 -iE 'error|fail' "$j.txt" | cut -c1-80))")
        printf "%-10s %-34s %9s %9s %8s %6s\n" "$name" "${c:-defaults}" $row >> "$S"
      done
    done
  done
fi

if has timeline && { [ -z "${TIMELINE_CONFIG:-}" ] || [[ " ${CONFIGS:-} " == *" $TIMELINE_CONFIG "* ]]; }; then
  timeout 60 "$T" timeline $K --problem "$TL_PROBLEM" --config "${TIMELINE_CONFIG:-}" --out "$OUT/timeline.json" \
    --stats > "$OUT/timeline.txt" 2>&1
  echo "timeline ($TL_PROBLEM${TIMELINE_CONFIG:+, $TIMELINE_CONFIG}): rc=$?" >> "$S"
  grep -vE "^\s*$" "$OUT/timeline.txt" | tail -24 | cut -c1-200 >> "$S"
fi

if has flashmla && [ -f "$D/flashmla_dense.py" ]; then
  PYTHONPATH=/tmp/flashmla${PYTHONPATH:+:$PYTHONPATH} timeout 300 python3 "$D/flashmla_dense.py" >> "$S" 2>&1
fi
run_test full
cat "$S"
