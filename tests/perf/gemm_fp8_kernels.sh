#!/usr/bin/env bash
# What cuBLASLt runs for FP8 at issue 21's anchors, beside gemm.fp8, in one device call from a bundle DIR (the
# session's checkout travels, so everything is in DIR): (1) fp8_kernel_names.py — torch._scaled_mm's cuBLASLt kernels
# (name, grid, cluster, registers, shared memory) under torch.profiler, tensor / row / block scales; (2) Nsight Compute
# over gemm_fp8_ncu.lua (ours and tilelab's own cuBLASLt baseline once per case, --clock-control none, sections
# SpeedOfLight, ComputeWorkloadAnalysis, LaunchStats), summarised by gemm_fp8_ncu_summary.py; (3) optionally the quick
# matrix with each of FORCE's configs (';'-separated); (4) gemm_fp8_cublas.lua over GEMM_SETS at GEMM_SHAPES, each
# row beside cuBLASLt, and its table. NAMES=0 / NCU=0 skip (1) / (2); GEMM_SETS= (empty) skips (4).
# Prepare DIR here, without a GPU (fills the NVRTC cache of exactly the cases the call runs, prints what spills):
#   GEMM_SETS=... [FORCE=...] [FP8_NCU_*=...] bash tests/perf/gemm_fp8_kernels.sh --prepare DIR [TILELAB]
# then on the device: bash DIR/gemm_fp8_kernels.sh (knobs are saved in DIR/knobs.sh; logs to $OUT).
set -u
if [ "${1:-}" = --prepare ]; then
  dir=$2; bin=${3:-build/tilelab}; src=$(cd "$(dirname "$0")/../.." && pwd)
  mkdir -p "$dir" && rm -rf "$dir/kernels" && cp -r "$src/kernels" "$dir/" || exit 1
  bash "$src/cmake/bundle_for_device.sh" "$dir" "$bin" > /dev/null && strip "$dir/tilelab" || exit 1
  for f in gemm_fp8_cublas.lua gemm_fp8_cublas_table.py gemm_fp8_ncu.lua gemm_fp8_ncu_summary.py fp8_kernel_names.py gemm_fp8_kernels.sh; do
    cp "$src/tests/perf/$f" "$dir/" || exit 1
  done
  { for v in GEMM_SETS GEMM_SHAPES GEMM_REP FORCE FP8_NCU_SHAPES FP8_NCU_SCALINGS FP8_NCU_CONFIG NAMES NCU; do
      [ -n "${!v+x}" ] && printf 'export %s=%q\n' "$v" "${!v}"; done; } > "$dir/knobs.sh"
  cache=$(mktemp -d)
  export TILELAB_CACHE_DIR=$cache TILELAB_KERNELS_DIR=$dir/kernels TILELAB_DB=$cache/tl.db LD_LIBRARY_PATH=$dir/lib
  IFS=';' read -ra forced <<< "${FORCE:-}"
  for f in "${forced[@]}"; do
    "$dir/tilelab" test --kernel gemm.fp8 --config "$f" > "$cache/test.txt" 2>&1
    echo "compile-only quick matrix $f rc=$?: $(grep -E 'passed, ' "$cache/test.txt")"
  done
  GEMM_COMPILE_ONLY=1 "$dir/tilelab" run "$dir/gemm_fp8_ncu.lua" > "$cache/ncu.txt" 2>&1
  echo "compile-only ncu lua rc=$?: $(wc -l < "$cache/ncu.txt") cases"
  if [ -n "${GEMM_SETS-defaults}" ]; then
    GEMM_SETS=${GEMM_SETS-defaults} GEMM_COMPILE_ONLY=1 "$dir/tilelab" run "$dir/gemm_fp8_cublas.lua" > "$cache/compile.txt" 2>&1
    echo "compile-only lua rc=$?: $(wc -l < "$cache/compile.txt") configs"
  fi
  echo "spilling or failing:"; cat "$cache"/ncu.txt "$cache"/compile.txt 2>/dev/null | grep -v " 0 B spills"
  rm -f "$cache/tl.db" "$cache"/*.txt
  tar cJf "$dir/cache.tar.xz" -C "$cache" . && rm -rf "$cache" && du -sh "$dir"
  exit 0
fi
D=$(cd "$(dirname "$0")" && pwd)
[ -f "$D/knobs.sh" ] && . "$D/knobs.sh"
OUT=${OUT:-/tmp/gemm_fp8_kernels_out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=$D/lib FONTCONFIG_FILE=$D/fonts.conf TILELAB_CACHE_DIR=/tmp/tlc TILELAB_DB=/tmp/tl.db
export TILELAB_KERNELS_DIR=$D/kernels PYTHONUNBUFFERED=1
T=$D/tilelab
if ! timeout 20 nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu \
    --format=csv,noheader 2> "$OUT/nvidia-smi.txt"; then
  echo "gemm_fp8_kernels: no GPU (nvidia-smi: $(head -c 200 "$OUT/nvidia-smi.txt")): nothing run" >&2
  exit 2
fi
mkdir -p /tmp/tlc && tar xJf "$D/cache.tar.xz" -C /tmp/tlc || exit 1
if [ "${NAMES:-1}" = 1 ]; then
  t0=$(date +%s)
  timeout "${NAMES_TIMEOUT:-60}" python3 "$D/fp8_kernel_names.py" > "$OUT/names.txt" 2>&1
  echo "== torch._scaled_mm kernels rc=$? $(( $(date +%s) - t0 ))s"
  sed -E 's/"(grid|block|registers per thread|shared memory|cluster[^"]*)"/\1/g' "$OUT/names.txt" | cut -c1-330
fi
if [ "${NCU:-1}" = 1 ]; then
  NCUBIN=$(command -v ncu || ls /usr/local/cuda*/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
  t0=$(date +%s)
  timeout "${NCU_TIMEOUT:-90}" "$NCUBIN" --target-processes all --clock-control none --section SpeedOfLight \
    --section ComputeWorkloadAnalysis --section LaunchStats -k 'regex:gemm_fp8|nvjet|sm90|cutlass|xmma' \
    -o /tmp/fp8ncu -f "$T" run --launch-timeout 30 "$D/gemm_fp8_ncu.lua" > "$OUT/ncu_run.txt" 2>&1
  echo "== ncu rc=$? $(( $(date +%s) - t0 ))s $(grep -m1 -E '==ERROR==' "$OUT/ncu_run.txt")"
  grep -E " ms, cuBLASLt| ERROR|failed" "$OUT/ncu_run.txt" | head -24 | cut -c1-200
  "$NCUBIN" -i /tmp/fp8ncu.ncu-rep --page raw --csv --print-units base > "$OUT/ncu_raw.csv" 2>&1
  python3 "$D/gemm_fp8_ncu_summary.py" "$OUT/ncu_raw.csv" 2>&1 | cut -c1-400
