#!/usr/bin/env bash
# attn.fwd.wgmma's 192-row blocks at head dim 64 (issue 20 item 3) on a GPU, one call: the quick matrix (192 is the
# d 64 default there, 128 its variation) or the --full one, check-only runs of 192 with the --full variations that
# matter to it (epilogues, no ping-pong, one CTA per tile, 3 stages, block_N 64, 1 x 1), then each shape benched beside
# cuDNN's SDPA with its configs alternated, ROUNDS times (this card varies run to run more than the configs do).
#
# Here, without a GPU: `bash tests/perf/attn_fwd64_device.sh --prepare DIR [COMMIT]` builds the bundle
# (cmake/bundle_for_device.sh DIR build/tilelab, kernels/, this script, device_env.sh and cache.tar.xz: the NVRTC cache
# filled by compiling everything below for sm_90a; with COMMIT also that commit's kernels/ as DIR/kernels_base, which a
# config written `@kernels_base:key=value,...` is compiled from). There: `bash DIR/attn_fwd64_device.sh DIR`; $OUT
# receives the logs and summary.txt. Knobs: STEPS (any of test full check bench sweep; default test check bench),
# ROUNDS (default 2), TEST_S, FULL_S.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." 2>/dev/null && pwd)
K=attn.fwd.wgmma

# problem|config: float64-checked once, not timed.
CHECKS=(
  "dim=64,batch=4,seq_q=300,seq_k=700,heads=4,heads_kv=1,causal=true,window=129,varlen=true|block_M=192,epilogue=smem"
  "dim=64,batch=2,seq_q=77,seq_k=1000,heads=4,sinks=true,varlen=true|block_M=192,epilogue=direct,q_stages=1"
  "dim=64,batch=2,seq_q=1000,seq_k=1500,heads=8,heads_kv=2|block_M=192,ping_pong=false"
  "dim=64,batch=1,seq_q=1,seq_k=1,heads=1,causal=true|block_M=192"
  "dim=64,batch=2,seq_q=1000,seq_k=1500,heads=8,heads_kv=2,dtype=f16|block_M=192,persistent=false,block_N=64,num_stages=3"
  "dim=64,batch=2,seq_q=1024,seq_k=1024,heads=4,heads_kv=1,causal=true|block_M=192,section=0,epilogue=smem"
)
# problem|configs (space separated; - = the defaults, @kernels_base:... = compiled from the --prepare COMMIT's kernels),
# benched with --vs cudnn.
BENCHES=(
  "batch=16,seq_q=2048,seq_k=2048,heads=16,dim=64|- block_M=128"
  "batch=16,seq_q=2048,seq_k=2048,heads=16,dim=64,causal=true|- @kernels_base:block_M=192 block_M=128"
  "batch=4,seq_q=4096,seq_k=4096,heads=64,heads_kv=8,dim=64,causal=true,sinks=true|- @kernels_base:block_M=192 q_stages=1 block_M=128"
  "batch=4,seq_q=4096,seq_k=4096,heads=64,heads_kv=8,dim=64,causal=true,sinks=true,window=128|- block_M=192"
  "batch=4,seq_q=4096,seq_k=4096,heads=64,heads_kv=8,dim=64,causal=true,sinks=true,window=2048|- block_M=128"
  "batch=8,seq_q=4096,seq_k=4096,heads=16,dim=128|-"
)
# problem|space: `tilelab sweep --vs cudnn`, one timing per point (STEPS=sweep).
SWEEPS=(
  "batch=16,seq_q=2048,seq_k=2048,heads=16,dim=64,causal=true|block_M=192;block_N=80,112,128;num_stages=2,3"
  "batch=16,seq_q=2048,seq_k=2048,heads=16,dim=64,causal=true|block_M=192;section=0,8,16,32;epilogue=direct,tma"
  "batch=4,seq_q=4096,seq_k=4096,heads=64,heads_kv=8,dim=64,causal=true,sinks=true|block_M=192;block_N=80,112,128;q_stages=1,2"
  "batch=4,seq_q=4096,seq_k=4096,heads=64,heads_kv=8,dim=64,causal=true,sinks=true,window=128|block_M=128,192;block_N=64,128"
)

