#!/usr/bin/env bash
# mla.decode at the memory-bound long caches (issue 19 item 3, mlamb): in one call, within about 145 s of command,
# (1) tests/perf/mla_mb_rounds.lua (its CONFIGS_16K / CONFIGS; mlamb's call: MB 16384 the default, l2_ahead=1 / 2,
# evict_first=off, sms=264, MB 8192 / 4096 the default and l2_ahead=1 / 2 (a switch since taken out: QM1 / QM2 below
# name the quick matrices' forced configs); 3 alternated rounds, 50 runs a point, every run float64-checked, each run's time at
# 16384), (2) FlashMLA's dense decode on the MB shapes (flashmla_dense.py, its own process), (3) the quick matrix with
# QM1 and QM2 forced (when set), (4) a timeline of the default at MB 16384 (stats, and mla_tl_ends.py on its trace).
# Bundle DIR: the stripped tilelab (cmake/bundle_for_device.sh), kernels/, device_env.sh, these scripts,
# flashmla_dense.py + mla_lengths.py + cuda_timing.py, fm.tgz (FlashMLA 9241ae3's prebuilt package) and cache.tar.xz (the NVRTC cache,
# filled without a GPU). There: bash DIR/mla_mb_device.sh; $OUT gets the logs and summary.txt.
D=$(cd "$(dirname "$0")" && pwd)
. "$D/device_env.sh" mlamb
t0=$(date +%s)
el() { echo "$(( $(date +%s) - t0 )) s"; }
left() { local l=$(( ${END:-145} - ($(date +%s) - t0) )); [ "$l" -lt 1 ] && l=1; [ "$l" -lt "$1" ] && echo "$l" || echo "$1"; }
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader >> "$S" 2>&1
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv,noheader -lms 500 > "$OUT/smi.csv" 2>&1 &
smi=$!
P16="batch=128,seq_q=1,heads=64,seq_k=16384,varlen=true"

timeout "$(left ${ROUNDS_S:-72})" "$T" run "$D/mla_mb_rounds.lua" > "$OUT/rounds.txt" 2>&1
echo "rounds: rc=$? at $(el), $(grep -c '^ROW' "$OUT/rounds.txt") rows, $(grep -c '|FAIL|' "$OUT/rounds.txt") FAIL; $(tail -1 "$OUT/rounds.txt")" >> "$S"

rm -rf /tmp/flashmla && tar xzf "$D/fm.tgz" -C /tmp
PYTHONPATH=/tmp/flashmla:$D PYTHONUNBUFFERED=1 ONLY="MB" timeout "$(left 30)" python3 "$D/flashmla_dense.py" > "$OUT/fm.txt" 2>&1
echo "FlashMLA: rc=$? at $(el)" >> "$S"
grep -E "FlashMLA" "$OUT/fm.txt" | head -5 >> "$S"

[ -n "${QM1:-}" ] && kernel_test qm1 "$(left 18)" mla.decode --config "$QM1"
[ -n "${QM2:-}" ] && kernel_test qm2 "$(left 18)" mla.decode --config "$QM2"
echo "matrices at $(el)" >> "$S"

timeout "$(left 20)" "$T" timeline mla.decode --problem "$P16" --out /tmp/mlamb_tl.json --stats > "$OUT/timeline.txt" 2>&1
echo "timeline: rc=$? at $(el)" >> "$S"
[ -s /tmp/mlamb_tl.json ] && timeout "$(left 12)" python3 "$D/mla_tl_ends.py" /tmp/mlamb_tl.json >> "$OUT/timeline.txt" 2>&1
kill "$smi" 2>/dev/null
python3 - "$OUT/smi.csv" >> "$S" 2>&1 <<'PY'
import sys
rows = [l.split(",") for l in open(sys.argv[1]) if "MHz" in l]
c = [int(r[1].split()[0]) for r in rows if float(r[2].split()[0]) > 200]
if c:
    print(f"SM clock under load (> 200 W): {len(c)} of {len(rows)} samples, {sum(x >= 1900 for x in c)} at >= 1900 MHz,"
          f" min {min(c)}, max {max(c)} MHz; max temperature {max(int(r[3]) for r in rows)} C")
PY
python3 "$D/mla_mb_table.py" "$OUT/rounds.txt" "$OUT/fm.txt" >> "$S" 2>&1
echo "done at $(el)" >> "$S"
cat "$S"
