#!/usr/bin/env bash
# attn.decode on a GPU machine (issue 20, item 4): the --full correctness matrix, then issue 20's decoding shapes beside
# PyTorch SDPA's flash and cuDNN backends (enable_gqa=True) and cuDNN's SDPA graph (`--vs cudnn`), as one table
# (tests/perf/attn_decode_sdpa.py).
#
# Here, without a GPU: `bash tests/perf/attn_decode_device.sh --prepare DIR` builds the bundle (cmake/bundle_for_device.sh
# DIR build/tilelab, kernels/, the two scripts, and cache.tar.xz: the NVRTC cache filled by compiling every case and
# shape for sm_90a). There: `bash DIR/attn_decode_device.sh DIR` (device tool: carry [DIR]); $OUT (default DIR/out)
# receives the logs and summary.txt, printed last.
# Knobs: STEPS (any of full sdpa; default both), FULL_S (time limit of the matrix), SDPA_ARGS and SDPA_ARGS2 (one run
# of the script each, e.g. "--quick", "--shapes '1,32,8,16384,1 …' --space 'num_splits=0,16,32'"), SDPA_S (per run).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." 2>/dev/null && pwd)

if [ "${1:-}" = "--prepare" ]; then
  D=${2:?usage: attn_decode_device.sh --prepare DIR}
  T=$ROOT/build/tilelab
  mkdir -p "$D" && cp "$T" /tmp/tilelab-attndec && strip /tmp/tilelab-attndec
  bash "$ROOT/cmake/bundle_for_device.sh" "$D" /tmp/tilelab-attndec > /dev/null || exit 1
  mv "$D/tilelab-attndec" "$D/tilelab"
  rm -rf "$D/kernels" && cp -r "$ROOT/kernels" "$D/kernels"
  cp "$0" "$D/attn_decode_device.sh" && cp "$HERE/device_env.sh" "$D/" && cp "$HERE/attn_decode_sdpa.py" "$HERE/cuda_timing.py" "$D/"
  C=$(mktemp -d)
  export TILELAB_CACHE_DIR=$C TILELAB_KERNELS_DIR=$D/kernels
  "$T" test --kernel attn.decode --full > "$D/prepare_test.txt" 2>&1
  echo "compile-only matrix: $(tail -2 "$D/prepare_test.txt" | head -1)"
  for b in 1 8 32; do
    for h in 32,8 64,8 32,32; do
      for sq in 1 4; do
        for c in "" ${PREPARE_CONFIGS:-}; do
          "$T" compile attn.decode --arch sm_90a --config "$c" \
            --problem "batch=$b,heads=${h%,*},heads_kv=${h#*,},seq_k=4096,seq_q=$sq,dim=128,causal=true" > /dev/null 2>&1 ||
            echo "compile failed: $b $h $sq $c"
        done
      done
    done
  done
  tar cJf "$D/cache.tar.xz" -C "$C" . && rm -rf "$C"
  du -sh "$D"
  exit 0
fi

D=$(cd "${1:-$HERE}" && pwd)
. "$D/device_env.sh" attn_decode
STEPS=${STEPS:-full sdpa}
has() { [[ " $STEPS " == *" $1 "* ]]; }
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader >> "$S" 2>&1

if has full; then
  t0=$(date +%s)
  timeout "${FULL_S:-240}" "$T" test --kernel attn.decode --full --timeout 20 --junit "$OUT/junit.xml" > "$OUT/test_full.txt" 2>&1
  echo "tilelab test --kernel attn.decode --full: rc=$? in $(( $(date +%s) - t0 )) s: $(tail -2 "$OUT/test_full.txt" | head -1)" >> "$S"
  grep -E " FAIL | FAULT | TIMEOUT " "$OUT/test_full.txt" | head -12 | cut -c1-400 >> "$S"
fi
if has sdpa; then
  # One run per argument set: SDPA_ARGS, then SDPA_ARGS2 when given (e.g. a config sweep on a few shapes).
  n=0
  for args in "${SDPA_ARGS:-}" ${SDPA_ARGS2:+"$SDPA_ARGS2"}; do
    n=$((n + 1)) t0=$(date +%s)
    eval "set -- $args"
    timeout "${SDPA_S:-300}" python3 "$D/attn_decode_sdpa.py" --tilelab "$T" --json "$OUT/sdpa$n.json" "$@" \
      > "$OUT/sdpa$n.txt" 2>&1
    echo "attn_decode_sdpa.py $args: rc=$? in $(( $(date +%s) - t0 )) s" >> "$S"
    cat "$OUT/sdpa$n.txt" >> "$S"
  done
fi
cat "$S"
