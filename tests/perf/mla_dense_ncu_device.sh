#!/usr/bin/env bash
# mla.decode and FlashMLA's dense decode under Nsight Compute on a GPU, one warm launch each (issue 19 item 3,
# docs/perf.md mladec11): `--set full` with source counters (`--import-source no`, `--clock-control none`) of ours at
# PROBLEM (defaults, then CONFIGS), FlashMLA's flash_fwd_splitkv_mla_kernel at the same shape (its inputs as
# flashmla_dense.py makes them), each exported as details, raw CSV and the SASS source CSV into $OUT/ncu.tgz; read them
# here with mla_dense_ncu_roles.py against nvdisasm listings of the same cubins.
#
#   tests/perf/mla_dense_ncu_device.sh --prepare DIR [TILELAB [KERNELS]]   bundle: stripped tilelab, kernels/, this
#       script, device_env.sh, cuda_timing.py, flashmla_dense.py and the NVRTC cache of the profiled configs
#   bash DIR/mla_dense_ncu_device.sh DIR    on the GPU machine (carry DIR and .dev/flashmla: FlashMLA prebuilt)
# Knobs: PROBLEM (default CB 8192: b 128, s_q 2, h_q 128, s_k 8192 varlen, causal), FM_SK (FlashMLA's mean s_k, 8192),
# CONFIGS (more of ours, space separated, e.g. chain=true).
set -u
PROBLEM=${PROBLEM:-batch=128,seq_q=2,heads=128,seq_k=8192,varlen=true,causal=true}
if [ "${1:-}" = --prepare ]; then
  DIR=$2 TL=${3:-build/tilelab} KD=${4:-kernels}
  here=$(cd "$(dirname "$0")" && pwd)
  mkdir -p "$DIR" && cp "$TL" "$DIR/tilelab" && strip "$DIR/tilelab"
  rm -rf "$DIR/kernels" && cp -r "$KD" "$DIR/kernels"
  cp "$here/mla_dense_ncu_device.sh" "$here/device_env.sh" "$here/cuda_timing.py" "$here/flashmla_dense.py" "$here/mla_lengths.py" "$DIR/"
  cache=$(mktemp -d)
  for c in "" ${CONFIGS:-}; do
    TILELAB_CACHE_DIR=$cache "$DIR/tilelab" compile mla.decode --kernels-dir "$DIR/kernels" --problem "$PROBLEM" \
      ${c:+--config "$c"} | grep -E "spills"
  done
  tar cJf "$DIR/cache.tar.xz" -C "$cache" . && rm -rf "$cache"
  exit 0
fi
D=$(cd "${1:-$(dirname "$0")}" && pwd)
. "$D/device_env.sh" mla_ncu
R=/tmp/mla_ncu_out && mkdir -p $R
(bash "$(dirname "$D")/flashmla/unpack.sh" > $R/unpack.txt 2>&1) &
UNPACK=$!
export PYTHONPATH=/tmp/flashmla:$D${PYTHONPATH:+:$PYTHONPATH}
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
echo "ncu: $NCU $($NCU --version 2>&1 | tail -1)" >> "$S"
prof() {  # NAME REGEX CMD...
  local n=$1 k=$2 t0=$(date +%s); shift 2
  timeout 60 "$NCU" --target-processes all --clock-control none --set full --import-source no -k "regex:$k" -s 1 -c 1 \
    -f -o /tmp/ncu_$n "$@" > $R/${n}_log.txt 2>&1
  echo "== ncu $n rc=$? $(( $(date +%s) - t0 )) s" >> "$S"
  "$NCU" -i /tmp/ncu_$n.ncu-rep --page details --print-details all > $R/${n}_details.txt 2>&1
  "$NCU" -i /tmp/ncu_$n.ncu-rep --page raw --csv > $R/${n}_raw.csv 2>&1
  "$NCU" -i /tmp/ncu_$n.ncu-rep --page source --csv --print-source sass > $R/${n}_source.csv 2>&1
  grep -E "^\s+(Duration|SM Frequency|Issue Slots Busy|Registers Per Thread)\b" $R/${n}_details.txt | sort -u | tr -s ' ' >> "$S"
}
prof ours mla_decode "$T" bench mla.decode --problem "$PROBLEM" --repeat 1 --warmup 1 --no-store
for c in ${CONFIGS:-}; do
  prof "ours_$(echo "$c" | tr -c 'a-zA-Z0-9\n' '_')" mla_decode "$T" bench mla.decode --problem "$PROBLEM" --config "$c" \
    --repeat 1 --warmup 1 --no-store
done
wait $UNPACK
cat > /tmp/fm_one.py <<PY
# FlashMLA's dense decode three times at b 128, s_q 2, h_q 128, mean s_k ${FM_SK:-8192}, causal (flashmla_dense.py's inputs).
import torch, flash_mla
from flashmla_dense import inputs
q, cache, table, lens, mean, longest = inputs(128, 2, 128, ${FM_SK:-8192})
meta, _ = flash_mla.get_mla_metadata()
for _ in range(3):
    out, lse = flash_mla.flash_mla_with_kvcache(q, cache, table, lens, 512, meta, None, causal=True)
torch.cuda.synchronize()
print("fm_one done, mean_len", mean, "finite", bool(torch.isfinite(out).all()))
PY
prof fm flash_fwd_splitkv_mla python3 /tmp/fm_one.py
tar czf "$OUT/ncu.tgz" -C $R .
cat "$S"
