#!/usr/bin/env bash
# On a GPU server: where a sweep's time outside the kernels goes. A warm-up sweep fills the kernel cache, then the
# same sweep again (--fresh) with TILELAB_LOG=debug: per run, the parent's worker call and check, and the worker's
# phases (load, alloc+fill, checked run, read-back, timed runs, extras, free). Usage: sweep_phases.sh DIR [M=..,N=..,K=..]
set -uo pipefail
dir=$(cd "$1" && pwd)
export LD_LIBRARY_PATH=$dir/lib
tl=$dir/tilelab
problem=${2:-M=4096,N=4096,K=4096}
db=$(mktemp -d)/phases.db
args=(gemm.wgmma --problem "$problem" --space 'num_stages=2,3;panel=1,2,4,8,16' --db "$db" --plain --fresh)
"$tl" sweep "${args[@]}" > /dev/null 2>&1
TILELAB_LOG=debug "$tl" sweep "${args[@]}" 2>&1 | grep -E "worker gemm|run tl::|overhead"
