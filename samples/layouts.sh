#!/usr/bin/env bash
# Exports every built-in layout atom's plot (SVG, and JSON for tools) into out/layouts/ with the CLI.
# Usage: samples/layouts.sh [TILELAB] [OUT_DIR]   (defaults: build/tilelab, out/layouts)
set -euo pipefail
TILELAB=${1:-build/tilelab}
OUT=${2:-out/layouts}
mkdir -p "$OUT"
count=0
while read -r atom _; do
  [ -n "$atom" ] || continue
  # Fragments read best coloured by thread, shared-memory layouts by bank.
  color=thread
  case "$atom" in smem.*) color=bank ;; esac
  file=$(printf '%s' "$atom" | tr -c 'A-Za-z0-9._-' '_')
  "$TILELAB" layout "$atom" --color "$color" --out "$OUT/$file.svg"
  "$TILELAB" layout "$atom" --format json --out "$OUT/$file.json"
  count=$((count + 1))
done < <("$TILELAB" layout --list)
echo "wrote $count layout plots to $OUT/"
