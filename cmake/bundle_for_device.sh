#!/usr/bin/env bash
# Copies built binaries plus the shared libraries a bare GPU server lacks (cairo and its deps) into DIR/,
# so a build made here runs there: `LD_LIBRARY_PATH=DIR/lib FONTCONFIG_FILE=DIR/fonts.conf DIR/tilelab info`. Usage: bundle_for_device.sh DIR BIN...
set -euo pipefail
dir=$1; shift
mkdir -p "$dir/lib"
for bin in "$@"; do
  cp "$bin" "$dir/"
  ldd "$bin" | awk '/=> \//{print $3}' | while read -r lib; do
    case "$(basename "$lib")" in
      libc.so*|libm.so*|libstdc++.so*|libgcc_s.so*|ld-linux*|libdl.so*|libpthread.so*|librt.so*|libnvrtc*|libcuda.so*) ;;
      *) cp -n "$lib" "$dir/lib/" ;;
    esac
  done
done
# A font and a fontconfig file that finds it (a bare server has neither; cairo's text needs both):
# `FONTCONFIG_FILE=DIR/fonts.conf`, which gpu_checks.sh sets.
mkdir -p "$dir/fonts"
cp -n /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf /usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf "$dir/fonts/"
cat > "$dir/fonts.conf" <<'XML'
<?xml version="1.0"?>
<!DOCTYPE fontconfig SYSTEM "urn:fontconfig:fonts.dtd">
<fontconfig>
  <dir prefix="relative">fonts</dir>
  <cachedir>/tmp/tilelab-fontconfig</cachedir>
</fontconfig>
XML
du -sh "$dir"