if [ "${1:-}" = "--prepare" ]; then
  D=${2:?usage: attn_fwd64_device.sh --prepare DIR}
  T=$ROOT/build/tilelab
  bash "$ROOT/cmake/bundle_for_device.sh" "$D" "$T" || exit 1
  rm -rf "$D/kernels" && cp -r "$ROOT/kernels" "$D/kernels" && cp "$0" "$D/attn_fwd64_device.sh" && cp "$HERE/device_env.sh" "$D/"
  [ -n "${3:-}" ] && rm -rf "$D/kernels_base" && mkdir -p "$D/kernels_base" &&
    git -C "$ROOT" archive "$3" kernels | tar -x -C "$D/kernels_base" --strip-components=1
  C=${CACHE:-$(mktemp -d)}
  export TILELAB_CACHE_DIR=$C TILELAB_KERNELS_DIR=$D/kernels
  "$T" test --kernel $K ${FULL:+--full} > "$D/prepare_test.txt" 2>&1
  echo "compile-only matrix: $(tail -1 "$D/prepare_test.txt")"
  for e in "${CHECKS[@]}" "${BENCHES[@]}"; do
    for c in ${e#*|}; do
      [ "$c" = - ] && c=""
      kd=$D/kernels
      [ "${c:0:1}" = @ ] && kd=$D/${c%%:*} kd=${kd/@/} c=${c#*:}
      "$T" compile $K --arch sm_90a --problem "${e%%|*}" --config "$c" --kernels-dir "$kd" > /dev/null 2>&1 ||
        echo "compile failed: $e $c"
    done
  done
  for e in "${SWEEPS[@]}"; do  # every point of the space: the product of its axes
    points=("")
    IFS=';' read -ra axes <<< "${e#*|}"
    for a in "${axes[@]}"; do
      next=()
      IFS=',' read -ra vals <<< "${a#*=}"
      for p in "${points[@]}"; do for v in "${vals[@]}"; do next+=("${p:+$p,}${a%%=*}=$v"); done; done
      points=("${next[@]}")
    done
    for c in "${points[@]}"; do "$T" compile $K --arch sm_90a --problem "${e%%|*}" --config "$c" > /dev/null 2>&1; done
  done
  tar cJf "$D/cache.tar.xz" -C "$C" .
  du -sh "$D"
  exit 0
fi

D=$(cd "${1:-$HERE}" && pwd)
. "$D/device_env.sh" attn_fwd64
STEPS=${STEPS:-test check bench}
has() { [[ " $STEPS " == *" $1 "* ]]; }
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader >> "$S" 2>&1
has test && kernel_test test "${TEST_S:-120}" $K
has full && kernel_test test_full "${FULL_S:-120}" $K --full
if has check; then
  for e in "${CHECKS[@]}"; do kernel_check $K "${e%%|*}" "${e#*|}"; done
fi
if has bench; then
  for r in $(seq "${ROUNDS:-2}"); do
    for e in "${BENCHES[@]}"; do
      for c in ${e#*|}; do
        [ "$c" = - ] && c=""
        kd=$D/kernels label=$c
        [ "${c:0:1}" = @ ] && kd=$D/${c%%:*} kd=${kd/@/} c=${c#*:}
        "$T" bench $K --problem "${e%%|*}" ${c:+--config "$c"} --kernels-dir "$kd" --vs cudnn --no-store > /tmp/b.txt 2>&1
        echo "== round $r ${e%%|*} | ${label:-defaults} rc=$?" >> "$S"
        grep -E "^($K|cudnn)|throughput|rror" /tmp/b.txt | cut -c1-200 >> "$S"
      done
    done
  done
fi
if has sweep; then
  n=0
  for e in "${SWEEPS[@]}"; do
    n=$((n + 1))
    "$T" sweep $K --problem "${e%%|*}" --space "${e#*|}" --vs cudnn --plain --db /tmp/sweep_$n.db > "$OUT/sweep_$n.txt" 2>&1
    echo "== sweep $e rc=$?" >> "$S"
    tail -"${SWEEP_LINES:-16}" "$OUT/sweep_$n.txt" | cut -c1-220 >> "$S"
  done
fi
cat "$S"
