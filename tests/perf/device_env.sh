# The environment the tests/perf/*_device.sh scripts run in on the GPU machine, sourced once D (the bundle folder,
# made by the script's --prepare, which copies this file into it) is set: `. "$D/device_env.sh" NAME`.
# Sets OUT (default D/out, created), the bundle's libraries and fonts, its kernels/ as the kernel sources, an NVRTC cache
# /tmp/tlc_NAME filled from the bundle's archive of it (cache.tar.xz or tlc.tgz), a results store /tmp/tl_NAME.db,
# TILELAB_EXE, the cuDNN of PyTorch's wheel for --vs cudnn (unless set), T (the binary) and S (OUT/summary.txt, emptied).
OUT=${OUT:-$D/out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=$D/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} FONTCONFIG_FILE=$D/fonts.conf
export TILELAB_KERNELS_DIR=$D/kernels TILELAB_CACHE_DIR=/tmp/tlc_$1 TILELAB_DB=/tmp/tl_$1.db TILELAB_EXE=$D/tilelab
export TL_CUDNN_LIBRARY=${TL_CUDNN_LIBRARY:-$(python3 -c 'import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], "lib"))' 2>/dev/null)}
mkdir -p "$TILELAB_CACHE_DIR"
if [ -f "$D/cache.tar.xz" ]; then tar xJf "$D/cache.tar.xz" -C "$TILELAB_CACHE_DIR"
elif [ -f "$D/tlc.tgz" ]; then tar xzf "$D/tlc.tgz" -C "$TILELAB_CACHE_DIR"; fi
T=$D/tilelab S=$OUT/summary.txt
: > "$S"
# `tilelab test --kernel K [--full]` within SECONDS, its log in $OUT/NAME.txt, its last line and first failures in $S.
kernel_test() {  # NAME SECONDS K [--full]
  local name=$1 secs=$2 k=$3; shift 3
  timeout "$secs" "$T" test --kernel "$k" "$@" --timeout 8 > "$OUT/$name.txt" 2>&1
  echo "tilelab test --kernel $k${*:+ $*}: rc=$? $(tail -1 "$OUT/$name.txt")" >> "$S"
  grep -E " FAIL " "$OUT/$name.txt" | head -8 | cut -c1-300 >> "$S"
}
# One float64-checked, untimed run (`tilelab bench --repeat 0`): its rc, error and PASS/FAIL into $S.
kernel_check() {  # K PROBLEM CONFIG
  "$T" bench "$1" --problem "$2" ${3:+--config "$3"} --repeat 0 --no-store > /tmp/c.txt 2>&1
  echo "check rc=$? $(grep -E "^$1" /tmp/c.txt | awk '{print $10, $8}') $2|$3" >> "$S"
}
