#!/usr/bin/env bash
# mla.decode: the rotated part order (rotate) and the one-round-trip merge (fast_merge) against the previous
# defaults, alternated pass by pass in fresh processes, after the quick test matrix (run with the candidates as the
# defaults) and a timeline of both at MB 4096. Usage (device): bash DIR/mla_rotate_device.sh DIR OUTDIR [confirm]
# (DIR: a bundle with tilelab, lib/, kernels/, optionally cache.tar.xz of a pre-filled NVRTC cache in tlc_mla4/)
d=$(cd "$1" && pwd); out=${2:-/tmp}; mode=${3:-diag}
[ -f "$d/cache.tar.xz" ] && tar -C /tmp -xJf "$d/cache.tar.xz"
export TILELAB_CACHE_DIR=/tmp/tlc_mla4 TILELAB_KERNELS_DIR=$d/kernels LD_LIBRARY_PATH=$d/lib
T=$d/tilelab
MB="batch=128,varlen=true,seq_q=1,heads=64,dtype=bf16"
CB="batch=128,varlen=true,seq_q=2,heads=128,causal=true,dtype=bf16"
OLD="rotate=false,fast_merge=false"
NEW="rotate=true,fast_merge=true"
$T test --kernel mla.decode > "$out/test.txt" 2>&1; echo "test rc=$?: $(grep -E 'passed' "$out/test.txt" | tail -1)"
grep -E 'FAIL' "$out/test.txt" | head -5
n=0
bench() {  # label problem config
  n=$((n + 1))
  $T bench mla.decode --problem "$2" --config "$3" --repeat 20 --no-store --json "$out/b$n.json" > "$out/b$n.log" 2>&1
  python3 - "$out/b$n.json" "$1" "$3" >> "$out/table.txt" <<'PY'
import json, sys
try:
    r = json.load(open(sys.argv[1]))
    t = r["time_ms"]
    print(f"{sys.argv[2]:<12} {sys.argv[3]:<48} {t['median']:.4f} ms (min {t['min']:.4f} max {t.get('max', 0):.4f}) {r['gbps']:7.1f} GB/s {r['tflops']:6.1f} TFLOP/s err {r['rel_error']:.1e} {'PASS' if r['passed'] else 'FAIL'}")
except Exception as e:
    print(f"{sys.argv[2]:<12} {sys.argv[3]:<48} no record ({e})")
PY
}
if [ "$mode" = diag ]; then
  for cfg in "$OLD" "$NEW"; do
    $T timeline mla.decode --problem "$MB,seq_k=4096" --config "$cfg" --out "$out/tl_${cfg//[=,]/_}.json" --stats \
      > "$out/tl_${cfg//[=,]/_}.txt" 2>&1
  done
  for pass in 1 2 3; do
    for cfg in "$OLD" "rotate=true,fast_merge=false" "rotate=false,fast_merge=true" "$NEW"; do bench "MB4096 p$pass" "$MB,seq_k=4096" "$cfg"; done
  done
  for pass in 1 2; do
    for cfg in "$NEW,overhead_blocks=1" "$NEW,overhead_blocks=4"; do bench "MB4096 p$pass" "$MB,seq_k=4096" "$cfg"; done
    for cfg in "$OLD" "$NEW"; do bench "CB4096 p$pass" "$CB,seq_k=4096" "$cfg"; done
    for cfg in "$OLD" "$NEW"; do bench "MB8192 p$pass" "$MB,seq_k=8192" "$cfg"; done
  done
else
  for pass in 1 2 3; do for cfg in "$OLD" "$NEW"; do bench "MB4096 p$pass" "$MB,seq_k=4096" "$cfg"; done; done
  for sk in 8192 16384 32768; do for pass in 1 2; do for cfg in "$OLD" "$NEW"; do bench "MB$sk p$pass" "$MB,seq_k=$sk" "$cfg"; done; done; done
  for sk in 4096 8192 16384 32768; do for pass in 1 2; do for cfg in "$OLD" "$NEW"; do bench "CB$sk p$pass" "$CB,seq_k=$sk" "$cfg"; done; done; done
fi
cat "$out/table.txt"
