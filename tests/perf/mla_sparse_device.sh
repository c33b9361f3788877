#!/usr/bin/env bash
# mla.sparse_decode on a GPU machine (issue 19, item 1): the quick and --full correctness matrices, FlashMLA's V3.2
# recipe (b 64 and 128, h_q 128, s_q 2, s_k 32768 varlen, topk 2048) and its peak cases (b 148, topk 16384, h_q 128
# and 64) benched (checked against the float64 reference, L2 flushed), a timeline, and FlashMLA's own sparse decode
# on the same shapes in one Python process when its build is there; one summary table.
#
# Here, without a GPU: `bash tests/perf/mla_sparse_device.sh --prepare DIR` builds the bundle (cmake/bundle_for_device.sh
# DIR build/tilelab, kernels/, this script, flashmla_sparse.py, and cache.tar.xz: the NVRTC cache of every case).
# There: `bash DIR/mla_sparse_device.sh DIR`; $OUT (default DIR/out) receives the logs and summary.txt, printed last.
# Knobs: STEPS (any of test full check bench sweep variants timeline flashmla; default test bench timeline), FULL_S, REPEAT,
# CONFIGS (the configs benched, space-separated, - for the defaults), ONLY (a regex of the shape names benched),
# CONFIGS_64 (those benched on the 64-head shape instead, e.g. without crossover, which needs more heads),
# CHECK_CONFIGS (the configs of the check step), TIMELINE_CONFIG (the timeline's config; default the defaults),
# SPACE (the sweep step's `tilelab sweep --space` over the four shapes, checked on 4096 sampled positions; default
# late_reload=false,true) and ROUNDS (2: the sweep again with each axis's values reversed, so each config runs once
# early and once late).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." 2>/dev/null && pwd)
K=mla.sparse_decode
V32="seq_q=2,heads=128,seq_k=32768,topk=2048,varlen=true"
# name|problem|FlashMLA on the issue's H100 (TFLOP/s)
SHAPES=(
  "V3.2 b64|batch=64,$V32|379"
  "V3.2 b128|batch=128,$V32|390"
  "peak h128|batch=148,seq_q=2,heads=128,seq_k=32768,topk=16384,varlen=true|437"
  "peak h64|batch=148,seq_q=2,heads=64,seq_k=32768,topk=16384,varlen=true|342"
)

