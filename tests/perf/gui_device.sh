#!/usr/bin/env bash
# On a GPU server with no display: the desktop app's GPU paths, screenshotted. Unpacks the bundle of
# cmake/bundle_gui_for_device.sh into /tmp/tlgui, starts its Xvfb with Mesa's software OpenGL (llvmpipe; the GPU
# does the kernels, the CPU draws the window), and runs tilelab-gui on tests/gui/device_gpu.lua (ceilings, Run,
# timeline, Bench vs cuBLAS, a sweep, SASS; one PNG per panel). If that GL cannot open a window it tries the
# NVIDIA GLX vendor library instead. Usage: gui_device.sh BUNDLE.tar.xz OUTDIR [SCRIPT.lua]
# OUTDIR gets the panels' PNGs, results.db and gui.log (8 files: what the device tool brings back); other logs
# stay in /tmp/tlgui_logs.
set -uo pipefail
tarball=$1
out=$2
here=$(cd "$(dirname "$0")" && pwd)
script=${3:-$here/../gui/device_gpu.lua}
B=/tmp/tlgui
logs=/tmp/tlgui_logs
mkdir -p "$out" "$logs"
rm -rf "$B" /tmp/tlx && tar -xJf "$tarball" -C /tmp || { echo "cannot unpack $tarball"; exit 1; }
ln -s "$B/x/bin" /tmp/tlx  # Xvfb runs /tmp/tlx/xkbcomp (the bundle patched its compiled-in /usr/bin)

export LD_LIBRARY_PATH=$B/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export TILELAB_KERNELS_DIR=$B/kernels TILELAB_CACHE_DIR=/tmp/tlgui_cache TILELAB_DB=$logs/results.db
export TILELAB_GUI_FONT=$B/fonts/DejaVuSans.ttf FONTCONFIG_FILE=$B/fonts.conf
export LIBGL_DRIVERS_PATH=$B/x/dri MESA_SHADER_CACHE_DISABLE=true XDG_RUNTIME_DIR=/tmp
export DISPLAY=:77
W=1600 H=1200

"$B/x/bin/Xvfb" :77 -screen 0 ${W}x${H}x24 -nolisten tcp -xkbdir "$B/x/xkb" +extension GLX > "$logs/xvfb.log" 2>&1 &
xvfb=$!
for _ in $(seq 50); do [ -e /tmp/.X11-unix/X77 ] && break; sleep 0.1; done
kill -0 $xvfb 2>/dev/null || { echo "Xvfb did not start:"; tail -20 "$logs/xvfb.log"; exit 1; }

# Which GL opens a window here: a 2-frame start of the app with each (no GPU work yet).
gl=""
for vendor in mesa nvidia; do
  if [ $vendor = mesa ]; then export __GLX_VENDOR_LIBRARY_NAME=mesa LIBGL_ALWAYS_SOFTWARE=1 GALLIUM_DRIVER=llvmpipe
  else export __GLX_VENDOR_LIBRARY_NAME=nvidia; unset LIBGL_ALWAYS_SOFTWARE GALLIUM_DRIVER; fi
  if timeout 60 "$B/tilelab-gui" --frames 2 --width $W --height $H --no-store --screenshot "$logs/probe_$vendor.png" \
       > "$logs/probe_$vendor.log" 2>&1; then
    gl=$vendor
    break
  fi
  echo "GL vendor $vendor: no window: $(grep -v '^tilelab-gui: first' "$logs/probe_$vendor.log" | tail -3 | tr '\n' ' ')"
done
[ -n "$gl" ] || { echo "no GL vendor opened a window"; tail -20 "$logs/xvfb.log"; kill $xvfb; exit 1; }
echo "GL vendor $gl: $(grep -o '(GL: .*)$' "$logs/probe_$gl.log" | head -1)"

TL_GUI_OUT=$out timeout 330 "$B/tilelab-gui" --allow-write "$out" --script "$script" --frames 4 --width $W --height $H --max-wait 300 \
  > "$out/gui.log" 2>&1
echo "tilelab-gui exit $?"
kill $xvfb 2>/dev/null
cp "$logs/results.db" "$out/" 2>/dev/null
grep -E '^(== |[a-z]+ +(ok|FAIL) )' "$out/gui.log" | grep -v '^step' || tail -30 "$out/gui.log"
grep -E 'wrote|error' "$out/gui.log" | grep -v '^step'
ls -la "$out"/*.png 2>/dev/null | awk '{print $5, $9}'
