#!/usr/bin/env bash
# On a GPU server, from a bundle (`cmake/bundle_for_device.sh DIR build/tilelab build/tests/test_*_gpu`): the runtime
# GPU tests (the worker's on-device output check), where a warm sweep's time goes (sweep_phases.sh), issue 7's
# sweep benchmark (sweep_bench.sh) and issue 8's probe overhead (kernel and probe build alternated run by run).
# Usage: issue7_8_device.sh DIR [notests]
set -uo pipefail
dir=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
export LD_LIBRARY_PATH=$dir/lib TILELAB_EXE=$dir/tilelab FONTCONFIG_FILE=$dir/fonts.conf
export TILELAB_CACHE_DIR=${TILELAB_CACHE_DIR:-/tmp/tlcache} TILELAB_DB=/tmp/tl_issue78.db
tl=$dir/tilelab
[ "${2:-}" = notests ] || for t in "$dir"/test_*_gpu; do
  timeout 300 "$t" > "/tmp/$(basename "$t").log" 2>&1
  rc=$?  # before any command substitution below resets $?
  echo "$(basename "$t"): exit $rc $(grep -E '^\[  (PASSED|FAILED) ' "/tmp/$(basename "$t").log" | tr '\n' ' ')"
  grep -E '^\[  FAILED  \]' "/tmp/$(basename "$t").log" | head -5
done
echo "== sweep phases, 4096^3"
bash "$here/sweep_phases.sh" "$dir" 2>&1 | sed -E 's/^tilelab: debug: //; s/worker\[[0-9]+\]: tilelab: debug: //' | tail -6
echo "== sweep benchmark (issue 7)"
bash "$here/sweep_bench.sh" "$dir" 16 2>&1 | grep -E 'sweep:|time:|overhead|best|stored' | head -12
echo "== probe overhead (issue 8), kernel and probe build alternated"
for p in M=8192,N=8192,K=8192 M=8192,N=8192,K=8192 M=8192,N=8192,K=8192 M=4096,N=4096,K=4096 M=4096,N=4096,K=1024; do
  echo "$p: $($tl bench gemm.wgmma --problem $p --timeline --repeat 50 --no-store 2>&1 | grep 'probes on')"
done
