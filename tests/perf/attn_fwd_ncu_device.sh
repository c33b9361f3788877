#!/usr/bin/env bash
# attn.fwd.wgmma and cuDNN's SDPA forward under Nsight Compute on a GPU, one launch each (issue 20 item 3): warp states,
# per-SASS-instruction stall samples, pipe utilization, issue slots, registers, CTA shape and grid, at PROBLEM.
#
# Bundle DIR as tests/perf/attn_fwd_causal_device.sh --prepare does (tilelab, libraries, kernels/, the NVRTC cache),
# copy this script into it, then there: `bash DIR/attn_fwd_ncu_device.sh DIR` before the other script (whose
# environment empties $OUT/summary.txt). Knobs: PROBLEM (default the d 128 reference: b 8, h 16, 4k, not causal),
# CONFIGS (ours, space separated; - = the defaults). For each it writes NAME_details.txt (every section, raw metrics)
# and NAME_source.csv (the SASS with its stall samples) into $OUT/ncu.tgz; cuDNN's kernel is found by name first (the
# longest launch of `bench --vs cudnn` that is not ours). Key lines go to $OUT/ncu_summary.txt.
set -u
D=$(cd "${1:-$(dirname "$0")}" && pwd)
. "$D/device_env.sh" attn_fwd_ncu
S=$OUT/ncu_summary.txt R=/tmp/ncu_out
: > "$S"
mkdir -p "$R"
PROBLEM=${PROBLEM:-batch=8,seq_q=4096,seq_k=4096,heads=16,dim=128}
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
echo "== ncu $NCU: $($NCU --version 2>&1 | tail -1)" >> "$S"
SECTIONS=(--section LaunchStats --section Occupancy --section SpeedOfLight --section WarpStateStats
  --section SourceCounters --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis)
BENCH=("$T" bench attn.fwd.wgmma --problem "$PROBLEM" --repeat 1 --warmup 0 --no-store)
# One launch of the kernel whose name matches $1 (a regex), with config $2; reports into $R/$3_*.
profile() {
  local rep=/tmp/ncu_$3
  timeout 240 "$NCU" --target-processes all --clock-control none -k "regex:$1" -c 1 "${SECTIONS[@]}" \
    --import-source no -f -o "$rep" "${BENCH[@]}" ${2:+--config "$2"} ${4:+--vs cudnn} > "/tmp/ncu_$3.log" 2>&1
  echo "== ncu $3 (${2:-defaults}) rc=$?" >> "$S"
  grep -E "==ERROR==|==WARNING==" "/tmp/ncu_$3.log" | head -3 >> "$S"
  "$NCU" -i "$rep.ncu-rep" --page details --print-details all > "$R/$3_details.txt" 2>&1
  "$NCU" -i "$rep.ncu-rep" --page raw >> "$R/$3_details.txt" 2>&1
  "$NCU" -i "$rep.ncu-rep" --page source --csv --print-source sass > "$R/$3_source.csv" 2>&1
  grep -E "^  [A-Za-z_].*\(|Duration|Registers Per|Block Size|Grid Size|Shared Memory Config|Dynamic Shared|Achieved Occ|Theoretical Occ|Issue Slots Busy|Issued Ipc|SM Busy|Compute \(SM\) Th|Memory Th|Warp Cycles Per Issued|Avg. Active Threads|L1/TEX Hit|L2 Hit|DRAM Th" \
    "$R/$3_details.txt" | head -32 | tr -s ' ' | cut -c1-160 >> "$S"
  grep -E "pipe_tensor.*(pct|ratio)|inst_executed_pipe_(alu|fma|fmaheavy|xu|uniform)\.|smsp__issue_active\.avg\.pct|warp_issue_stalled_.*_per_warp_active\.pct" \
    "$R/$3_details.txt" | tr -s ' ' | awk '{v=$NF; gsub(",","",v); if (v+0 >= 1 || $0 ~ /pipe_tensor|issue_active/) print}' | cut -c1-140 | head -40 >> "$S"
}
# cuDNN's forward kernel: the longest launch of a bench --vs cudnn that is not attn_fwd_wgmma.
timeout 240 "$NCU" --target-processes all --clock-control none --metrics gpu__time_duration.sum --csv --page raw \
  "${BENCH[@]}" --vs cudnn > /tmp/ncu_list.csv 2>/tmp/ncu_list.err
CUDNN_K=$(python3 - <<'EOF'
import csv
rows = [r for r in csv.reader(l for l in open("/tmp/ncu_list.csv") if l.startswith('"'))]
head, best = rows[0], ("", -1.0)
ki, ti = head.index("Kernel Name"), head.index("gpu__time_duration.sum")
for r in rows[2:]:
    try:
        t = float(r[ti].replace(",", ""))
    except (ValueError, IndexError):
        continue
    if "attn_fwd_wgmma" not in r[ki] and t > best[1]:
        best = (r[ki], t)
print(best[0])
EOF
)
echo "== cuDNN's kernel (the longest of $(grep -c '^"' /tmp/ncu_list.csv) CSV rows that is not ours): $CUDNN_K" >> "$S"
for c in ${CONFIGS:--}; do
  [ "$c" = - ] && c=""
  profile "attn_fwd_wgmma" "$c" "ours_$(echo "${c:-defaults}" | tr -c 'a-zA-Z0-9\n' '_')"
done
if [ -n "$CUDNN_K" ]; then
  profile "^$(printf '%s' "${CUDNN_K%%(*}" | cut -c1-60 | sed 's/[][\.*^$()+?{}|]/\\&/g')" "" cudnn vs
fi
tar czf "$OUT/ncu.tgz" -C "$R" .
