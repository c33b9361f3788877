#!/usr/bin/env bash
# Packs the desktop app for a GPU server with no display, no X and no package manager: tilelab and tilelab-gui
# with their libraries (cmake/bundle_for_device.sh), an X server (Xvfb, xkbcomp, the xkb data) and software
# OpenGL (Mesa's llvmpipe: libGLX_mesa, swrast_dri.so and LLVM), the kernel sources and the device scripts, into
# one DIR/tlgui.tar.xz (the device tool carries at most 64 MiB). Unpacked there by tests/perf/gui_device.sh.
# Usage: bundle_gui_for_device.sh DIR [BUILD=build]   (run from the repository root, after building both targets)
set -euo pipefail
out=$1
build=${2:-build}
stage=$(mktemp -d)/tlgui
trap 'rm -rf "$(dirname "$stage")"' EXIT
mkdir -p "$out" "$stage/x/bin" "$stage/x/dri"

# TileLab itself (and cairo, glfw, the X client libraries, DejaVu fonts).
bash cmake/bundle_for_device.sh "$stage" "$build/tilelab" "$build/tilelab-gui" > /dev/null

# The X server and its keymap compiler: Xvfb runs /usr/bin/xkbcomp (a path compiled in) at start.
multiarch=/usr/lib/x86_64-linux-gnu
x_files=(/usr/bin/Xvfb /usr/bin/xkbcomp)
# OpenGL: glvnd's dispatch libraries (GLFW dlopens libGL.so.1 / libGLX.so.0), Mesa's GLX vendor library, and the
# software rasteriser, which both the client and Xvfb's GLX extension load.
gl_libs=("$multiarch/libGL.so.1" "$multiarch/libGLX.so.0" "$multiarch/libGLdispatch.so.0" "$multiarch/libGLX_mesa.so.0"
         "$multiarch/libglapi.so.0")
dri=$multiarch/dri/swrast_dri.so
for f in "${x_files[@]}" "${gl_libs[@]}" "$dri"; do
  [ -e "$f" ] || { echo "bundle_gui_for_device: $f is missing (apt-get install xvfb libgl1-mesa-dri libglx-mesa0)" >&2; exit 1; }
done
cp "${x_files[@]}" "$stage/x/bin/"
# Xvfb looks for the DRI driver of its GLX extension and for xkbcomp in directories compiled into it (nothing in
# the environment moves them). Point those two strings at the bundle, unpacked at /tmp/tlgui (gui_device.sh links
# /tmp/tlx to its x/bin), so nothing is written outside /tmp on the server.
python3 - "$stage/x/bin/Xvfb" <<'PY'
import sys
path = sys.argv[1]
data = open(path, "rb").read()
for old, new in [(b"/usr/lib/x86_64-linux-gnu/dri", b"/tmp/tlgui/x/dri"), (b"/usr/bin", b"/tmp/tlx")]:
    key = old + b"\0"
    assert data.count(key) == 1, f"{old!r}: expected once in Xvfb, found {data.count(key)}"
    assert len(new) <= len(old)
    data = data.replace(key, new + b"\0" * (len(old) - len(new) + 1))
open(path, "wb").write(data)
PY
cp -L "$dri" "$stage/x/dri/"
for f in "${gl_libs[@]}"; do cp -Ln "$f" "$stage/lib/$(basename "$f")"; done
# Every library those need, except what any Linux has (glibc, libstdc++, libgcc_s).
for f in "${x_files[@]}" "${gl_libs[@]}" "$dri"; do
  ldd "$f" | awk '/=> \//{print $3}'
done | sort -u | while read -r lib; do
  case "$(basename "$lib")" in
    libc.so*|libm.so*|libstdc++.so*|libgcc_s.so*|ld-linux*|libdl.so*|libpthread.so*|librt.so*) ;;
    *) cp -Ln "$lib" "$stage/lib/$(basename "$lib")" 2>/dev/null || true ;;
  esac
done
cp -r /usr/share/X11/xkb "$stage/x/xkb"
cp -r kernels "$stage/kernels"

tar -C "$(dirname "$stage")" -cf - tlgui | xz -T0 -9 > "$out/tlgui.tar.xz"
echo "$(du -sh "$stage" | cut -f1) unpacked, $(du -h "$out/tlgui.tar.xz" | cut -f1) as $out/tlgui.tar.xz"
