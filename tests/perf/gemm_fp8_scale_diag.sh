#!/usr/bin/env bash
# Where gemm.fp8's block scales cost, one device call: the kernel as it is (ref) beside DIAG copies of kernels/ with
# the scales' work taken out of the default path (scale_tma: the scales by TMA boxes, A from shared memory) — A: the
# consumers promote with a plain add (no scale loads, no scale products); B: the producer loads no scale boxes (the
# full barrier waits for A and B alone; the consumers read whatever the slots hold); AB: both; I: the promotion's
# FFMA with an immediate factor instead of the scale register (no scale loads or products, the FFMA kept: two
# register sources, as the plain add's); J: the FFMA with a per-thread register factor made without loads (three
# register sources, as ref's, no scale loads or products) — each process one kernels dir, in the order DIAG_ORDER
# (default ref A B AB I J J I AB B A ref), through gemm_fp8_scale_diag.lua (no checks: the DIAG sums are wrong on purpose), with row scales on
# the same 128x256 tiles in every process (unchanged by the DIAG edits: a gauge of the clock from process to
# process). Prepare DIR here, without a GPU:
#   bash tests/perf/gemm_fp8_scale_diag.sh --prepare DIR [TILELAB]   (default build/tilelab)
# then on the device: bash DIR/gemm_fp8_scale_diag.sh (writes $OUT/diag.txt).
# Only the DIAG copies of kernels/, for another script's bundle: --kernels DIR [VARIANTS] (DIR/diag/kV for each V of
# VARIANTS, default "A B AB I J").
set -u
if [ "${1:-}" = --prepare ] || [ "${1:-}" = --kernels ]; then
  dir=$2; bin=${3:-build/tilelab}; src=$(cd "$(dirname "$0")/../.." && pwd)
  variants="A B AB I J"; [ "$1" = --kernels ] && variants=${3:-$variants}
  mkdir -p "$dir/diag" || exit 1
  [ "$1" = --prepare ] && { cp -r "$src/kernels" "$dir/" || exit 1; }
  for v in $variants; do
    rm -rf "$dir/diag/k$v" && cp -r "$src/kernels" "$dir/diag/k$v"
    python3 - "$dir/diag/k$v/gemm/gemm_kmajor.cuh" "$v" <<'PY' || exit 1
import sys
path, v = sys.argv[1], sys.argv[2]
s = open(path).read()
edits = []
if "A" in v:
    edits.append(("              if constexpr (SCALING == kScaleBlock) {\n                const int h",
                  "              if constexpr (SCALING == kScaleBlock && false) {  // DIAG A\n                const int h"))
if "B" in v:
    edits.append(("mbar_expect_tx(full_bar(s), A_BYTES + B_BYTES + P.sf_tma_bytes);",
                  "mbar_expect_tx(full_bar(s), A_BYTES + B_BYTES);  // DIAG B"))
    edits.append(("            if constexpr (SCALE_TMA) {\n              // The boxes",
                  "            if constexpr (SCALE_TMA && false) {  // DIAG B\n              // The boxes"))
if "I" in v:
    edits.append(("acc[v] = fmaf(d[i], scale[h][block_of(v)], acc[v]);",
                  "acc[v] = fmaf(d[i], 1.0078125f, acc[v]);  // DIAG I"))
if "J" in v:
    edits.append(("acc[v] = fmaf(d[i], scale[h][block_of(v)], acc[v]);",
                  "acc[v] = fmaf(d[i], __uint_as_float(0x3f810000u + (threadIdx.x & 3u) + h), acc[v]);  // DIAG J"))
for old, new in edits:
    assert s.count(old) == 1, "gemm_kmajor.cuh changed: " + old
    s = s.replace(old, new)
open(path, "w").write(s)
PY
  done
  [ "$1" = --kernels ] && exit 0
  bash "$src/cmake/bundle_for_device.sh" "$dir" "$bin" > /dev/null && strip "$dir/tilelab"
  cp "$src/tests/perf/gemm_fp8_scale_diag.lua" "$src/tests/perf/gemm_fp8_scale_diag.sh" "$dir/"
  cache=$(mktemp -d)
  for tag in ref A B AB I J; do
    kd=$dir/kernels; [ $tag = ref ] || kd=$dir/diag/k$tag
    TAG=$tag ROW=1 TILELAB_CACHE_DIR=$cache TILELAB_KERNELS_DIR=$kd GEMM_COMPILE_ONLY=1 "$dir/tilelab" run \
      "$dir/gemm_fp8_scale_diag.lua" | grep -v " 0 B spills" || true  # prints only what spills or fails
  done
  tar cJf "$dir/cache.tar.xz" -C "$cache" . && rm -rf "$cache" && du -sh "$dir"
  exit 0
fi
D=$(cd "$(dirname "$0")" && pwd)
export LD_LIBRARY_PATH=$D/lib FONTCONFIG_FILE=$D/fonts.conf TILELAB_CACHE_DIR=/tmp/tlc TILELAB_DB=/tmp/tl.db
mkdir -p /tmp/tlc && tar xJf "$D/cache.tar.xz" -C /tmp/tlc
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv,noheader
t0=$(date +%s)
for tag in ${DIAG_ORDER:-ref A B AB I J J I AB B A ref}; do
  kd=$D/kernels; [ $tag = ref ] || kd=$D/diag/k$tag
  TAG=$tag ROW=1 TILELAB_KERNELS_DIR=$kd timeout 60 "$D/tilelab" run --launch-timeout 10 \
    "$D/gemm_fp8_scale_diag.lua" 2>&1 | tee -a "$OUT/diag.txt"
done
echo "diag $(( $(date +%s) - t0 ))s"
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader
