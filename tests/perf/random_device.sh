#!/usr/bin/env bash
# `tilelab test --random N --seed S` over every library kernel on a GPU machine: N problems per kernel drawn from its
# problem schema (edge values, unset defaults, a byte and FLOP budget), each at the kernel's default config, checked
# against the float64 reference; per kernel its passes, refusals (with their reasons) and failures, and each failure
# replayed with `tilelab bench` (the command the test prints).
#
# Here, without a GPU: `N=12 SEED=S bash tests/perf/random_device.sh --prepare DIR` builds the bundle
# (cmake/bundle_for_device.sh DIR build/tilelab, kernels/, this script, and cache.tar.xz: the NVRTC cache filled by the
# same draws compiled for sm_90a). There: `bash DIR/random_device.sh DIR` (with the device tool: carry [DIR]);
# $OUT (default DIR/out) receives each kernel's log, JUnit XML and summary.txt, printed last.
# Knobs: N, SEED (both read from the bundle when it was prepared with them), KERNELS (default: every library
# kernel), KERNEL_S (time limit per kernel, default 40), TOTAL_S (of all kernels, default 600), RUN_S (the watchdog of
# one run, default 5), REPLAY (extra "K|problem" lines to bench after the tests, separated by newlines).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." 2>/dev/null && pwd)

if [ "${1:-}" = "--prepare" ]; then
  D=${2:?usage: random_device.sh --prepare DIR}
  T=$ROOT/build/tilelab
  N=${N:-12} SEED=${SEED:-20261127}
  bash "$ROOT/cmake/bundle_for_device.sh" "$D" "$T" > /dev/null || exit 1
  strip "$D/tilelab"
  rm -rf "$D/kernels" && cp -r "$ROOT/kernels" "$D/kernels" && cp "$0" "$D/random_device.sh" && cp "$HERE/device_env.sh" "$D/"
  echo "N=$N SEED=$SEED" > "$D/draw.env"
  C=${CACHE:-$(mktemp -d)}
  export TILELAB_CACHE_DIR=$C TILELAB_KERNELS_DIR=$D/kernels
  for k in ${KERNELS:-$("$T" kernels --json | python3 -c 'import json,sys; print(" ".join(k["name"] for k in json.load(sys.stdin)))')}; do
    s=$SECONDS
    "$T" test --kernel "$k" --random "$N" --seed "$SEED" > "$D/prepare_$k.txt" 2>&1
    echo "compile-only $k: $(tail -2 "$D/prepare_$k.txt" | head -1) ($((SECONDS - s)) s)"
  done
  if [ -n "${CACHE:-}" ]; then
    # CACHE: a cache seeded with other entries (older bundles'); carry only those these draws compile to.
    K=$(mktemp -d)
    for f in "$D"/prepare_*.txt; do
      grep -E "^[a-z0-9._]+ .* SKIP .*compiled \(" "$f" | awk '{print $1, $2}'
    done | while read -r k p; do
      [ "$p" = defaults ] && p=
      key=$("$T" compile "$k" ${p:+--problem "$p"} --json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["cache_key"])')
      mkdir -p "$K/kernels/${key:0:2}" && cp "$C/kernels/${key:0:2}/$key".* "$K/kernels/${key:0:2}/"
    done
    C=$K
  fi
  echo "cache entries: $(find "$C/kernels" -name '*.json' | wc -l)"
  tar cJf "$D/cache.tar.xz" -C "$C" kernels
  du -sh "$D"
  exit 0
fi

D=$(cd "${1:-$HERE}" && pwd)
. "$D/device_env.sh" random
N0=${N:-} SEED0=${SEED:-}
[ -f "$D/draw.env" ] && . "$D/draw.env"
N=${N0:-${N:-12}} SEED=${SEED0:-${SEED:-20261127}}
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader >> "$S" 2>&1
KERNELS=${KERNELS:-$("$T" kernels --json | python3 -c 'import json,sys; print(" ".join(k["name"] for k in json.load(sys.stdin)))')}
echo "tilelab test --random $N --seed $SEED, per kernel (watchdog ${RUN_S:-5} s a run, ${KERNEL_S:-40} s a kernel, ${TOTAL_S:-600} s in all)" | tee -a "$S"
printf "%-20s %6s %6s %8s %6s %6s %6s\n" kernel drawn pass refused fail rc secs | tee -a "$S"
t0=$SECONDS
for k in $KERNELS; do
  s=$SECONDS left=$(( ${TOTAL_S:-600} - (SECONDS - t0) ))
  [ "$left" -le 2 ] && { echo "$k: not run (TOTAL_S spent)" | tee -a "$S"; continue; }
  timeout "$(( left < ${KERNEL_S:-40} ? left : ${KERNEL_S:-40} ))" "$T" test --kernel "$k" --random "$N" --seed "$SEED" \
    --timeout "${RUN_S:-5}" --junit "$OUT/junit_$k.xml" > "$OUT/random_$k.txt" 2>&1
  rc=$?
  L=$OUT/random_$k.txt
  printf "%-20s %6s %6s %8s %6s %6s %6s\n" "$k" "$(grep -c "^$k " "$L")" "$(grep -cE "^$k .* PASS " "$L")" \
    "$(grep -cE "^$k .* SKIP .*refused: " "$L")" "$(grep -cE "^$k .* FAIL " "$L")" "$rc" "$((SECONDS - s))" | tee -a "$S"
done
echo "-- failures (each with its replay command) and refusals without 'refused: '" >> "$S"
for k in $KERNELS; do
  grep -E "^$k .* FAIL " "$OUT/random_$k.txt" | cut -c1-400 >> "$S"
  grep -E "^$k .* SKIP " "$OUT/random_$k.txt" | grep -v "refused: " | cut -c1-300 >> "$S"
done
# The refusal reasons (distinct, digits folded) in their own file: long, and not what decides the run.
for k in $KERNELS; do
  grep -E "^$k .* SKIP .*refused: " "$OUT/random_$k.txt" | sed 's/.*refused: //' | sed -E 's/[0-9]+/#/g' | cut -c1-140 |
    sort | uniq -c | sort -rn
done > "$OUT/refusals.txt"
# Replays: every failure's `tilelab bench` command (and REPLAY's), one checked untimed run each.
{
  for k in $KERNELS; do grep -E "^$k .* FAIL " "$OUT/random_$k.txt" | grep -o "replay: tilelab bench [^)]*" | sed 's/replay: tilelab bench //'; done
  [ -n "${REPLAY:-}" ] && echo "$REPLAY" | tr '|' ' ' | sed 's/ / --problem /'
} | head -6 | while read -r line; do
  echo "== bench $line --repeat 0" >> "$S"
  # shellcheck disable=SC2086
  timeout 30 "$T" bench $line --repeat 0 --no-store --timeout "${RUN_S:-5}" 2>&1 | tail -4 | cut -c1-300 >> "$S"
done
# Every log in one archive (the device tool brings back a few files only), the summary last on stdout.
tar czf "$OUT/logs.tgz" -C "$OUT" $(cd "$OUT" && ls random_*.txt junit_*.xml refusals.txt 2>/dev/null) &&
  (cd "$OUT" && rm -f random_*.txt junit_*.xml)
echo "==== summary"
cat "$S"
