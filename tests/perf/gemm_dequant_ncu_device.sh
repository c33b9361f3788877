#!/bin/bash
# gemm.dequant at decode, diagnosed on a Hopper GPU: the DRAM bytes under bench's own L2 flush (bench --dram), then ncu
# (its own cache flush) per config: duration, DRAM bytes and throughput, occupancy, and the gemv path's warp stalls.
# Bundle DIR as tests/perf/gemm_dequant_device.sh says (tilelab, libraries, kernels/, cache.tar.xz), copy this script
# into it, then on the device: bash DIR/gemm_dequant_ncu_device.sh (ncu's reports land in $OUT).
D=$(cd "$(dirname "$0")" && pwd)
export LD_LIBRARY_PATH=$D/lib TILELAB_KERNELS_DIR=$D/kernels TILELAB_CACHE_DIR=/tmp/tlc_dq FONTCONFIG_FILE=$D/fonts.conf
mkdir -p $TILELAB_CACHE_DIR && tar xJf $D/cache.tar.xz -C $TILELAB_CACHE_DIR
T=$D/tilelab
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
echo "ncu: $NCU"
P8="N=8192,K=8192,wtype=int4,group=128"
file() { echo "$OUT/$1_$(echo "$2$3" | tr -c 'a-zA-Z0-9\n' '_').txt"; }
for c in "M=1,$P8|path=gemv" "M=1,$P8|path=wgmma" "M=16,$P8|path=gemv" "M=1,N=28672,K=8192|path=gemv" \
         "M=1,N=28672,K=8192|path=wgmma"; do
  p=${c%%|*}; cfg=${c##*|}
  echo "== bench --dram $p $cfg"
  timeout 40 $T bench gemm.dequant --problem $p --config $cfg --timer cupti --repeat 20 --dram --no-store 2>&1 |
    grep -E "PASS|FAIL|DRAM|median|error" | cut -c1-200
done
for c in "M=1,$P8|path=gemv" "M=1,$P8|path=wgmma" "M=16,$P8|path=gemv" "M=1,N=28672,K=8192|path=gemv" \
         "M=1,$P8|path=gemv,splits=2" "M=1,$P8|path=gemv,warp_rows=32" "M=1,$P8|path=gemv,splits=16"; do
  p=${c%%|*}; cfg=${c##*|}; f=$(file ncu "$p" "$cfg")
  echo "== ncu $p $cfg"
  timeout 60 $NCU --target-processes all --clock-control none --cache-control all -k regex:gemm_dequant -c 1 \
    --section SpeedOfLight --section WarpStateStats --section Occupancy \
    --metrics dram__bytes_read.sum,dram__bytes_write.sum,smsp__inst_executed.sum \
    $T bench gemm.dequant --problem $p --config $cfg --repeat 1 --warmup 0 --no-store > "$f" 2>&1
  grep -E "Duration|DRAM Throughput|Compute \(SM\)|dram__bytes|smsp__inst_executed|Achieved Occupancy|Warp Cycles Per Issued|Theoretical Occ" "$f" |
    tr -s ' ' | cut -c1-150
done
for c in "M=1,$P8|path=gemv" "M=16,$P8|path=gemv"; do
  p=${c%%|*}; cfg=${c##*|}; f=$(file stall "$p" "$cfg")
  echo "== ncu stalls $p $cfg"
  timeout 60 $NCU --target-processes all --clock-control none --cache-control all -k regex:gemm_dequant -c 1 \
    --section WarpStateStats --page raw $T bench gemm.dequant --problem $p --config $cfg --repeat 1 --warmup 0 --no-store > "$f" 2>&1
  grep -E "issue_stalled.*per_issue_active.ratio" "$f" | tr -s ' ' | sort -t' ' -k4 -g -r | awk '$NF+0 > 0.3' | head -12
done
