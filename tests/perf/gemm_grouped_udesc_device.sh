#!/usr/bin/env bash
# gemm.grouped's uniform_desc (docs/perf.md, 2026-11-28, grouped3), one device call: the quick matrix with
# uniform_desc=true forced, A B B A rounds of uniform_desc=false (main's default kernels) against true
# (gemm_grouped_udesc.lua) in one worker (bf16 and e4m3 row scales two rounds, block one), then torch._grouped_mm /
# torch._scaled_grouped_mm at issue 21's anchors (grouped_torch.py, one pass); the SM clock sampled throughout. Bundle D (the device runs the session's checkout, so everything travels in D):
#   cmake/bundle_for_device.sh D build/tilelab; cp -r kernels tests/perf/{device_env.sh,grouped_torch.py,cuda_timing.py,
#   gemm_grouped_udesc.lua} D; cp this file D/run.sh; the NVRTC cache filled here (tilelab test --kernel gemm.grouped
#   --config uniform_desc=true; UD_COMPILE_ONLY=1 tilelab run gemm_grouped_udesc.lua) as D/cache.tar.xz.
# Then on the device: bash D/run.sh. UD_* pass through to the lua.
D=$(cd "$(dirname "$0")" && pwd); . "$D/device_env.sh" grouped3
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv,noheader | tee -a "$S"
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,clocks_throttle_reasons.active --format=csv,noheader -lms 200 \
  > "$OUT/clocks.csv" 2>&1 &
smi=$!
t0=$(date +%s)
kernel_test test_ud 25 gemm.grouped --config uniform_desc=true
echo "quick: $(( $(date +%s) - t0 )) s" >> "$S"
t1=$(date +%s)
OUT=$OUT UD_KINDS=${UD_KINDS:-bf16,row,block} UD_BLOCK_ROUNDS=${UD_BLOCK_ROUNDS:-1} timeout 45 stdbuf -oL "$T" run \
  --launch-timeout 10 --allow-write "$OUT" "$D/gemm_grouped_udesc.lua" > "$OUT/bench.txt" 2>&1
echo "bench rc=$? $(( $(date +%s) - t1 )) s" >> "$S"
t2=$(date +%s)
(cd "$D" && PYTHONUNBUFFERED=1 timeout 20 python3 grouped_torch.py > "$OUT/torch.txt" 2>&1)
echo "torch rc=$? $(( $(date +%s) - t2 )) s" >> "$S"
kill "$smi"
awk -F', ' '{print $2, $4}' "$OUT/clocks.csv" | sort | uniq -c | sort -rn | head -6 >> "$S"
cat "$S"
grep -vE "^ *$" "$OUT/bench.txt"
grep -E "TFLOP|unavailable" "$OUT/torch.txt" | cut -c1-110
