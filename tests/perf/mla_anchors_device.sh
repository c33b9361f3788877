#!/usr/bin/env bash
# Issue 19's whole anchor table at the defaults beside FlashMLA 9241ae3 in one call (issue 19 items 1-3):
# mla.sparse_decode, mla.sparse_prefill and mla.decode on FlashMLA's recipes (tests/perf/mla_anchors.lua's rows, every
# point float64-checked), FlashMLA's own kernels on the same shapes (flashmla_anchors.py), A B B A: ours round 1,
# FlashMLA rounds 1 and 2 (one process, round 2 reversed), ours round 2 (reversed); nvidia-smi's SM clock every 0.5 s;
# the table (mla_anchors_table.py) last.
#
# Here, without a GPU: `bash tests/perf/mla_anchors_device.sh --prepare DIR FM_TGZ` builds the bundle
# (cmake/bundle_for_device.sh DIR with a stripped copy of build/tilelab, kernels/, these scripts, the FlashMLA timing
# scripts they import, FlashMLA's prebuilt package FM_TGZ (a tar.gz of flashmla/flash_mla/, as session 47's
# fm.tgz.aa), its tests/quant.py from ../shared/baselines/flashmla's source tarball (BASELINES: another
# baselines folder), and cache.tar.xz: the NVRTC cache
# of every point). There: `bash DIR/mla_anchors_device.sh DIR`; $OUT (default DIR/out) receives the logs and
# summary.txt (printed last). Knobs: REP (default 20), STEP_S (each of the three steps' time limit, default 75), ONLY
# (a Lua pattern of our row names) and FM_ONLY (a regex of FlashMLA's): ONLY='k$' FM_ONLY='k$' times the prefill rows alone.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." 2>/dev/null && pwd)

if [ "${1:-}" = "--prepare" ]; then
  D=${2:?usage: mla_anchors_device.sh --prepare DIR FM_TGZ}
  FM=${3:?usage: mla_anchors_device.sh --prepare DIR FM_TGZ}
  T=${TILELAB_BIN:-$ROOT/build/tilelab}  # TILELAB_BIN: another build to bundle (main's, say)
  st=$(mktemp -d) && cp "$T" "$st/tilelab" && strip "$st/tilelab"
  bash "$ROOT/cmake/bundle_for_device.sh" "$D" "$st/tilelab" || exit 1
  rm -rf "$st" "$D/kernels" && cp -r "$ROOT/kernels" "$D/kernels"
  cp "$0" "$HERE/mla_anchors.lua" "$HERE/flashmla_anchors.py" "$HERE/mla_anchors_table.py" "$HERE/device_env.sh" \
    "$HERE/cuda_timing.py" "$HERE/flashmla_dense.py" "$HERE/mla_lengths.py" "$HERE/flashmla_sparse.py" "$HERE/flashmla_sparse_prefill.py" "$D/"
  cp "$FM" "$D/fm.tgz"
  mkdir -p "$D/fmtests" && tar xzf "${BASELINES:-$ROOT/../shared/baselines}"/flashmla/flashmla-*.tgz -O flashmla/tests/quant.py > "$D/fmtests/quant.py"
  C=${PREFILL_CACHE:-$(mktemp -d)}  # PREFILL_CACHE: an NVRTC cache folder to fill (and keep) instead of a fresh one
  TILELAB_CACHE_DIR=$C TILELAB_KERNELS_DIR=$D/kernels nice -n 5 "$T" run "$HERE/mla_anchors.lua" | tail -1
  tar cf - -C "$C" . | xz -2 > "$D/cache.tar.xz"
  [ -z "${PREFILL_CACHE:-}" ] && rm -rf "$C"
  du -sh "$D"
  exit 0
fi

D=$(cd "${1:-$HERE}" && pwd)
. "$D/device_env.sh" anchors
t0=$(date +%s)
el() { echo "$(( $(date +%s) - t0 )) s"; }
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit,temperature.gpu --format=csv,noheader >> "$S" 2>&1
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu --format=csv,noheader -lms 500 > "$OUT/smi.csv" 2>&1 &
smi=$!
rm -rf /tmp/flashmla && tar xzf "$D/fm.tgz" -C /tmp && mkdir -p /tmp/flashmla/tests && cp "$D/fmtests/quant.py" /tmp/flashmla/tests/
export PYTHONPATH=/tmp/flashmla${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
STEP_S=${STEP_S:-75}

ROUND0=1 ROUNDS=1 timeout "$STEP_S" "$T" run "$D/mla_anchors.lua" > "$OUT/ours.txt" 2>&1
echo "ours round 1: rc=$? at $(el), $(grep -c '^ROW' "$OUT/ours.txt") rows" >> "$S"
ROUNDS=2 timeout "$STEP_S" python3 "$D/flashmla_anchors.py" > "$OUT/fm.txt" 2>&1
echo "FlashMLA rounds 1-2: rc=$? at $(el), $(grep -c '^FMROW' "$OUT/fm.txt") rows" >> "$S"
ROUND0=2 ROUNDS=1 timeout "$STEP_S" "$T" run "$D/mla_anchors.lua" >> "$OUT/ours.txt" 2>&1
echo "ours round 2: rc=$? at $(el), $(grep -c '^ROW' "$OUT/ours.txt") rows in all" >> "$S"
kill "$smi" 2>/dev/null
grep -v -E '^(ROW|FMROW) ' "$OUT/fm.txt" | tail -5 >> "$S"
grep -E 'FAIL|ERROR|failed' "$OUT/ours.txt" "$OUT/fm.txt" | head -8 >> "$S"
python3 - "$OUT/smi.csv" >> "$S" 2>&1 <<'PY'
import sys
rows = [l.split(",") for l in open(sys.argv[1]) if "MHz" in l]
c = [int(r[1].split()[0]) for r in rows if float(r[2].split()[0]) > 200]  # samples under load (> 200 W)
if c:
    print(f"SM clock under load (> 200 W): {len(c)} of {len(rows)} samples, {sum(x >= 1900 for x in c)} at >= 1900 MHz,"
          f" min {min(c)}, max {max(c)} MHz; max temperature {max(int(r[3]) for r in rows)} C")
PY
python3 "$D/mla_anchors_table.py" "$OUT/ours.txt" "$OUT/fm.txt" >> "$S" 2>&1
cat "$S"
