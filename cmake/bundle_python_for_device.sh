#!/usr/bin/env bash
# Packs the Python package of a TL_PYTHON build (`make test` makes one in build/) for a GPU server, as
# bundle_for_device.sh packs the CLI: DIR/pkg/tilelab (the .py files, the _tilelab module, bin/tilelab: the worker),
# DIR/lib (cairo and its dependencies), DIR/fonts. There, from the repository root:
#   LD_LIBRARY_PATH=DIR/lib FONTCONFIG_FILE=$PWD/DIR/fonts.conf PYTHONPATH=DIR/pkg python3 tests/python/test_gpu.py
# (or `python3 -m pytest -m gpu tests/python` where pytest is installed). The module is built for this machine's
# Python: the server's python3 must be the same minor version (checked there on import).
# Usage: bundle_python_for_device.sh DIR [BUILD]
set -euo pipefail
dir=$1
build=${2:-build}
root=$(cd "$(dirname "$0")/.." && pwd)
so=$(ls "$build"/python/tilelab/_tilelab*.so 2>/dev/null) || {
  echo "no _tilelab module in $build/python/tilelab: configure with -DTL_PYTHON=ON and build" >&2
  exit 1
}
bash "$root/cmake/bundle_for_device.sh" "$dir" "$build/tilelab" "$so" >/dev/null
mkdir -p "$dir/pkg/tilelab/bin"
mv "$dir/tilelab" "$dir/pkg/tilelab/bin/tilelab"
mv "$dir/$(basename "$so")" "$dir/pkg/tilelab/"
cp "$root"/python/tilelab/*.py "$dir/pkg/tilelab/"
# The module's own tag (cpython-312 -> python3.12): the server's python3 must be that version.
tag=$(basename "$so" | sed -E 's/^_tilelab\.cpython-([0-9])([0-9]+).*/python\1.\2/')
echo "$tag module in $dir/pkg/tilelab; $(du -sh "$dir" | cut -f1) in all"
