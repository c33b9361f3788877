#!/usr/bin/env bash
# On a GPU server: the GPU test binaries and a benchmark table from a bundle made by
# `cmake/bundle_for_device.sh DIR build/tilelab build/tests/test_*_gpu`. Usage: gpu_checks.sh DIR [quick|samples]
# (quick: the tests only; samples: only the Lua GPU test and every sample script, outputs under $OUT or /tmp).
set -uo pipefail
dir=$(cd "$1" && pwd)
export LD_LIBRARY_PATH=$dir/lib TILELAB_EXE=$dir/tilelab FONTCONFIG_FILE=$dir/fonts.conf
tl=$dir/tilelab
if [ "${2:-}" = samples ]; then
  out=${OUT:-/tmp}/tl_samples && mkdir -p "$out"
  repo=$(cd "$(dirname "$0")/../.." && pwd)
  $tl run --allow-write "$out" --launch-timeout 5 "$repo/tests/lua/gpu.lua" "$out/lua_gpu" 2>&1 | tail -2
  for s in "$repo"/samples/*.lua; do
    name=$(basename "$s" .lua)
    TIMEFORMAT="$name: %R s"
    { time $tl run --allow-write "$out" "$s" "$out/$name" > "$out/$name.log" 2>&1; } 2>&1
    echo "  exit $? ($(tail -1 "$out/$name.log"))"
  done
  exit 0
fi
for t in "$dir"/test_*_gpu; do
  timeout 600 "$t" > "/tmp/$(basename "$t").log" 2>&1
  rc=$?  # before any command substitution below resets $?
  echo "$(basename "$t"): exit $rc $(grep -E '^\[  (PASSED|FAILED) ' "/tmp/$(basename "$t").log" | tr '\n' ' ')"
done
$tl info --measure --save-profile /tmp/tl_profile.json > /dev/null 2>&1 && echo "device profile: /tmp/tl_profile.json"
$tl test --junit /tmp/tl.xml | tail -3
$tl test --kernel test.oob | tail -2
$tl test --kernel test.spin --timeout 5 | tail -2
[ "${2:-}" = quick ] && exit 0
rm -rf /tmp/tl_runs && mkdir -p /tmp/tl_runs && n=0
bench() { echo "== bench $*"; n=$((n + 1)); $tl bench "$@" --json /tmp/tl_runs/$n.json 2>&1 | tail -5; }
bench copy --problem n=268435456,dtype=f32 --dram
bench elementwise --problem n=268435456,dtype=bf16
bench rmsnorm --problem rows=65536,cols=4096,dtype=bf16
bench softmax --problem rows=65536,cols=4096,dtype=bf16
for s in M=8192,N=8192,K=8192 M=4096,N=4096,K=4096 M=8192,N=8192,K=1024 M=4096,N=4096,K=512; do
  bench gemm.wgmma --problem $s --vs cublas
done
bench gemm.wgmma --problem M=4096,N=4096,K=512 --config block_N=128,num_stages=6,panel=8 --vs cublas
bench gemm.mma --problem M=8192,N=8192,K=8192 --config block_N=256,num_stages=3 --vs cublas
bench gemm.simt --problem M=4096,N=4096,K=4096 --vs cublas
bench attn.fwd.mma --problem batch=4,seq_q=8192,seq_k=8192,heads=16,dim=128 --config block_M=128,block_N=128,warps=8
bench attn.fwd.wgmma --problem batch=4,seq_q=8192,seq_k=8192,heads=16,dim=128
bench attn.fwd.wgmma --problem batch=16,seq_q=2048,seq_k=2048,heads=16,dim=128,causal=true
bench mla.decode --problem batch=128,seq_q=1,heads=64,seq_k=8192,varlen=true
bench mla.decode --problem batch=128,seq_q=2,heads=128,seq_k=8192,varlen=true,causal=true
# Probe overhead (target <= 3%): the kernel and its probe build timed in the same worker, same warm-up, repeats, L2 flush.
bench gemm.wgmma --problem M=8192,N=8192,K=8192 --timeline
tmp=$(mktemp -d) && $tl timeline gemm.wgmma --problem M=4096,N=4096,K=4096 --stats --out "$tmp/wgmma.json" 2>&1 | tail -12
echo "== roofline of the runs above (/tmp/tl_roofline.png, data in /tmp/tl_roofline.csv)"
$tl roofline --from /tmp/tl_runs/*.json --out /tmp/tl_roofline.png && $tl roofline --from /tmp/tl_runs/*.json --out /tmp/tl_roofline.csv > /dev/null
