#!/usr/bin/env bash
# mla.sparse_decode's config switches on a GPU machine, one call: the quick matrix, a sweep over SPACE (default
# late_reload=false,true; ROUNDS=2 runs it again with each axis's values reversed, so each config runs early once and
# late once) at issue 19's four shapes, FlashMLA's sparse decode on the same shapes in the same call (its tests/ taken
# from the source tarball beside this script; the build unpacked into /tmp/flashmla beforehand by
# .dev/flashmla/unpack.sh), a timeline at V3.2 b 64 (TIMELINE_CONFIG), the --full matrix last (FULL_S).
# Here: a bundle of cmake/bundle_for_device.sh plus kernels/, device_env.sh, flashmla_sparse.py, FlashMLA's source
# tarball and tlc.tgz (the NVRTC cache of every case, filled by `tilelab test --full` and `compile --timeline` here);
# there: `bash DIR/mla_sparse6_device.sh DIR`. At most 8 files come back: the log, the sweeps, FlashMLA, the
# timeline, --full.
set -u
D=$(cd "${1:?usage: mla_sparse6_device.sh DIR}" && pwd)
. "$D/device_env.sh" sparse6
rm -f "$S"  # the call returns at most 8 files: the log, two sweeps, FlashMLA, the timeline, --full
exec > >(tee -a "$OUT/log.txt") 2>&1
K=mla.sparse_decode
V32="seq_q=2,heads=128,seq_k=32768,topk=2048,varlen=true"
PROBLEMS=(--problem "batch=64,$V32" --problem "batch=128,$V32"
  --problem "batch=148,seq_q=2,heads=128,seq_k=32768,topk=16384,varlen=true"
  --problem "batch=148,seq_q=2,heads=64,seq_k=32768,topk=16384,varlen=true")
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
s=$SECONDS; timeout 90 "$T" test --kernel $K --timeout 30 > /tmp/sparse6_quick.txt 2>&1
echo "test --quick: rc=$? $((SECONDS - s)) s: $(grep -E 'passed, ' /tmp/sparse6_quick.txt | tail -1)"
grep -E " (FAIL|ERROR|TIMEOUT|FAULT) " /tmp/sparse6_quick.txt | head -8 | cut -c1-300
table() {
  python3 - "$1" "$SPACE" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
axes = [a.split("=")[0] for a in sys.argv[2].split(";")]
for p in j["points"]:
    pr, c = p["problem"], p["config"]
    name = f"b{pr['batch']} h{pr['heads']} topk{pr['topk']}"
    sw = ",".join(f"{k}={str(c.get(k)).lower()}" for k in axes)
    if "median_ms" in p:
        print(f"  {name:22s} {sw:36s} {p['tflops']:7.1f} TFLOP/s {p['median_ms']:8.4f} ms {'PASS' if p['passed'] else 'FAIL'}")
    else:
        print(f"  {name:22s} {sw:36s} {p['status']} {p['reason'][:80]}")
PY
}
sweep() {
  s=$SECONDS
  timeout "${SWEEP_S:-170}" "$T" sweep $K "${PROBLEMS[@]}" --space "$2" --samples 4096 --no-store --fresh --plain --timeout 60 \
    --json "$OUT/sweep$1.json" > "/tmp/sparse6_sweep$1.txt" 2>&1
  echo "sweep round $1 ($2): rc=$? $((SECONDS - s)) s"
  table "$OUT/sweep$1.json"
}
SPACE=${SPACE:-late_reload=false,true}
sweep 1 "$SPACE"
if [ -d /tmp/flashmla ]; then
  mkdir -p /tmp/fmsrc && tar xzf "$D"/flashmla-*.tgz -C /tmp/fmsrc && cp -r /tmp/fmsrc/*/tests /tmp/flashmla/ 2>/dev/null
  s=$SECONDS; PYTHONPATH=/tmp/flashmla timeout 120 python3 "$D/flashmla_sparse.py" > "$OUT/flashmla.txt" 2>&1
  echo "FlashMLA: rc=$? $((SECONDS - s)) s"; cat "$OUT/flashmla.txt" | tail -8
fi
# Round 2: each axis's values reversed.
[ "${ROUNDS:-2}" -ge 2 ] && sweep 2 "$(python3 -c "import sys; print(';'.join(a.split('=')[0] + '=' + ','.join(reversed(a.split('=')[1].split(','))) for a in sys.argv[1].split(';')))" "$SPACE")"

s=$SECONDS
timeout 60 "$T" timeline $K --problem "batch=64,$V32" --config "${TIMELINE_CONFIG:-}" \
  --out /tmp/sparse6_timeline.json --stats > "$OUT/timeline.txt" 2>&1
echo "timeline (V3.2 b64, ${TIMELINE_CONFIG:-defaults}): rc=$? $((SECONDS - s)) s"
grep -E "^ *(index|load_wait|dequant|wait_kv|qk|softmax|pv|combine) " "$OUT/timeline.txt" | head -10
s=$SECONDS; timeout "${FULL_S:-200}" "$T" test --kernel $K --full --timeout 30 > "$OUT/test_full.txt" 2>&1
echo "test --full: rc=$? $((SECONDS - s)) s: $(grep -E 'passed, ' "$OUT/test_full.txt" | tail -1)"
grep -E " (FAIL|ERROR|TIMEOUT|FAULT) " "$OUT/test_full.txt" | head -12 | cut -c1-300
