#!/usr/bin/env bash
# mla.decode: the deferred split count (async_count) against the defaults, alternated, after the quick test matrix.
# Usage (device): bash DIR/mla_async_device.sh DIR OUTDIR   (DIR: a bundle with tilelab, lib/, kernels/, cache.tar.xz)
d=$(cd "$1" && pwd); out=${2:-/tmp}
[ -f "$d/cache.tar.xz" ] && { mkdir -p /tmp/tlc_mla3 && tar -C /tmp -xJf "$d/cache.tar.xz"; }
export TILELAB_CACHE_DIR=/tmp/tlc_mla3 TILELAB_KERNELS_DIR=$d/kernels LD_LIBRARY_PATH=$d/lib
T=$d/tilelab
$T test --kernel mla.decode > "$out/test.txt" 2>&1; echo "test rc=$?: $(grep -E 'passed' "$out/test.txt" | tail -1)"
bench() {  # problem passes
  for pass in $(seq 1 "$2"); do
    for cfg in async_count=false async_count=true; do
      r=$($T bench mla.decode --problem batch=128,varlen=true,$1 --config $cfg --no-store 2>&1 | tee -a "$out/bench.txt" | grep -E '^mla.decode')
      echo "$1 pass $pass $cfg: $(echo $r | tr -s ' ' | cut -c1-220)"
    done
  done
}
bench seq_q=1,heads=64,seq_k=4096 4
bench seq_q=1,heads=64,seq_k=8192 2
bench seq_q=2,heads=128,seq_k=4096,causal=true 2
bench seq_q=1,heads=64,seq_k=16384 2
bench seq_q=2,heads=128,seq_k=8192,causal=true 2
