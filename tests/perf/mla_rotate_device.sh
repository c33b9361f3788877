#!/usr/bin/env bash
# mla.decode: end-of-part candidates (rotate, fast_merge, vec_store, prologue, tie_gap) against all of them off,
# alternated pass by pass in fresh processes, after the quick test matrix (run with the candidates as the bundle's
# defaults) and timelines at MB 4096. Usage (device): bash DIR/mla_rotate_device.sh DIR OUTDIR [diag|run2|confirm]
# (diag: run 1 of docs/perf.md's 2026-11-24 mla4 section; run2: run 2; confirm: OLD vs NEW on all eight shapes)
# (DIR: a bundle with tilelab, lib/, kernels/, optionally cache.tar.xz of a pre-filled NVRTC cache in tlc_mla4/)
d=$(cd "$1" && pwd); out=${2:-/tmp}; mode=${3:-diag}
[ -f "$d/cache.tar.xz" ] && tar -C /tmp -xJf "$d/cache.tar.xz"
export TILELAB_CACHE_DIR=/tmp/tlc_mla4 TILELAB_KERNELS_DIR=$d/kernels LD_LIBRARY_PATH=$d/lib
T=$d/tilelab
MB="batch=128,varlen=true,seq_q=1,heads=64,dtype=bf16"
CB="batch=128,varlen=true,seq_q=2,heads=128,causal=true,dtype=bf16"
OLD="rotate=false,fast_merge=false,vec_store=false,prologue=false,tie_gap=0"
NEW="rotate=false,fast_merge=true,vec_store=true,prologue=true,tie_gap=0"
ALL="rotate=false,fast_merge=true,vec_store=true,prologue=true,tie_gap=3"
TG3="rotate=false,fast_merge=false,vec_store=false,prologue=false,tie_gap=3"
TG4="rotate=false,fast_merge=false,vec_store=false,prologue=false,tie_gap=4"
$T test --kernel mla.decode > "$out/test.txt" 2>&1; echo "test rc=$?: $(grep -E 'passed' "$out/test.txt" | tail -1)"
grep -E 'FAIL' "$out/test.txt" | head -5
n=0
bench() {  # label problem config
  n=$((n + 1))
  mkdir -p /tmp/mla4_b
  $T bench mla.decode --problem "$2" --config "$3" --repeat 20 --no-store --json "/tmp/mla4_b/b$n.json" > "/tmp/mla4_b/b$n.log" 2>&1
  python3 - "/tmp/mla4_b/b$n.json" "$1" "$3" >> "$out/table.txt" <<'PY'
import json, sys
try:
    r = json.load(open(sys.argv[1]))
    t = r["time_ms"]
    print(f"{sys.argv[2]:<12} {sys.argv[3]:<48} {t['median']:.4f} ms (min {t['min']:.4f} max {t.get('max', 0):.4f}) {r['gbps']:7.1f} GB/s {r['tflops']:6.1f} TFLOP/s err {r['rel_error']:.1e} {'PASS' if r['passed'] else 'FAIL'}")
except Exception as e:
    print(f"{sys.argv[2]:<12} {sys.argv[3]:<48} no record ({e})")
PY
}
OFF=",vec_store=false,prologue=false,tie_gap=0"  # the later switches, off as they were in run 1
bench1() { bench "$1" "$2" "$3$OFF"; }
if [ "$mode" = diag ]; then
  # run 1: rotate and fast_merge (before vec_store, prologue and tie_gap existed: their defaults then were off)
  for cfg in "rotate=false,fast_merge=false" "rotate=true,fast_merge=true"; do
    $T timeline mla.decode --problem "$MB,seq_k=4096" --config "$cfg$OFF" --out "$out/tl_${cfg//[=,]/_}.json" --stats \
      > "$out/tl_${cfg//[=,]/_}.txt" 2>&1
  done
  for pass in 1 2 3; do
    for cfg in "rotate=false,fast_merge=false" "rotate=true,fast_merge=false" "rotate=false,fast_merge=true" "rotate=true,fast_merge=true"; do
      bench1 "MB4096 p$pass" "$MB,seq_k=4096" "$cfg"; done
  done
  for pass in 1 2; do
    for cfg in "rotate=true,fast_merge=true,overhead_blocks=1" "rotate=true,fast_merge=true,overhead_blocks=4"; do bench1 "MB4096 p$pass" "$MB,seq_k=4096" "$cfg"; done
    for cfg in "rotate=false,fast_merge=false" "rotate=true,fast_merge=true"; do bench1 "CB4096 p$pass" "$CB,seq_k=4096" "$cfg"; done
    for cfg in "rotate=false,fast_merge=false" "rotate=true,fast_merge=true"; do bench1 "MB8192 p$pass" "$MB,seq_k=8192" "$cfg"; done
  done
elif [ "$mode" = run2 ]; then
  # run 2: fast_merge, vec_store, prologue (each alone and together as NEW) and tie_gap 3 / 4 against all off
  # (OLD), alternated per pass; timelines summarized here (mla_tl_ends.py)
  for cfg in "$OLD" "$NEW" "$ALL"; do
    f="$out/tl_${cfg//[=,]/_}"
    $T timeline mla.decode --problem "$MB,seq_k=4096" --config "$cfg" --out "/tmp/mla4_tl.json" --stats > "$f.txt" 2>&1
    python3 "$d/mla_tl_ends.py" /tmp/mla4_tl.json >> "$f.txt" 2>&1
  done
  for pass in 1 2 3; do
    for cfg in "$OLD" "$TG3" "fast_merge=true,vec_store=false,prologue=false,tie_gap=0" \
               "fast_merge=false,vec_store=true,prologue=false,tie_gap=0" "fast_merge=false,vec_store=false,prologue=true,tie_gap=0" \
               "$NEW" "$TG4" "$ALL"; do
      bench "MB4096 p$pass" "$MB,seq_k=4096" "$cfg"; done
  done
  for pass in 1 2; do
    for cfg in "$OLD" "$NEW" "$ALL"; do bench "CB4096 p$pass" "$CB,seq_k=4096" "$cfg"; done
    for cfg in "$OLD" "$TG3" "$ALL"; do bench "MB8192 p$pass" "$MB,seq_k=8192" "$cfg"; done
  done
  for cfg in "$OLD" "$TG3" "$ALL"; do bench "MB16384" "$MB,seq_k=16384" "$cfg"; done
  for cfg in "$OLD" "$NEW" "$ALL"; do bench "CB8192" "$CB,seq_k=8192" "$cfg"; done
  for cfg in "$OLD" "$TG3" "$NEW" "$ALL"; do bench "MB4096 p4" "$MB,seq_k=4096" "$cfg"; done
else
  for pass in 1 2 3; do for cfg in "$OLD" "$NEW"; do bench "MB4096 p$pass" "$MB,seq_k=4096" "$cfg"; done; done
  for sk in 8192 16384 32768; do for pass in 1 2; do for cfg in "$OLD" "$NEW"; do bench "MB$sk p$pass" "$MB,seq_k=$sk" "$cfg"; done; done; done
  for sk in 4096 8192 16384 32768; do for pass in 1 2; do for cfg in "$OLD" "$NEW"; do bench "CB$sk p$pass" "$CB,seq_k=$sk" "$cfg"; done; done; done
fi
cat "$out/table.txt"
