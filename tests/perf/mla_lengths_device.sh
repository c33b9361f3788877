#!/usr/bin/env bash
# Issue 19 item 3, one call: mla.decode's default at the dense anchors (CB 8192 / 4096, L32, MB 4096; mla_mb_rounds.lua with SHAPES,
# ROUNDS alternated rounds, every run float64-checked, CUDA events, L2 flushed), then FlashMLA 9241ae3's dense decode
# twice on each draw of the varlen lengths — LENGTHS=tilelab (mla.decode's own, so ours ÷ theirs by time is exact) and
# LENGTHS=flashmla (its test's, what every comparison before session 49 used) — alternated t f f t.
# Bundle (no GPU here): stripped tilelab, kernels/, device_env.sh, mla_mb_rounds.lua, flashmla_dense.py, mla_lengths.py,
# cuda_timing.py, FlashMLA's prebuilt fm.tgz.aa (/work/notes/s47/fm), cache.tar.xz (the NVRTC cache of the four points).
# Call: run(command="bash .dev/mlalens/run.sh", carry=[".dev/mlalens"], timeout_s=300): ~120 s of command.
D=$(cd "$(dirname "$0")" && pwd); . "$D/device_env.sh" mlalens
t0=$(date +%s)
nvidia-smi --query-gpu=clocks.sm,clocks_throttle_reasons.active --format=csv,noheader -lms 500 > "$OUT/smi.csv" 2>&1 &
SMI=$!
export SHAPES="CB 8192|batch=128,seq_q=2,heads=128,seq_k=8192,varlen=true,causal=true;CB 4096|batch=128,seq_q=2,heads=128,seq_k=4096,varlen=true,causal=true;L32|batch=32,seq_q=1,heads=128,seq_k=32768,varlen=true;MB 4096|batch=128,seq_q=1,heads=64,seq_k=4096,varlen=true"
CONFIGS="-" ROUNDS=${ROUNDS:-3} REP=20 timeout 120 "$T" run --timeout 120 "$D/mla_mb_rounds.lua" > "$OUT/rounds.txt" 2>&1
echo "ours: rc=$? $(grep -c '|PASS|' "$OUT/rounds.txt") PASS, $(grep -cE '\|(FAIL|ERROR)' "$OUT/rounds.txt") FAIL/ERROR at $(( $(date +%s) - t0 )) s" >> "$S"
grep -E "^ROW" "$OUT/rounds.txt" >> "$S"
tar xzf "$D/fm.tgz.aa" -C /tmp 2>> "$S"
for draw in tilelab flashmla flashmla tilelab; do
  (cd "$D" && LENGTHS=$draw ONLY="CB 4096|CB 8192|MB 4096|L32" PYTHONPATH=/tmp/flashmla:$D timeout 60 python3 flashmla_dense.py) \
    >> "$OUT/flashmla.txt" 2>&1
done
echo "flashmla: at $(( $(date +%s) - t0 )) s" >> "$S"
grep -E "FlashMLA" "$OUT/flashmla.txt" >> "$S"
kill "$SMI" 2>/dev/null
awk -F', ' '{print $1, $2}' "$OUT/smi.csv" | sort | uniq -c | sort -rn | head -4 >> "$S"
cat "$S"