fi
IFS=';' read -ra forced <<< "${FORCE:-}"
i=0
for f in "${forced[@]}"; do
  t0=$(date +%s) i=$((i + 1))
  timeout "${TEST_TIMEOUT:-40}" "$T" test --kernel gemm.fp8 --config "$f" --timeout 5 > "$OUT/test$i.txt" 2>&1
  echo "== test quick --config $f rc=$? $(( $(date +%s) - t0 ))s: $(grep -E 'passed, ' "$OUT/test$i.txt")"
  grep -E " FAIL " "$OUT/test$i.txt" | head -8 | cut -c1-220
done
if [ -n "${GEMM_SETS-defaults}" ]; then
  export GEMM_SETS=${GEMM_SETS-defaults} GEMM_SHAPES=${GEMM_SHAPES:-1,2,3,4,5} GEMM_SUMMARY=1
  t0=$(date +%s)
  OUT=$OUT timeout "${LUA_TIMEOUT:-150}" "$T" run --launch-timeout 10 --allow-write "$OUT" "$D/gemm_fp8_cublas.lua" \
    > "$OUT/bench.txt" 2>&1
  echo "== lua $GEMM_SETS at $GEMM_SHAPES rc=$? $(( $(date +%s) - t0 ))s"
  grep -E "FAIL|ERROR|baseline:" "$OUT/bench.txt" | head -8 | cut -c1-200
  python3 "$D/gemm_fp8_cublas_table.py" "$OUT/gemm_fp8_cublas.json"
  sed -n '/^shape /,$p' "$OUT/bench.txt" | cut -c1-220
fi
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader
