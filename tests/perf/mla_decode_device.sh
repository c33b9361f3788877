#!/usr/bin/env bash
# mla.decode on the H100, one process per bench: the quick test matrix, then the eight issue-6 shapes with the
# epilogue and schedule before mla4 (vec_store=false,tie_gap=0: pair stores, no tie gap) and the defaults alternated
# per shape, plus ablations at MB 4096; prints a table. Usage: mla_decode_device.sh DIR [OUT]
set -uo pipefail
dir=$(cd "$1" && pwd)
out=${2:-/tmp/mla_out}
mkdir -p "$out"
export LD_LIBRARY_PATH=$dir/lib TILELAB_KERNELS_DIR=$dir/kernels TILELAB_CACHE_DIR=${TILELAB_CACHE_DIR:-/tmp/tlc}
T=$dir/tilelab
$T test --kernel mla.decode > "$out/test.log" 2>&1
echo "test: exit $? $(grep -iE 'passed|failed' "$out/test.log" | tail -1)"
grep -iE 'FAIL' "$out/test.log" | head -8
MB="batch=128,seq_q=1,heads=64,varlen=true,dtype=bf16"
CB="batch=128,seq_q=2,heads=128,causal=true,varlen=true,dtype=bf16"
OLD="vec_store=false,tie_gap=0"
n=0
bench() {  # label problem config
  n=$((n + 1))
  $T bench mla.decode --problem "$2" --config "$3" --repeat 20 --no-store --json "$out/b$n.json" > "$out/b$n.log" 2>&1
  python3 - "$out/b$n.json" "$1" "$3" <<'PY'
import json, sys
try:
    r = json.load(open(sys.argv[1]))
    t = r["time_ms"]
    print(f"{sys.argv[2]:<12} {sys.argv[3]:<36} {t['median']:.4f} ms (min {t['min']:.4f})  {r['gbps']:7.1f} GB/s  {r['tflops']:6.1f} TFLOP/s  err {r['rel_error']:.1e}  {'PASS' if r['passed'] else 'FAIL'}")
except Exception as e:
    print(f"{sys.argv[2]:<12} {sys.argv[3]:<36} no record ({e})")
PY
}
{
for sk in 4096 8192 16384 32768; do
  bench "MB $sk" "$MB,seq_k=$sk" "$OLD"
  bench "MB $sk" "$MB,seq_k=$sk" ""
  if [ $sk = 4096 ]; then
    bench "MB $sk" "$MB,seq_k=$sk" "$OLD"
    bench "MB $sk" "$MB,seq_k=$sk" ""
    bench "MB $sk" "$MB,seq_k=$sk" "qk_warpgroups=2"
    bench "MB $sk" "$MB,seq_k=$sk" "overhead_blocks=5"
    bench "MB $sk" "$MB,seq_k=$sk" "overhead_blocks=10"
  fi
done
for sk in 4096 8192 16384 32768; do
  bench "CB $sk" "$CB,seq_k=$sk" "$OLD"
  bench "CB $sk" "$CB,seq_k=$sk" ""
done
} > "$out/table.txt"
cat "$out/table.txt"
