#!/usr/bin/env bash
# attn.bwd.wgmma on a GPU machine (issue 20, item 1): `tilelab test` of its cases (FULL=1: --full), then issue 20's
# backward anchor shapes benched `--vs cudnn` (cuDNN's SDPA backward graph, same process, same buffers, checked
# against the float64 reference) beside attn.bwd.mma at the same shapes, one table.
#
# Here, without a GPU: `bash tests/perf/attn_bwd_wgmma_device.sh --prepare DIR` bundles a stripped build/tilelab
# (cmake/bundle_for_device.sh), kernels/, this script and cache.tar.xz (the NVRTC cache filled by compiling every case
# and anchor for sm_90a). There (the device tool, carry [DIR]): `bash DIR/attn_bwd_wgmma_device.sh DIR`; $OUT (default
# DIR/out) receives the logs and summary.txt, printed last (the tool brings back 8 files: point OUT at a scratch folder
# and copy summary.txt and test.txt into the tool's $OUT). Knobs: STEPS (any of gate test bench timeline; default
# gate test bench), FULL, RUNS (kernel:config pairs benched per anchor, - = the defaults; default: attn.bwd.wgmma:-
# attn.bwd.mma:-), REPEAT. The gate checks each non-default wgmma config once on small problems first (check only,
# a 10 s watchdog) and drops a config that fails from the benches, so a hang costs seconds, not every anchor's timeout;
# a problem the config refuses (can_implement) is skipped.
# BASE_BIN=path BASE_REF=ref at --prepare also bundles that tilelab (built from ref) and ref's kernels/, and the bench
# step then benches ref's attn.bwd.wgmma defaults at each anchor in the same run (row "base"). STEPS timeline: `tilelab
# timeline --stats` of each config in TIMELINES (- = the defaults) at each anchor in TL_ANCHORS (anchor numbers, from
# 1; default 1), the region tables into OUT/timelines.txt.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." 2>/dev/null && pwd)

# Per anchor: "name|problem|cuDNN|flash" (issue 20, PyTorch SDPA backward on the H100, TFLOP/s at 2.5x the
# forward's FLOPs).
ANCHORS=(
  "b8 h16 4k d128|batch=8,seq_q=4096,seq_k=4096,heads=16,heads_kv=16,dim=128|504|279"
  "b8 h16 4k d128 causal|batch=8,seq_q=4096,seq_k=4096,heads=16,heads_kv=16,dim=128,causal=true|444|238"
  "b2 h16 16k d128|batch=2,seq_q=16384,seq_k=16384,heads=16,heads_kv=16,dim=128|545|306"
  "b16 h16 2k d64|batch=16,seq_q=2048,seq_k=2048,heads=16,heads_kv=16,dim=64|224|230"
  "b8 h32/8 4k d128 causal|batch=8,seq_q=4096,seq_k=4096,heads=32,heads_kv=8,dim=128,causal=true|-|-"
)

# The gate's problems (from the test list: GQA causal with seq_q < seq_k, varlen with a sequence without keys, dim 64
# causal varlen, one key block completing all 66 query tiles of its walk) and the configs it checks.
GATE=(
  "batch=2,seq_q=257,seq_k=257,heads=8,heads_kv=2,dim=128,causal=true"
  "batch=1,seq_q=83,seq_k=290,heads=8,heads_kv=1,dim=64,causal=true"
  "batch=5,seq_q=300,seq_k=420,heads=4,heads_kv=2,dim=128,varlen=true"
  "batch=4,seq_q=333,seq_k=333,heads=2,heads_kv=1,dim=64,causal=true,varlen=true,dtype=f16"
  "batch=1,seq_q=2100,seq_k=100,heads=4,heads_kv=2,dim=128"
)
GATE_CONFIGS=${GATE_CONFIGS:-num_stages=1}

