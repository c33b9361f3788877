#!/usr/bin/env bash
# gemm.wgmma beside cuBLAS under Nsight Compute (issue 21 item 3): one launch of our kernel and one of cublasGemmEx's
# kernel per shape (`tilelab bench gemm.wgmma --vs cublas --repeat 0`: the check launch, then cuBLAS's comparison
# launch; ncu follows the worker with --target-processes all), ncu's full set (PC sampling included) at the boosted
# clock (--clock-control none), each report exported as raw and source (SASS) CSV and read by gemm_bf16_ncu_summary.py;
# then (TIMINGS=1) gemm_bf16.lua with the bundle's knobs, and (TIMELINES) `tilelab timeline --stats` entries.
#
# Here: a bundle as `gemm_bf16_device.sh --prepare DIR` makes it (tilelab, lib/, kernels/, cache.tar.xz, knobs.sh),
# plus this script and gemm_bf16_ncu_summary.py. There (the device tool, carry [DIR]): `bash DIR/gemm_bf16_ncu_device.sh
# DIR`; OUT receives summary.txt (printed last) and ncu.tar.xz (the CSVs). Knobs: SHAPES ('M=..,N=..,K=..' entries,
# ';'-separated; default 4096^3 and 6144^3), CONFIG (ours; default the defaults).
set -u
D=$(cd "${1:-$(dirname "$0")}" && pwd)
[ -f "$D/knobs.sh" ] && . "$D/knobs.sh"
. "$D/device_env.sh" gemm_ncu
SHAPES=${SHAPES:-M=4096,N=4096,K=4096;M=6144,N=6144,K=6144} CONFIG=${CONFIG:-}
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
W=$(mktemp -d)
echo "ncu: $NCU ($("$NCU" --version | tail -1))" >> "$S"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv,noheader >> "$S" 2>&1
profile() {  # NAME PROBLEM
  local n=$1 p=$2 t0
  t0=$(date +%s)
  timeout 60 "$NCU" --target-processes all --clock-control none --set full --import-source no \
    -k 'regex:gemm_wgmma|nvjet|sm90_xmma|cutlass' -c 2 -o "$W/$n" -f \
    "$T" bench gemm.wgmma --problem "$p" ${CONFIG:+--config "$CONFIG"} --vs cublas --repeat 0 --no-store \
    > "$W/${n}_run.txt" 2>&1
  echo "== ncu $n ($p): rc=$? in $(( $(date +%s) - t0 )) s $(grep -m1 -E '==ERROR==' "$W/${n}_run.txt")" >> "$S"
  "$NCU" -i "$W/$n.ncu-rep" --page raw --csv --print-units base > "$W/${n}_raw.csv" 2>&1
  "$NCU" -i "$W/$n.ncu-rep" --page source --csv --print-source sass > "$W/${n}_source.csv" 2>&1
  python3 "$D/gemm_bf16_ncu_summary.py" report "$W/${n}_raw.csv" "$W/${n}_source.csv" >> "$S" 2>&1
}
IFS=';' read -ra shapes <<< "$SHAPES"
i=0
for p in "${shapes[@]}"; do
  profile "s$i" "$p"
  i=$((i + 1))
  if [ $i = 1 ] && [ "${TIMINGS:-0}" = 1 ]; then
    t0=$(date +%s)
    timeout 90 "$T" run --launch-timeout 10 --allow-write "$OUT" "$D/gemm_bf16.lua" > "$OUT/bench.txt" 2>&1
    echo "== gemm_bf16.lua: rc=$? in $(( $(date +%s) - t0 )) s" >> "$S"
    grep -vE "^ *$" "$OUT/bench.txt" | sed -E 's/  +/ /g' | cut -c1-170 >> "$S"
  fi
done
IFS=';' read -ra tls <<< "${TIMELINES:-}"
for e in "${tls[@]}"; do
  [ -z "$e" ] && continue
  echo "== timeline ${e%%|*} config ${e#*|}" >> "$S"
  timeout 30 "$T" timeline gemm.wgmma --problem "${e%%|*}" --config "${e#*|}" --stats --out /tmp/tl.json 2>&1 | tail -14 >> "$S"
done
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv,noheader >> "$S" 2>&1
tar cJf "$OUT/ncu.tar.xz" -C "$W" --exclude='*.ncu-rep' .
cat "$S"
