#!/usr/bin/env bash
# Session 49 (issue 21 item 4, the H200): how fast the H200 streams a decode gemv's weight bytes at all
# (read_ceiling.cu: plain reads of exactly the anchor's bytes over grids and loads in flight, beside a 1 GiB copy), then
# gemv_screen.lua over SET=wide's candidates (gemv_screen_cands.py: the launch shape and one switch at a time at int4
# M 1 / 4 / 8 / 16 of both anchor shapes and fp4 group 32 M 16), the top two per shape float64-checked, then ROUNDS
# alternated rounds of default / picks (and each shape's forced configs, SET=wide2). Without read_ceiling in the bundle
# that part is left out; ORDER names the shapes (all of cands.json's when empty). Bundle (no GPU here): the stripped tilelab, kernels/, device_env.sh,
# gemv_screen.lua, cands.json, read_ceiling (nvcc -O3 -arch=sm_90a), the NVRTC cache of every candidate (cache.tar.xz).
# Call: run(command="bash .dev/gemvh200/run.sh", carry=[".dev/gemvh200"], timeout_s=420); round 2 (SET=wide2):
# run(command="ORDER=... TOP=1 bash .dev/gemvh200b/run.sh", carry=[".dev/gemvh200b"]).
D=$(cd "$(dirname "$0")" && pwd); . "$D/device_env.sh" gemvh200
t0=$(date +%s)
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader >> "$S" 2>&1
nvidia-smi --query-gpu=clocks.sm,clocks_throttle_reasons.active --format=csv,noheader -lms 500 > "$OUT/smi.csv" 2>&1 &
SMI=$!
if [ -x "$D/read_ceiling" ]; then
  timeout 60 "$D/read_ceiling" > "$OUT/ceiling.txt" 2>&1
  echo "read_ceiling rc=$? at $(( $(date +%s) - t0 )) s" >> "$S"
  grep -E "copy|best" "$OUT/ceiling.txt" >> "$S"
fi
ORDER=${ORDER:-A_M1,B_M1,A_M16,B_M16,A_M8,B_M8,A_M4,B_M4,AF_M16,BF_M16} SCREEN_S=${SCREEN_S:-210} TOP=${TOP:-2} ROUNDS=${ROUNDS:-4} \
  DEQUANT_REP=${DEQUANT_REP:-10} OUT=$OUT timeout ${SCREEN_T:-330} "$T" run --allow-write "$OUT" --launch-timeout 10 \
  "$D/gemv_screen.lua" "$D/cands.json" > "$OUT/screen.txt" 2>&1
echo "screen rc=$? at $(( $(date +%s) - t0 )) s: $(grep -c ' PASS ' "$OUT/screen.txt") PASS, $(grep -cE ' FAIL |ERROR' "$OUT/screen.txt") FAIL/ERROR" >> "$S"
grep -E "measured HBM|PICK|done at|SKIP" "$OUT/screen.txt" >> "$S"
kill $SMI
awk -F', ' '{print $1, $2}' "$OUT/smi.csv" | sort | uniq -c | sort -rn | head -4 >> "$S"
cat "$S"
