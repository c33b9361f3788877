#!/usr/bin/env bash
# Session 49 (issue 21 item 4): gemvh200's new gemv autos on the H200 — the quick matrix and random draws of
# gemm.dequant at the new defaults, gemv_device.lua's float64 check of the default on every decode test problem, then
# gemv_screen.lua over cands.json where each changed shape's "force" is the config that builds main's old default in
# this binary (tests/perf/gemv_old_configs.py): both float64-checked once, then ROUNDS alternated rounds new / old.
# Bundle: stripped tilelab, kernels/, device_env.sh, gemv_screen.lua, gemv_device.lua, cands.json, the NVRTC cache.
# Call: run(command="bash .dev/gemvchk/run.sh", carry=[".dev/gemvchk"], timeout_s=300).
D=$(cd "$(dirname "$0")" && pwd); . "$D/device_env.sh" gemvchk
t0=$(date +%s)
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader >> "$S" 2>&1
nvidia-smi --query-gpu=clocks.sm,clocks_throttle_reasons.active --format=csv,noheader -lms 500 > "$OUT/smi.csv" 2>&1 &
SMI=$!
kernel_test quick 40 gemm.dequant
kernel_test random 60 gemm.dequant --random 8 --seed 49
CHECK_CONFIGS=path=gemv OUT=$OUT timeout 60 "$T" run --allow-write "$OUT" --launch-timeout 10 "$D/gemv_device.lua" check > "$OUT/check.txt" 2>&1
echo "gemv_device check rc=$? $(grep -E '^checks:' "$OUT/check.txt") at $(( $(date +%s) - t0 )) s" >> "$S"
grep -E "FAIL|ERROR" "$OUT/check.txt" | head -5 >> "$S"
VERIFY_DEFAULT=1 TOP=0 ROUNDS=${ROUNDS:-4} DEQUANT_REP=${DEQUANT_REP:-20} OUT=$OUT timeout ${SCREEN_T:-200} "$T" run \
  --allow-write "$OUT" --launch-timeout 10 "$D/gemv_screen.lua" "$D/cands.json" > "$OUT/screen.txt" 2>&1
echo "rounds rc=$? at $(( $(date +%s) - t0 )) s: $(grep -c ' PASS ' "$OUT/screen.txt") PASS, $(grep -cE ' FAIL |ERROR' "$OUT/screen.txt") FAIL/ERROR" >> "$S"
grep -E "measured HBM|done at|^V .* FAIL" "$OUT/screen.txt" >> "$S"
kill $SMI
awk -F', ' '{print $1, $2}' "$OUT/smi.csv" | sort | uniq -c | sort -rn | head -4 >> "$S"
cat "$S"
