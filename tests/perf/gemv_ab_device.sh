#!/bin/bash
# gemm.dequant's gemv path, two kernel trees timed in turn in one GPU call (the binary is the same, so both trees must
# share its config struct: tree A = tree B with an older kernels/gemm/gemm_dequant_gemv.cuh): the quick test matrix
# and tests/perf/gemv_device.lua's checks (CHECK_CONFIGS) on tree B, then its timings (MS, FP4 at group 32) with tree
# A, tree B (B_REGS / B_FP4: its configs beside the default) and tree A again, a short table on stdout.
# Here, without a GPU: `bash tests/perf/gemv_ab_device.sh --prepare DIR OLD_CUH` (the bundle: stripped tilelab,
# kernels/ as tree B, kernels_a/ with OLD_CUH as tree A, the scripts, and tlc.tgz: the NVRTC cache of every case).
# There: `ENV=DIR/env.sh bash DIR/gemv_ab_device.sh DIR` (ENV: the knobs above, sourced).
if [ "${1:-}" = "--prepare" ]; then
  D=${2:?usage: gemv_ab_device.sh --prepare DIR OLD_CUH}
  ROOT=$(cd "$(dirname "$0")/../.." && pwd)
  cp "$ROOT/build/tilelab" /tmp/tilelab_ab && strip /tmp/tilelab_ab && bash "$ROOT/cmake/bundle_for_device.sh" "$D" /tmp/tilelab_ab
  mv "$D/tilelab_ab" "$D/tilelab"
  rm -rf "$D/kernels" "$D/kernels_a" && cp -r "$ROOT/kernels" "$D/kernels" && cp -r "$ROOT/kernels" "$D/kernels_a"
  cp "${3:?OLD_CUH}" "$D/kernels_a/gemm/gemm_dequant_gemv.cuh"
  cp "$0" "$ROOT/tests/perf/device_env.sh" "$ROOT/tests/perf/gemv_device.lua" "$D/"
  C=$(mktemp -d)
  export TILELAB_CACHE_DIR=$C
  if [ -f "$D/env.sh" ]; then set -a; . "$D/env.sh"; set +a; fi
  TILELAB_KERNELS_DIR=$D/kernels "$D/tilelab" test --kernel gemm.dequant > /dev/null 2>&1
  TILELAB_KERNELS_DIR=$D/kernels REGS_CONFIGS=$B_REGS FP4_CONFIGS=$B_FP4 "$D/tilelab" run "$D/gemv_device.lua" check time | tail -1
  TILELAB_KERNELS_DIR=$D/kernels_a REGS_CONFIGS= FP4_CONFIGS= "$D/tilelab" run "$D/gemv_device.lua" time | tail -1
  tar czf "$D/tlc.tgz" -C "$C" . && rm -rf "$C"
  du -sh "$D"
  exit 0
fi
D=$(cd "${1:-$(dirname "$0")}" && pwd)
. "$D/device_env.sh" gemv
if [ -n "$ENV" ]; then set -a; . "$ENV"; set +a; fi  # exported: gemv_device.lua reads MS, WGMMA_MS, CHECK_CONFIGS, ...
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
t0=$(date +%s)
TILELAB_KERNELS_DIR=$D/kernels timeout 60 $T test --kernel gemm.dequant > $OUT/test.txt 2>&1
echo "test rc=$? $(( $(date +%s) - t0 ))s: $(tail -1 $OUT/test.txt)"
lua() {  # tree, parts, regs configs, fp4 configs, log
  TILELAB_KERNELS_DIR=$1 REGS_CONFIGS=$3 FP4_CONFIGS=$4 OUT=$OUT timeout ${LUA_LIMIT:-150} \
    $T run --launch-timeout 10 --allow-write $OUT $D/gemv_device.lua $2 > $OUT/$5 2>&1
  echo "$5 rc=$? $(( $(date +%s) - t0 ))s: $(grep -E "checks:|measured" $OUT/$5 | tr '\n' ' ')"
  grep -E "FAIL" $OUT/$5 | head -5 | cut -c1-200
}
lua $D/kernels check "" "" check_b.txt
lua $D/kernels_a time "" "" time_a1.txt
lua $D/kernels time "$B_REGS" "$B_FP4" time_b.txt
lua $D/kernels_a time "" "" time_a2.txt
# tree, M, N x K, wtype, config, us, check, % of the HBM copy
for f in time_a1 time_b time_a2; do
  grep -E "^time" $OUT/$f.txt | sed -E "s/^time/$f/; s/\{path:gemv\}/default/; s/path:gemv,//; s/[{}]//g; s/ +/ /g" |
    awk '{printf "%s %s %s %s %s %s %s %s\n",$1,$3,$4,$5,$6,$8,$7,$12}'
done
