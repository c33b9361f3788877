#!/usr/bin/env bash
# attn.bwd.wgmma beside cuDNN's SDPA backward under Nsight Compute (issue 20 item 1): where each kernel's warps stall,
# instruction by instruction. One launch of each is profiled with ncu's full set (PC sampling included) over
# `tilelab bench --vs cudnn` (both run in the worker; ncu follows it with --target-processes all), and each report is
# exported as CSV: details (every section's metrics), raw (every metric) and source (per SASS instruction: executed
# counts and stall samples). tests/perf/attn_bwd_ncu_summary.py reads them.
#
# Here: `bash tests/perf/attn_bwd_wgmma_device.sh --prepare DIR` (tilelab, kernels/, the NVRTC cache), then copy this
# script and attn_bwd_ncu_summary.py into DIR. There (the device tool, carry [DIR]): `bash DIR/attn_bwd_ncu_device.sh
# DIR`: OUT (default DIR/out) receives ncu.tar.xz (the CSVs) and the summary, printed last. Knobs: PROBLEM (default b 2,
# h 16, 4k, d 128: the d 128 anchor's per-CTA work in 1024 CTAs), CONFIG (ours; default the defaults), PROBLEM2 (also
# ours alone at that problem, as ours2: e.g. PROBLEM = b 2, h 16, 16k and PROBLEM2 = b 8, h 16, 4k, the same CTAs with a
# quarter of the walk; `attn_bwd_ncu_summary.py tiles DIR/ours_source.csv N` then compares the loops per CTA tile).
set -u
D=$(cd "${1:-$(dirname "$0")}" && pwd)
. "$D/device_env.sh" attn_bwd_ncu
PROBLEM=${PROBLEM:-batch=2,seq_q=4096,seq_k=4096,heads=16,heads_kv=16,dim=128} CONFIG=${CONFIG:-}
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
W=$(mktemp -d)
BENCH=("$T" bench attn.bwd.wgmma --problem "$PROBLEM" ${CONFIG:+--config "$CONFIG"} --vs cudnn --no-store --repeat 1 --warmup 0 --timeout 300)
echo "ncu: $NCU ($("$NCU" --version | tail -1))" >> "$S"

# Every kernel of one checked and timed run: name, duration, grid, block, registers, shared memory (which one is
# cuDNN's backward, and its pre/post passes).
timeout 120 "$NCU" --target-processes all --clock-control none --csv --print-units base \
  --metrics gpu__time_duration.sum,launch__grid_size,launch__block_size,launch__registers_per_thread,launch__shared_mem_per_block_dynamic,launch__cluster_dim_x,sm__cycles_elapsed.max,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum \
  "${BENCH[@]}" > "$W/list.csv" 2> "$W/list.err"
python3 "$D/attn_bwd_ncu_summary.py" list "$W/list.csv" > "$W/names.txt" 2>> "$S"
cat "$W/names.txt" >> "$S"
CUDNN=$(grep -m1 '^main ' "$W/names.txt" | cut -d' ' -f2-)

# Ours: the second launch of the kernel is the main one (the first is d_pass's pre-pass, 256 threads a block).
profile() {  # NAME NCU-FILTER... (with BENCH_CMD set: the bench command line BENCH2 instead of BENCH)
  local n=$1; shift
  local -a cmd=("${BENCH[@]}")
  [ -n "${BENCH_CMD:-}" ] && cmd=("${BENCH2[@]}")
  timeout 200 "$NCU" --target-processes all --clock-control none --set full --import-source no "$@" -c 1 \
    -o "$W/$n" -f "${cmd[@]}" > "$W/${n}_run.txt" 2>&1
  echo "ncu $n: rc=$? $(grep -m1 -E '==PROF== Disconnected|==ERROR==' "$W/${n}_run.txt")" >> "$S"
  "$NCU" -i "$W/$n.ncu-rep" --page details --print-details all --csv --print-units base > "$W/${n}_details.csv" 2>&1 ||
    "$NCU" -i "$W/$n.ncu-rep" --page details --csv --print-units base > "$W/${n}_details.csv" 2>&1
  "$NCU" -i "$W/$n.ncu-rep" --page raw --csv --print-units base > "$W/${n}_raw.csv" 2>&1
  "$NCU" -i "$W/$n.ncu-rep" --page source --csv --print-source sass > "$W/${n}_source.csv" 2>&1 ||
    "$NCU" -i "$W/$n.ncu-rep" --page source --csv > "$W/${n}_source.csv" 2>&1
}
profile ours -k regex:attn_bwd_wgmma -s 1
[ -n "$CUDNN" ] && profile cudnn -k "regex:$CUDNN"
if [ -n "${PROBLEM2:-}" ]; then
  BENCH2=("$T" bench attn.bwd.wgmma --problem "$PROBLEM2" ${CONFIG:+--config "$CONFIG"} --no-store --repeat 1 --warmup 0 --timeout 300)
  BENCH_CMD=1 profile ours2 -k regex:attn_bwd_wgmma -s 1
fi
python3 "$D/attn_bwd_ncu_summary.py" report "$W" >> "$S" 2>&1
rm -f "$W"/*.ncu-rep.bak
tar cJf "$OUT/ncu.tar.xz" -C "$W" --exclude='*.ncu-rep' . && cp "$W/ours.ncu-rep" "$W/cudnn.ncu-rep" "$OUT/" 2>/dev/null
cat "$S"
