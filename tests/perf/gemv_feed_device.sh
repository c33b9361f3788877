#!/bin/bash
# gemm.dequant's gemv path on the GPU in one call: the quick test matrix, then tests/perf/gemv_device.lua's parts
# (PARTS, default "check time") with the caller's CHECK_CONFIGS / REGS_CONFIGS / MS ... (see the script's header), a
# short table of the timed rows on stdout. Bundle D: the stripped tilelab (cmake/bundle_for_device.sh), kernels/,
# tests/perf/device_env.sh, tests/perf/gemv_device.lua and the NVRTC cache (tlc.tgz) filled here by running the Lua
# script without a GPU. Usage there: [ENV=D/env.sh] bash D/gemv_feed_device.sh D
D=$(cd "${1:-$(dirname "$0")}" && pwd)
. "$D/device_env.sh" gemv
if [ -n "$ENV" ]; then . "$ENV"; fi
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
t0=$(date +%s)
timeout 60 $T test --kernel gemm.dequant > $OUT/test.txt 2>&1; echo "test rc=$? $(( $(date +%s) - t0 ))s"; tail -2 $OUT/test.txt
OUT=$OUT timeout ${LUA_LIMIT:-150} $T run --launch-timeout 10 --allow-write $OUT $D/gemv_device.lua ${PARTS:-check time} > $OUT/gemv.txt 2>&1
echo "lua rc=$? $(( $(date +%s) - t0 ))s"
grep -E "FAIL|checks:|measured" $OUT/gemv.txt | head -12 | cut -c1-220
# kind, M, N x K, wtype, config, us, check, % of the HBM copy
grep -E "^(time|kscan)" $OUT/gemv.txt | sed -E 's/\{path:gemv\}/default/; s/path:gemv,//; s/[{}]//g; s/ +/ /g' | awk '{printf "%s %s %s %s %s %s %s %s\n",$1,$3,$4,$5,$6,$8,$7,$12}'