if [ "${1:-}" = "--prepare" ]; then
  D=${2:?usage: attn_bwd_wgmma_device.sh --prepare DIR}
  S=$(mktemp -d)
  cp "$ROOT/build/tilelab" "$S/tilelab" && strip "$S/tilelab"
  bash "$ROOT/cmake/bundle_for_device.sh" "$D" "$S/tilelab" > /dev/null || exit 1
  rm -rf "$D/kernels" "$S" && cp -r "$ROOT/kernels" "$D/kernels" && cp "$0" "$D/attn_bwd_wgmma_device.sh" && cp "$HERE/device_env.sh" "$D/"
  C=$(mktemp -d)
  export TILELAB_CACHE_DIR=$C TILELAB_KERNELS_DIR=$D/kernels
  "$ROOT/build/tilelab" test --kernel attn.bwd.wgmma ${FULL:+--full} > "$D/prepare_test.txt" 2>&1
  echo "compile-only matrix: $(tail -2 "$D/prepare_test.txt" | head -1)"
  for a in "${ANCHORS[@]}"; do
    IFS='|' read -r name problem _ _ <<< "$a"
    for r in ${RUNS:-attn.bwd.wgmma:- attn.bwd.mma:-}; do
      k=${r%%:*} c=${r#*:} && [ "$c" = - ] && c=""
      "$ROOT/build/tilelab" compile "$k" --arch sm_90a --problem "$problem" --config "$c" > /dev/null 2>&1 ||
        echo "compile failed: $k $c $name"
    done
  done
  for g in "${GATE[@]}"; do
    for c in $GATE_CONFIGS; do
      "$ROOT/build/tilelab" compile attn.bwd.wgmma --arch sm_90a --problem "$g" --config "$c" > /dev/null 2>&1 ||
        echo "compile failed: gate $g $c"
    done
  done
  if [ -n "${BASE_BIN:-}" ]; then
    cp "$BASE_BIN" "$D/tilelab_base" && strip "$D/tilelab_base"
    rm -rf "$D/kernels_base" && mkdir -p "$D/kernels_base"
    git -C "$ROOT" archive "${BASE_REF:?BASE_REF names the ref BASE_BIN was built from}" kernels |
      tar x -C "$D/kernels_base" --strip-components=1
    for a in "${ANCHORS[@]}"; do
      IFS='|' read -r name problem _ _ <<< "$a"
      "$D/tilelab_base" compile attn.bwd.wgmma --arch sm_90a --kernels-dir "$D/kernels_base" --problem "$problem" > /dev/null 2>&1 ||
        echo "compile failed: base $name"
    done
  fi
  for i in ${TL_ANCHORS:-1}; do
    IFS='|' read -r _ problem _ _ <<< "${ANCHORS[$((i - 1))]}"
    for c in ${TIMELINES:-}; do
      [ "$c" = - ] && c=""
      "$ROOT/build/tilelab" compile attn.bwd.wgmma --timeline --arch sm_90a --problem "$problem" --config "$c" > /dev/null 2>&1 ||
        echo "compile failed: timeline $c $problem"
    done
  done
  # xz: with FULL=1 the cache is ~12 MB as tgz, 3.6 MB as xz (the bundle's 40 MiB budget).
  rm -f "$D/tlc.tgz" && tar cJf "$D/cache.tar.xz" -C "$C" . && rm -rf "$C"
  du -sh "$D"
  exit 0
fi

D=$(cd "${1:-$HERE}" && pwd)
. "$D/device_env.sh" attn_bwd_wgmma
STEPS=${STEPS:-gate test bench} RUNS=${RUNS:-attn.bwd.wgmma:- attn.bwd.mma:-}
has() { [[ " $STEPS " == *" $1 "* ]]; }
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader >> "$S" 2>&1

if has gate; then
  for c in $GATE_CONFIGS; do
    ok=1
    for g in "${GATE[@]}"; do
      timeout 30 "$T" bench attn.bwd.wgmma --problem "$g" --config "$c" --repeat 0 --timeout 10 --no-store \
        --json "$OUT/gate.json" > "$OUT/gate.txt" 2>&1
      r=$(python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print('PASS' if r['passed'] else 'FAIL', r['rel_error'])" "$OUT/gate.json" 2>/dev/null || echo "ERROR $(grep -m1 -iE 'error|fail' "$OUT/gate.txt" | cut -c1-120)")
      grep -q "invalid problem/config" "$OUT/gate.txt" && r="SKIP (refused: $(grep -o 'attn.bwd.wgmma: .*' "$OUT/gate.txt" | cut -c1-60))"
      echo "gate $c $g: $r" >> "$S"
      [[ $r == PASS* || $r == SKIP* ]] || ok=0
      [ $ok = 1 ] || break
    done
    [ $ok = 1 ] || RUNS=$(echo " $RUNS " | sed "s| attn.bwd.wgmma:$c | |")
  done
fi

if has test; then
  t0=$(date +%s)
  timeout "${TEST_S:-240}" "$T" test --kernel attn.bwd.wgmma ${FULL:+--full} --timeout 20 > "$OUT/test.txt" 2>&1
  echo "tilelab test --kernel attn.bwd.wgmma ${FULL:+--full}: rc=$? in $(( $(date +%s) - t0 )) s: $(grep -E 'passed, .* failed' "$OUT/test.txt")" >> "$S"
  grep -E " FAIL " "$OUT/test.txt" | head -12 | cut -c1-400 >> "$S"
fi

if has bench; then
  # One table row: bench LABEL KERNEL CONFIG [TILELAB [options]]: the run's JSON and log in OUT.
  bench() {
    local label=$1 k=$2 c=$3 bin=${4:-$T}
    shift $(($# < 4 ? $# : 4))
    local j=$OUT/bench_$(echo "$label $name" | tr ' =,/.:' '_______').json
    timeout 120 "$bin" bench "$k" --problem "$problem" --config "$c" --vs cudnn --repeat "${REPEAT:-20}" \
      --timeout 60 --no-store --json "$j" "$@" > "$j.txt" 2>&1
    row=$(python3 -c "
import json, sys
r = json.load(open(sys.argv[1]))
b = r.get('baseline') or {}
print(f\"{r['tflops']:.0f} {r['time_ms']['median']:.3f} {'PASS' if r['passed'] else 'FAIL'} {b.get('tflops', 0):.0f} {b.get('speedup', 0):.3f}\")" "$j" 2>/dev/null ||
          echo "- - ERROR($(grep -m1 -iE 'error|fail' "$j.txt" | cut -c1-80)) - -")
    printf "%-24s %-15s %8s %9s %6s %8s %8s %8s %7s\n" "$name" "$label" $row "$cudnn" "$flash" >> "$S"
  }
  printf "%-24s %-15s %8s %9s %6s %8s %8s %8s %7s\n" shape kernel TFLOP/s ms check cuDNN "x cuDNN" "issue:cuDNN" flash >> "$S"
  for a in "${ANCHORS[@]}"; do
    IFS='|' read -r name problem cudnn flash <<< "$a"
    for r in $RUNS; do
      k=${r%%:*} c=${r#*:} && [ "$c" = - ] && c=""
      bench "$k${c:+ $c}" "$k" "$c"
    done
    [ -x "$D/tilelab_base" ] && bench base attn.bwd.wgmma "" "$D/tilelab_base" --kernels-dir "$D/kernels_base"
  done
fi

if has timeline; then
  for i in ${TL_ANCHORS:-1}; do
    IFS='|' read -r name problem _ _ <<< "${ANCHORS[$((i - 1))]}"
    for c in ${TIMELINES:--}; do
      cc=$c && [ "$c" = - ] && cc=""
      echo "== timeline $name, config $c" >> "$OUT/timelines.txt"
      timeout 120 "$T" timeline attn.bwd.wgmma --problem "$problem" --config "$cc" --stats --out "$OUT/timeline.png" \
        >> "$OUT/timelines.txt" 2>&1 || echo "timeline $name $c: failed" >> "$S"
    done
  done
  rm -f "$OUT/timeline.png"
fi
cat "$S"
