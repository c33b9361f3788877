#!/usr/bin/env bash
# Issue 18 on the H100 in one device call: every kernel timed from two kernel source trees (BEFORE: main before the
# toolkit and plans; AFTER: the work tree) by the same binary, alternated run by run in separate processes on the same
# GPU; compute-sanitizer memcheck on bench runs (0 errors expected); the quick correctness matrix.
# Bundle (made here): cmake/bundle_for_device.sh DIR build/tilelab; DIR/before, DIR/after: the two kernels/ trees;
# DIR/cache.tar.xz: the NVRTC cache of both trees, filled here without a GPU (tests/perf/refactor_prefill.sh DIR).
# Usage on the device: bash tests/perf/refactor_check_device.sh DIR [ROUNDS]
set -uo pipefail
D=$(cd "$1" && pwd)
ROUNDS=${2:-3}
export LD_LIBRARY_PATH=$D/lib FONTCONFIG_FILE=$D/fonts.conf TILELAB_CACHE_DIR=/tmp/tl_refactor_cache TILELAB_DB=/tmp/tl_refactor.db
mkdir -p "$TILELAB_CACHE_DIR" && [ -f "$D/cache.tar.xz" ] && tar xJf "$D/cache.tar.xz" -C "$TILELAB_CACHE_DIR"
T=$D/tilelab
R=${OUT:-/tmp}/refactor && mkdir -p "$R"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv,noheader
source "$(dirname "$0")/refactor_cases.sh"
for i in "${!CASES[@]}"; do
  IFS='|' read -r kernel problem config <<<"${CASES[$i]}"
  for r in $(seq "$ROUNDS"); do
    for tree in before after; do
      timeout 120 "$T" bench "$kernel" --problem "$problem" ${config:+--config "$config"} --kernels-dir "$D/$tree" \
        --no-store --json "$R/$i.$tree.$r.json" > "$R/$i.$tree.$r.log" 2>&1 || echo "case $i $tree round $r: rc=$? $(tail -1 "$R/$i.$tree.$r.log")"
    done
  done
done
python3 - "$R" "${#CASES[@]}" "$ROUNDS" <<'PY'
import json, sys, statistics, os
R, n, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
print(f"{'case':<4} {'kernel':<15} {'before ms':>10} {'after ms':>10} {'after/before':>12}  pass  problem")
for i in range(n):
    med = {}
    ok = True
    kernel = problem = ""
    for tree in ("before", "after"):
        ms = []
        for r in range(1, rounds + 1):
            p = f"{R}/{i}.{tree}.{r}.json"
            if not os.path.exists(p): ok = False; continue
            j = json.load(open(p))
            kernel = j.get("kernel", kernel); problem = j.get("problem", problem)
            ms.append(j["time_ms"]["median"])
            ok = ok and bool(j.get("passed", False))
        med[tree] = statistics.median(ms) if ms else float("nan")
    print(f"{i:<4} {kernel:<15} {med['before']:>10.4f} {med['after']:>10.4f} {med['after']/med['before']:>12.4f}  {'yes' if ok else 'NO'}  {problem}")
PY
# compute-sanitizer: the kernels and the worker's own CUDA calls must report 0 errors
for kp in "gemm.wgmma|M=512,N=512,K=512" "mla.decode|batch=4,seq_k=1024" "attn.fwd.wgmma|batch=1,seq_q=512,seq_k=512" "gemm.mma|M=256,N=256,K=256"; do
  timeout 300 compute-sanitizer --tool memcheck --target-processes all "$T" bench "${kp%|*}" --problem "${kp#*|}" \
    --kernels-dir "$D/after" --repeat 1 --warmup 0 --no-store > "$R/san_${kp%|*}.log" 2>&1
  echo "memcheck ${kp%|*}: rc=$? $(grep -E 'ERROR SUMMARY' "$R/san_${kp%|*}.log" | tr '\n' ' ')"
done
TILELAB_KERNELS_DIR=$D/after timeout 400 "$T" test --junit "$R/quick.xml" 2>&1 | tail -3
