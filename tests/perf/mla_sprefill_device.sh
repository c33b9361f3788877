#!/usr/bin/env bash
# mla.sparse_prefill on a GPU machine (issue 19, item 2): the quick and --full correctness matrices, FlashMLA's V3.2
# prefill shape (s_q 4096, h_q 128, topk 2048, s_kv 8192 and 32768) and a 64-head one benched (checked against the
# float64 reference, L2 flushed), a timeline, and FlashMLA's own sparse prefill on the same shapes in one Python
# process (built in the background while the tests run); one summary table.
#
# Here, without a GPU: `bash tests/perf/mla_sprefill_device.sh --prepare DIR` builds the bundle (cmake/bundle_for_device.sh
# DIR build/tilelab, kernels/, this script, flashmla_sparse_prefill.py, FlashMLA's tarball and build script, and
# cache.tar.xz: the NVRTC cache of every case). There: `bash DIR/mla_sprefill_device.sh DIR`; $OUT (default DIR/out)
# receives the logs and summary.txt, printed last.
# Knobs: STEPS (any of test full bench flashmla decode sample timeline; default all but decode and sample), FULL_S,
# REPEAT, CONFIGS (the configs benched, space-separated, - for the defaults; a config named twice is benched twice, in
# that order), ONLY (a regex of the shape names benched), TIMELINE_CONFIG (the timeline's config; default the defaults).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." 2>/dev/null && pwd)
K=mla.sparse_prefill
# name|problem|FlashMLA on the issue's H100 (TFLOP/s)
SHAPES=(
  "V3.2 8k|seq_q=4096,heads=128,seq_kv=8192,topk=2048,sink=true|594"
  "V3.2 32k|seq_q=4096,heads=128,seq_kv=32768,topk=2048,sink=true|578"
  "h64 8k|seq_q=4096,heads=64,seq_kv=8192,topk=2048,sink=true|-"
)
CONFIGS=${CONFIGS:-- chain=false kv_evict_last=true}

if [ "${1:-}" = "--prepare" ]; then
  D=${2:?usage: mla_sprefill_device.sh --prepare DIR}
  T=$ROOT/build/tilelab
  S=$(mktemp -d) && cp "$T" "$S/tilelab" && strip "$S/tilelab"
  bash "$ROOT/cmake/bundle_for_device.sh" "$D" "$S/tilelab" || exit 1
  rm -rf "$S" "$D/kernels" && cp -r "$ROOT/kernels" "$D/kernels" && cp "$0" "$D/mla_sprefill_device.sh" && cp "$HERE/device_env.sh" "$D/"
  cp "$HERE/flashmla_sparse_prefill.py" "$HERE/cuda_timing.py" "$ROOT/samples/mla_sparse_prefill.lua" "$D/"
  [ -d "$ROOT/../shared/baselines/flashmla" ] && rm -rf "$D/baselines" && cp -r "$ROOT/../shared/baselines/flashmla" "$D/baselines"
  C=$(mktemp -d)
  export TILELAB_CACHE_DIR=$C TILELAB_KERNELS_DIR=$D/kernels
  "$T" test --kernel $K --full > "$D/prepare_test.txt" 2>&1
  echo "compile-only matrix: $(tail -2 "$D/prepare_test.txt" | head -1)"
  for a in "${SHAPES[@]}"; do
    IFS='|' read -r name problem _ <<< "$a"
    for c in $CONFIGS; do
      [ "$c" = - ] && c=""
      "$T" compile $K --problem "$problem" --config "$c" > /dev/null 2>&1 || echo "compile failed: $name $c"
    done
    "$T" compile $K --problem "$problem" --config "${TIMELINE_CONFIG:-}" --timeline > /dev/null 2>&1 ||
      echo "probe build failed: $name"
  done
  tar cJf "$D/cache.tar.xz" -C "$C" . && rm -rf "$C"
  du -sh "$D"
  exit 0
fi

D=$(cd "${1:-$HERE}" && pwd)
. "$D/device_env.sh" sprefill
W=/tmp/sprefill_work && mkdir -p "$W"  # per-run JSON (only a few files come back from $OUT)
STEPS=${STEPS:-test full bench timeline flashmla}
has() { [[ " $STEPS " == *" $1 "* ]]; }
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader >> "$S" 2>&1

# FlashMLA builds on the CPUs while the tests use the GPU (its build takes minutes, the tests barely use the CPUs).
if has flashmla; then
  t_build=$(date +%s)
  bash "$D/baselines/build_on_device.sh" > "$OUT/flashmla_build.txt" 2>&1 &
  build_pid=$!
fi

