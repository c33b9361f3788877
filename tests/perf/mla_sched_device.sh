#!/usr/bin/env bash
# mla.decode's split-KV schedule knobs on the GPU machine (issue 19 item 3, mlasched), one call within END (228) s of
# command: (1) tests/perf/mla_sched_screen.lua: the screen (L32: overhead_blocks {0,1,2,3,5,8} x tie_gap {0,3,6},
# sms=264 / 128, evict_first=on, tile_order=cluster, vec_store=false; CB 8192 / 4096: overhead_blocks {0,1,3,5,8},
# sms=264 and the build switches; the default first and last), up to three finalists, then 3-4 alternated rounds of
# the default and the finalists at CB 8192, CB 4096, L32 and MB 4096, every run float64-checked; (2) the quick matrix
# with each finalist forced; (3) FlashMLA 9241ae3's dense decode (flashmla_dense.py, its own process); (4) the table
# (mla_sched_table.py). Bundle DIR: the stripped tilelab (cmake/bundle_for_device.sh), kernels/, device_env.sh,
# these scripts, flashmla_dense.py + mla_lengths.py + cuda_timing.py, fm.tgz.aa (FlashMLA 9241ae3's prebuilt package, session 47) and
# cache.tar.xz (the NVRTC cache filled here without a GPU by running the Lua script and the quick matrices).
# There: bash DIR/mla_sched_device.sh; $OUT gets screen.txt, flashmla.txt, quick_*.txt, smi.csv, summary.txt, table.txt.
D=$(cd "$(dirname "$0")" && pwd)
. "$D/device_env.sh" mlasched
t0=$(date +%s)
END=${END:-228}
el() { echo "$(( $(date +%s) - t0 )) s"; }
left() { local l=$(( END - ($(date +%s) - t0) )); [ "$l" -lt 1 ] && l=1; [ "$l" -lt "$1" ] && echo "$l" || echo "$1"; }
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader >> "$S" 2>&1
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv,noheader \
  -lms 500 > "$OUT/smi.csv" 2>&1 &
smi=$!
# The Lua's own clock: the screen skips its configs after SCREEN_END s, no round starts that would end past DEADLINE;
# what follows (3 quick matrices ~18 s, FlashMLA ~12 s) needs about 40 s of END.
export SCREEN_END=${SCREEN_END:-95} DEADLINE=${DEADLINE:-$(( END - 48 ))} ROUNDS=${ROUNDS:-4} MAXF=${MAXF:-3}
timeout "$(left $(( END - 40 )))" "$T" run "$D/mla_sched_screen.lua" > "$OUT/screen.txt" 2>&1
echo "screen + rounds: rc=$? at $(el): $(grep -c ' PASS ' "$OUT/screen.txt") PASS, $(grep -c -E ' (FAIL|ERROR) ' "$OUT/screen.txt") FAIL/ERROR; $(tail -1 "$OUT/screen.txt")" >> "$S"
grep -E "^(FINALIST|RANK|stopped)" "$OUT/screen.txt" >> "$S"
i=0
for c in $(grep '^FINALIST ' "$OUT/screen.txt" | cut -d' ' -f2); do
  i=$((i + 1))
  kernel_test "quick_$i" "$(left 12)" mla.decode --config "$c"
done
echo "quick matrices done at $(el)" >> "$S"
rm -rf /tmp/flashmla && tar xzf "$D/fm.tgz.aa" -C /tmp 2>> "$S"
(cd "$D" && ONLY="CB 4096|CB 8192|MB 4096|L32" PYTHONPATH=/tmp/flashmla:$D PYTHONUNBUFFERED=1 timeout "$(left 25)" \
  python3 flashmla_dense.py) > "$OUT/flashmla.txt" 2>&1
echo "flashmla: rc=$? at $(el)" >> "$S"
kill "$smi" 2>/dev/null; wait "$smi" 2>/dev/null
python3 "$D/mla_sched_table.py" "$OUT/screen.txt" "$OUT/flashmla.txt" "$OUT/smi.csv" > "$OUT/table.txt" 2>&1
echo "total $(el)" >> "$S"
cat "$S" "$OUT/table.txt"
