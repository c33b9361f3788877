#!/usr/bin/env bash
# gemm.wgmma bf16 configs screened on the H200 at issue 21's eight shapes beside cuBLAS, then the best two per shape
# against the default in four alternated passes (A B B A), all in one call (issue 21 item 2). The bundle D holds the
# binary, kernels/, device_env.sh, gemm_bf16.lua, bf16h200_pick.py, shapes.txt (bf16h200_cands.py's output: per shape
# the pruned configs, the default first and last) and cache.tar.xz (their NVRTC cache, filled without a GPU).
# There: bash D/bf16h200_device.sh; $OUT gets summary.txt, screen.txt, picks.txt, rounds.txt, test_quick.txt, smi.csv.
# Knobs: SCREEN_END (s from the start by which the screen stops, 200), END (the rounds' deadline, 292), NPICK (2).
D=$(cd "$(dirname "$0")" && pwd); . "$D/device_env.sh" bf16h200
t0=$(date +%s); el() { echo $(( $(date +%s) - t0 )); }
nvidia-smi --query-gpu=timestamp,clocks.sm,temperature.gpu,power.draw,clocks_throttle_reasons.active \
  --format=csv,noheader -lms 500 > "$OUT/smi.csv" 2>&1 & SMI=$!
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader >> "$S" 2>&1
kernel_test test_quick 60 gemm.wgmma
echo "(quick matrix done at $(el) s)" >> "$S"
SCR=$OUT/screen.txt; : > "$SCR"
while IFS=$'\t' read -r shape cfgs; do
  left=$(( ${SCREEN_END:-200} - $(el) ))
  if [ "$left" -lt 10 ]; then echo "screen $shape: skipped (deadline)" >> "$S"; continue; fi
  [ "$left" -gt 60 ] && left=60
  echo "## screen $shape" >> "$SCR"
  env -u OUT GEMM_SHAPES="$shape" GEMM_CONFIGS="$cfgs" GEMM_PASSES=1 GEMM_REP=20 GEMM_VERIFY=first GEMM_JSONL=1 \
    timeout "$left" "$T" run --launch-timeout 10 "$D/gemm_bf16.lua" >> "$SCR" 2>&1
  echo "screen $shape: rc=$? at $(el) s" >> "$S"
done < "$D/shapes.txt"
python3 "$D/bf16h200_pick.py" pick "$SCR" "${NPICK:-2}" > "$OUT/picks.txt" 2>> "$S"
EXTRA=$(head -1 "$OUT/picks.txt")
SHAPES=$(cut -f1 "$D/shapes.txt" | paste -sd';')
left=$(( ${END:-292} - $(el) ))
echo "rounds: GEMM_EXTRA=$EXTRA ($left s left)" >> "$S"
env -u OUT GEMM_SHAPES="$SHAPES" GEMM_CONFIGS= GEMM_EXTRA="$EXTRA" GEMM_PASSES=4 GEMM_REP=30 GEMM_VERIFY=first \
  GEMM_JSONL=1 timeout "$left" "$T" run --launch-timeout 10 "$D/gemm_bf16.lua" > "$OUT/rounds.txt" 2>&1
echo "rounds: rc=$? at $(el) s" >> "$S"
python3 "$D/bf16h200_pick.py" rounds "$OUT/rounds.txt" >> "$S" 2>&1
sed -n '2,$p' "$OUT/picks.txt" | grep -E "^==|\*|default" >> "$S"
kill "$SMI" 2>/dev/null
awk -F', ' '{c[$2]++} END {for (k in c) printf "%s:%d ", k, c[k]; print ""}' "$OUT/smi.csv" >> "$S"
cat "$S"