# The quick matrix first: when it fails, nothing after it is worth the machine's time (the build is stopped).
for m in test full; do
  has $m || continue
  t0=$(date +%s)
  flag=$([ $m = full ] && echo --full || echo --quick)
  timeout "${FULL_S:-240}" "$T" test --kernel $K $flag --timeout 30 > "$OUT/test_$m.txt" 2>&1
  rc=$?
  echo "tilelab test --kernel $K $flag: rc=$rc in $(( $(date +%s) - t0 )) s: $(grep -E 'passed, ' "$OUT/test_$m.txt" | tail -1)" >> "$S"
  grep -E " (FAIL|ERROR|TIMEOUT|FAULT) " "$OUT/test_$m.txt" | head -12 | cut -c1-400 >> "$S"
  if [ $m = test ] && [ $rc -ne 0 ]; then
    has flashmla && kill -- "$build_pid" 2>/dev/null
    echo "quick matrix failed: stopped here" >> "$S"
    cat "$S"
    exit 1
  fi
done

if has flashmla; then
  wait "$build_pid"
  echo "FlashMLA build: rc=$? done $(( $(date +%s) - t_build )) s after it began" >> "$S"
fi

if has bench; then
  printf "%-9s %-34s %8s %9s %9s %6s %9s\n" shape config TFLOP/s ms "min ms" check "issue:FM" >> "$S"
  for a in "${SHAPES[@]}"; do
    IFS='|' read -r name problem fm <<< "$a"
    [[ "$name" =~ ${ONLY:-.} ]] || continue
    for c in $CONFIGS; do
      [ "$c" = - ] && c=""
      j=$W/bench_$(echo "$name $c" | tr ' =,.' '____').json
      t0=$(date +%s)
      timeout 120 "$T" bench $K --problem "$problem" --config "$c" --repeat "${REPEAT:-20}" --timeout 60 --no-store \
        --json "$j" > "$j.txt" 2>&1
      row=$(python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print(f\"{r['tflops']:.0f} {r['time_ms']['median']:.4f} {r['time_ms']['min']:.4f} {'PASS' if r['passed'] else 'FAIL'}\")" "$j" 2>/dev/null ||
            echo "- - - ERROR($(grep -m1 -iE 'error|fail' "$j.txt" | cut -c1-80))")
      printf "%-9s %-34s %8s %9s %9s %6s %9s  (%ss)\n" "$name" "${c:-defaults}" $row "$fm" $(( $(date +%s) - t0 )) >> "$S"
      # The timed runs in launch order: the H100 runs this kernel at 1980 MHz until its power cap lowers the clock
      # part-way through the 20 runs (docs/perf.md), which shows as a step; the minimum is the full-clock time.
      python3 -c "import json,sys; print('   times', ' '.join(f'{x:.3f}' for x in json.load(open(sys.argv[1])).get('times_ms', [])))" "$j" >> "$S" 2>/dev/null
    done
  done
fi

if has flashmla; then
  PYTHONPATH=/tmp/flashmla${PYTHONPATH:+:$PYTHONPATH} timeout 240 python3 "$D/flashmla_sparse_prefill.py" >> "$S" 2>&1
fi

# mla.sparse_decode shares the producers' Q load and barrier setup: its quick matrix again.
if has decode; then
  t0=$(date +%s)
  timeout 120 "$T" test --kernel mla.sparse_decode --quick --timeout 30 > "$OUT/test_decode.txt" 2>&1
  echo "tilelab test --kernel mla.sparse_decode --quick: rc=$? in $(( $(date +%s) - t0 )) s: $(grep -E 'passed, ' "$OUT/test_decode.txt" | tail -1)" >> "$S"
fi

# The sample (FlashMLA's recipe, s_kv 8192 to 131072, checked and timed).
if has sample && [ -f "$D/mla_sparse_prefill.lua" ]; then
  timeout 240 "$T" run "$D/mla_sparse_prefill.lua" "$W/sample" --allow-write "$W/sample" > "$OUT/sample.txt" 2>&1
  echo "sample: rc=$?" >> "$S"
  grep -E "h_q|skipped" "$OUT/sample.txt" >> "$S"
fi

if has timeline; then
  timeout 120 "$T" timeline $K --problem "seq_q=4096,heads=128,seq_kv=8192,topk=2048" --config "${TIMELINE_CONFIG:-}" \
    --out "$W/timeline.json" --stats > "$OUT/timeline.txt" 2>&1
  echo "timeline (V3.2 8k, ${TIMELINE_CONFIG:-defaults}): rc=$?" >> "$S"
  grep -E "^ *(index|load_wait|load_issue|wait_kv|qk|softmax|pv|combine) " "$OUT/timeline.txt" | head -12 >> "$S"
  tail -3 "$OUT/timeline.txt" | cut -c1-200 >> "$S"
fi
cat "$S"
