#!/usr/bin/env bash
# attn.bwd.mma on a GPU machine (issue 20, item 1): the --full correctness matrix, then the issue's anchor shapes
# benched per config (checked against the float64 reference, L2 flushed) beside PyTorch SDPA's backward (cuDNN and
# flash backends, when torch is there) and the issue's H100 numbers, as one table.
#
# Here, without a GPU: `bash tests/perf/attn_bwd_device.sh --prepare DIR` builds the bundle (cmake/bundle_for_device.sh
# DIR build/tilelab, kernels/, this script, and cache.tar.xz: the NVRTC cache filled by compiling every case and
# anchor config for sm_90a). There: `bash DIR/attn_bwd_device.sh DIR` (with the device tool: carry [DIR] and run
# `bash DIR/attn_bwd_device.sh DIR`); $OUT (default: DIR/out) receives the logs and summary.txt, printed last.
# Knobs: STEPS (any of full bench sdpa; default all), FULL_S (time limit of the matrix), REPEAT.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." 2>/dev/null && pwd)

# Per anchor: "name|problem|configs separated by spaces (- = the defaults)|cuDNN|flash" (issue 20, H100, TFLOP/s at
# 2.5x the forward's FLOPs).
ANCHORS=(
  "b8 h16 4k d128|batch=8,seq_q=4096,seq_k=4096,heads=16,heads_kv=16,dim=128|- block_M=128 deterministic=true|504|279"
  "b8 h16 4k d128 causal|batch=8,seq_q=4096,seq_k=4096,heads=16,heads_kv=16,dim=128,causal=true|- block_M=128|444|238"
  "b2 h16 16k d128|batch=2,seq_q=16384,seq_k=16384,heads=16,heads_kv=16,dim=128|- block_M=128|545|306"
  "b16 h16 2k d64|batch=16,seq_q=2048,seq_k=2048,heads=16,heads_kv=16,dim=64|- block_N=128 block_M=128|224|230"
)

if [ "${1:-}" = "--prepare" ]; then
  D=${2:?usage: attn_bwd_device.sh --prepare DIR}
  T=$ROOT/build/tilelab
  bash "$ROOT/cmake/bundle_for_device.sh" "$D" "$T" || exit 1
  rm -rf "$D/kernels" && cp -r "$ROOT/kernels" "$D/kernels" && cp "$0" "$D/attn_bwd_device.sh" && cp "$HERE/device_env.sh" "$D/"
  C=$(mktemp -d)
  export TILELAB_CACHE_DIR=$C TILELAB_KERNELS_DIR=$D/kernels
  "$T" test --kernel attn.bwd.mma --full > "$D/prepare_test.txt" 2>&1
  echo "compile-only matrix: $(tail -1 "$D/prepare_test.txt")"
  for a in "${ANCHORS[@]}"; do
    IFS='|' read -r name problem configs _ _ <<< "$a"
    for c in $configs; do
      [ "$c" = - ] && c=""
      "$T" compile attn.bwd.mma --arch sm_90a --problem "$problem" --config "$c" > /dev/null 2>&1 ||
        echo "compile failed: $name $c"
    done
  done
  tar cJf "$D/cache.tar.xz" -C "$C" . && rm -rf "$C"
  du -sh "$D"
  exit 0
fi

D=$(cd "${1:-$HERE}" && pwd)
. "$D/device_env.sh" attn_bwd
STEPS=${STEPS:-full bench sdpa}
has() { [[ " $STEPS " == *" $1 "* ]]; }
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader >> "$S" 2>&1

if has full; then
  t0=$(date +%s)
  timeout "${FULL_S:-300}" "$T" test --kernel attn.bwd.mma --full --timeout 20 --junit "$OUT/junit.xml" > "$OUT/test_full.txt" 2>&1
  echo "tilelab test --kernel attn.bwd.mma --full: rc=$? in $(( $(date +%s) - t0 )) s: $(tail -1 "$OUT/test_full.txt")" >> "$S"
  grep -E " FAIL " "$OUT/test_full.txt" | head -10 | cut -c1-300 >> "$S"
fi

# SDPA's backward at the same shapes: dQ, dK, dV of (batch, heads, seq, dim) bf16 leaves, CUDA events, median of 20.
sdpa() {  # problem -> "cudnn flash" TFLOP/s (or n/a)
  python3 - "$1" <<'PY' 2>/dev/null || echo "n/a n/a"
import statistics, sys
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
p = dict(kv.split("=") for kv in sys.argv[1].split(","))
b, s, h, d = int(p["batch"]), int(p["seq_q"]), int(p["heads"]), int(p["dim"])
causal = p.get("causal") == "true"
flops = 2.5 * 4 * b * h * s * s * d * (0.5 if causal else 1)
out = []
for backend in (SDPBackend.CUDNN_ATTENTION, SDPBackend.FLASH_ATTENTION):
    try:
        q, k, v = (torch.randn(b, s, h, d, device="cuda", dtype=torch.bfloat16).transpose(1, 2).requires_grad_() for _ in range(3))
        with sdpa_kernel(backend):
            o = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
            g = torch.randn_like(o)
            times = []
            for i in range(25):
                st, en = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                st.record()
                torch.autograd.grad(o, (q, k, v), g, retain_graph=True)
                en.record()
                en.synchronize()
                if i >= 5:
                    times.append(st.elapsed_time(en) * 1e-3)
        out.append(f"{flops / statistics.median(times) / 1e12:.0f}")
    except Exception as e:
        out.append("n/a")
print(" ".join(out))
PY
}

if has bench; then
  printf "%-24s %-34s %8s %9s %6s %6s %6s %7s %7s\n" shape config TFLOP/s ms check cuDNN flash "issue:cuDNN" flash >> "$S"
  for a in "${ANCHORS[@]}"; do
    IFS='|' read -r name problem configs cudnn flash <<< "$a"
    measured="- -"
    has sdpa && measured=$(sdpa "$problem")
    for c in $configs; do
      [ "$c" = - ] && c=""
      j=$OUT/bench_$(echo "$name $c" | tr ' =,' '___').json
      timeout 120 "$T" bench attn.bwd.mma --problem "$problem" --config "$c" --repeat "${REPEAT:-20}" --timeout 60 \
        --no-store --json "$j" > "$j.txt" 2>&1
      row=$(python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print(f\"{r['tflops']:.0f} {r['time_ms']['median']:.3f} {'PASS' if r['passed'] else 'FAIL'}\")" "$j" 2>/dev/null ||
            echo "- - ERROR($(grep -m1 -iE 'error|fail' "$j.txt" | cut -c1-60))")
      printf "%-24s %-34s %8s %9s %6s %6s %6s %7s %7s\n" "$name" "${c:-defaults}" $row $measured "$cudnn" "$flash" >> "$S"
    done
  done
fi
cat "$S"
