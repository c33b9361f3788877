#!/usr/bin/env bash
# Fills the NVRTC cache for tests/perf/refactor_check_device.sh here (no GPU needed) and packs it into DIR/cache.tar.xz:
# both trees (DIR/before, DIR/after) x every case, plain builds. Usage: refactor_prefill.sh DIR
set -euo pipefail
D=$(cd "$1" && pwd)
C=$(mktemp -d)
source "$(dirname "$0")/refactor_cases.sh"
for c in "${CASES[@]}"; do
  IFS='|' read -r kernel problem config <<<"$c"
  for tree in before after; do
    "$D/tilelab" compile "$kernel" --problem "$problem" ${config:+--config "$config"} --kernels-dir "$D/$tree" \
      --cache-dir "$C" > /dev/null || echo "compile failed: $kernel $problem $config ($tree)"
  done
done
tar cJf "$D/cache.tar.xz" -C "$C" . && rm -rf "$C" && du -sh "$D/cache.tar.xz"