if [ "${1:-}" = "--prepare" ]; then
  D=${2:?usage: mla_sparse_device.sh --prepare DIR}
  T=$ROOT/build/tilelab
  bash "$ROOT/cmake/bundle_for_device.sh" "$D" "$T" || exit 1
  rm -rf "$D/kernels" && cp -r "$ROOT/kernels" "$D/kernels" && cp "$0" "$D/mla_sparse_device.sh" && cp "$HERE/device_env.sh" "$D/"
  cp "$HERE/flashmla_sparse.py" "$HERE/cuda_timing.py" "$D/" 2>/dev/null
  [ -d "$ROOT/../shared/baselines/flashmla" ] && rm -rf "$D/baselines" && cp -r "$ROOT/../shared/baselines/flashmla" "$D/baselines"
  [ -n "${VARIANTS_FROM:-}" ] && rm -rf "$D/variants" && cp -r "$VARIANTS_FROM" "$D/variants"
  C=$(mktemp -d)
  export TILELAB_CACHE_DIR=$C TILELAB_KERNELS_DIR=$D/kernels
  "$T" test --kernel $K --full > "$D/prepare_test.txt" 2>&1
  echo "compile-only matrix: $(tail -2 "$D/prepare_test.txt" | head -1)"
  for a in "${SHAPES[@]}"; do
    IFS='|' read -r name problem _ <<< "$a"
    for c in ${CONFIGS:--} ${CHECK_CONFIGS:-}; do
      [ "$c" = - ] && c=""
      "$T" compile $K --problem "$problem" --config "$c" > /dev/null 2>&1 || echo "compile failed: $name $c"
      "$T" compile $K --problem "$problem" --config "$c" --timeline > /dev/null 2>&1 || echo "probe build failed: $name $c"
    done
  done
  for v in "$D"/variants/*/; do
    [ -d "$v" ] && TILELAB_KERNELS_DIR=$v "$T" compile $K --problem "batch=64,$V32" > /dev/null 2>&1 || true
  done
  tar cJf "$D/cache.tar.xz" -C "$C" . && rm -rf "$C"
  du -sh "$D"
  exit 0
fi

D=$(cd "${1:-$HERE}" && pwd)
. "$D/device_env.sh" sparse
STEPS=${STEPS:-test bench timeline}
has() { [[ " $STEPS " == *" $1 "* ]]; }
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader >> "$S" 2>&1

for m in test full; do
  has $m || continue
  t0=$(date +%s)
  flag=$([ $m = full ] && echo --full || echo --quick)
  timeout "${FULL_S:-240}" "$T" test --kernel $K $flag --timeout 30 --junit "$OUT/junit_$m.xml" > "$OUT/test_$m.txt" 2>&1
  echo "tilelab test --kernel $K $flag: rc=$? in $(( $(date +%s) - t0 )) s: $(grep -E 'passed, ' "$OUT/test_$m.txt" | tail -1)" >> "$S"
  grep -E " (FAIL|ERROR|TIMEOUT|FAULT) " "$OUT/test_$m.txt" | head -12 | cut -c1-400 >> "$S"
done

# Check-only runs (`bench --repeat 0`: the reference comparison, no timing) of CHECK_CONFIGS (space-separated) on
# the quick matrix's 128-head problems and two edge cases: a config the quick matrix does not vary (crossover).
CHECK_PROBLEMS=(
  "batch=3,block_size=61,heads=128,invalid=true,padded_blocks=true,seq_k=1000,seq_q=2,topk=576,topk_length=true"
  "batch=6,block_size=2,heads=128,seq_k=2046,seq_q=1,topk=2048,varlen=true"
  "batch=64,heads=128,invalid=true,seq_k=4096,seq_q=2,topk=512"
  "all_invalid=true,batch=4,block_size=53,heads=128,seq_k=650,seq_q=3,sink=true,topk=576,zero_lengths=true"
  "batch=1,heads=128,seq_k=20,seq_q=1,topk=1"
)
# A config that errs (a hang, a fault) stops its checks and is dropped from the benches: the call's time is scarce.
if has check; then
  for c in ${CHECK_CONFIGS:-crossover=true}; do
    for pr in "${CHECK_PROBLEMS[@]}"; do
      j=$OUT/check_$(echo "$c $pr" | md5sum | cut -c1-8).json
      t0=$(date +%s)
      timeout 45 "$T" bench $K --problem "$pr" --config "$c" --repeat 0 --timeout 20 --no-store --json "$j" > "$j.txt" 2>&1
      res=$(python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print('PASS' if r['passed'] else 'FAIL')" "$j" 2>/dev/null ||
            echo "ERROR($(grep -m1 -iE 'error|fail|timeout' "$j.txt" | cut -c1-100))")
      echo "check $c | $pr: $res ($(( $(date +%s) - t0 ))s)" >> "$S"
      if [[ $res == ERROR* ]]; then
        CONFIGS=$(for x in ${CONFIGS:--}; do [ "$x" != "$c" ] && echo "$x"; done | tr '\n' ' ')
        echo "check $c: stopped, dropped from the benches" >> "$S"
        break
      fi
    done
  done
fi

if has bench; then
  printf "%-10s %-28s %8s %9s %8s %6s %9s\n" shape config TFLOP/s ms GB/s check "issue:FM" >> "$S"
  for a in "${SHAPES[@]}"; do
    IFS='|' read -r name problem fm <<< "$a"
    [[ "$name" =~ ${ONLY:-.} ]] || continue
    cs=${CONFIGS:--}
    [[ $problem == *heads=64,* ]] && cs=${CONFIGS_64:-$cs}
    for c in $cs; do
      [ "$c" = - ] && c=""
      j=$OUT/bench_$(echo "$name $c" | tr ' =,.' '____').json
      t0=$(date +%s)
      timeout 150 "$T" bench $K --problem "$problem" --config "$c" --repeat "${REPEAT:-20}" --timeout 60 --no-store \
        --json "$j" > "$j.txt" 2>&1
      row=$(python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print(f\"{r['tflops']:.0f} {r['time_ms']['median']:.4f} {r['gbps']:.0f} {'PASS' if r['passed'] else 'FAIL'}\")" "$j" 2>/dev/null ||
            echo "- - - ERROR($(grep -m1 -iE 'error|fail' "$j.txt" | cut -c1-80))")
      printf "%-10s %-28s %8s %9s %8s %6s %9s  (%ss)\n" "$name" "${c:-defaults}" $row "$fm" $(( $(date +%s) - t0 )) >> "$S"
    done
  done
fi

if has sweep; then
  SPACE=${SPACE:-late_reload=false,true}
  problems=()
  for a in "${SHAPES[@]}"; do IFS='|' read -r _ problem _ <<< "$a"; problems+=(--problem "$problem"); done
  for round in $(seq 1 "${ROUNDS:-2}"); do
    space=$SPACE
    [ "$round" = 2 ] && space=$(python3 -c "import sys; print(';'.join(a.split('=')[0] + '=' + ','.join(reversed(a.split('=')[1].split(','))) for a in sys.argv[1].split(';')))" "$SPACE")
    t0=$(date +%s)
    timeout "${SWEEP_S:-170}" "$T" sweep $K "${problems[@]}" --space "$space" --samples 4096 --no-store --fresh --plain \
      --timeout 60 --json "$OUT/sweep$round.json" > "$OUT/sweep$round.txt" 2>&1
    echo "sweep round $round ($space): rc=$? in $(( $(date +%s) - t0 )) s" >> "$S"
    python3 - "$OUT/sweep$round.json" "$SPACE" >> "$S" 2>&1 <<'PY'
import json, sys
axes = [a.split("=")[0] for a in sys.argv[2].split(";")]
for p in json.load(open(sys.argv[1]))["points"]:
    pr, c = p["problem"], p["config"]
    name = f"b{pr['batch']} h{pr['heads']} topk{pr['topk']}"
    sw = ",".join(f"{k}={str(c.get(k)).lower()}" for k in axes)
    row = (f"{p['tflops']:7.1f} TFLOP/s {p['median_ms']:8.4f} ms {'PASS' if p['passed'] else 'FAIL'}" if "median_ms" in p
           else f"{p['status']} {p['reason'][:80]}")
    print(f"  {name:22s} {sw:36s} {row}")
PY
  done
fi

# Kernel-source variants (VARIANTS_DIR: one kernels/ tree per subfolder, e.g. ablations), V3.2 b64 each.
if has variants && [ -d "${VARIANTS_DIR:-$D/variants}" ]; then
  for v in "${VARIANTS_DIR:-$D/variants}"/*/; do
    n=$(basename "$v") j=$OUT/variant_$n.json
    TILELAB_KERNELS_DIR=$v timeout 120 "$T" bench $K --problem "batch=64,$V32" --repeat "${REPEAT:-20}" --timeout 60 \
      --no-store --json "$j" > "$j.txt" 2>&1
    row=$(python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print(f\"{r['tflops']:.0f} {r['time_ms']['median']:.4f} {'PASS' if r['passed'] else 'FAIL'}\")" "$j" 2>/dev/null ||
          echo "- - ERROR($(grep -m1 -iE 'error|fail' "$j.txt" | cut -c1-80))")
    printf "variant %-8s V3.2 b64 %s\n" "$n" "$row" >> "$S"
  done
fi

if has timeline; then
  timeout 120 "$T" timeline $K --problem "batch=64,$V32" --config "${TIMELINE_CONFIG:-}" --out "$OUT/timeline.json" \
    --stats > "$OUT/timeline.txt" 2>&1
  echo "timeline (V3.2 b64${TIMELINE_CONFIG:+, $TIMELINE_CONFIG}): rc=$?" >> "$S"
  grep -E "^ *(index|load_wait|load_issue|copy_wait|dequant|wait_kv|qk|softmax|pv|combine) " "$OUT/timeline.txt" | head -12 >> "$S"
  tail -3 "$OUT/timeline.txt" | cut -c1-200 >> "$S"
fi

if has flashmla && [ -f "$D/flashmla_sparse.py" ]; then
  # FlashMLA built by ../shared/baselines/flashmla/build_on_device.sh (copied into the bundle) into /tmp/flashmla.
  t0=$(date +%s)
  bash "$D/baselines/build_on_device.sh" >> "$OUT/flashmla_build.txt" 2>&1
  echo "FlashMLA build: rc=$? in $(( $(date +%s) - t0 )) s" >> "$S"
  # A build restored without FlashMLA's tests/ (.dev/flashmla's unpack.sh): its quantizer from the source tarball.
  if [ ! -d /tmp/flashmla/tests ]; then
    mkdir -p /tmp/fmsrc && tar xzf "$D"/baselines/flashmla-*.tgz -C /tmp/fmsrc && cp -r /tmp/fmsrc/*/tests /tmp/flashmla/
  fi
  PYTHONPATH=/tmp/flashmla${PYTHONPATH:+:$PYTHONPATH} timeout 300 python3 "$D/flashmla_sparse.py" >> "$S" 2>&1
fi
cat "$S"
