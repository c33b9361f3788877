#!/usr/bin/env bash
# FlashMLA 9241ae3 trimmed to what the V3.2 sparse decode needs (API, scheduler metadata, combine, the two V3.2 sparse
# decode instantiations) plus a stub of the two SM100 dense-prefill entry points that api.cpp binds by address (the
# reason sparse19's trimmed build did not import: an address needs its symbol at load time even with lazy binding).
# Other missing kernels are only called (PLT), so the module imports with RTLD_LAZY (flashmla_sparse_run.py).
# About 53 s on the GPU machine's 16 cores (docs/perf.md, sparse20). Bundle it with FlashMLA's tarball
# (../shared/baselines/flashmla/flashmla-9241ae3.tgz) beside it, flashmla_sparse_run.py, flashmla_sparse.py and
# cuda_timing.py; there: `bash DIR/flashmla_sparse_build.sh && python3 DIR/flashmla_sparse_run.py` (FM_ONLY: shapes).
here=$(cd "$(dirname "$0")" && pwd)
if PYTHONPATH=/tmp/flashmla python3 -c 'import torch,os,sys; sys.setdlopenflags(os.RTLD_LAZY); import flash_mla' 2>/dev/null; then echo "FlashMLA already built"; exit 0; fi
rm -rf /tmp/flashmla && tar -xzf "$here"/flashmla-9241ae3.tgz -C /tmp && cd /tmp/flashmla || exit 1
cat > csrc/api/sm100_stub.cpp <<'CPP'
// Not built here (sm_90a only): the SM100 dense prefill entry points, so that the module's bindings load.
#include <c10/util/Exception.h>
#include "sm100/prefill/dense/interface.h"
void FMHACutlassSM100FwdRun(at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor,
                            at::Tensor, int, float, int, int, bool) { TORCH_CHECK(false, "SM100 dense prefill not built"); }
void FMHACutlassSM100BwdRun(at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor,
                            at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor, int, float, int, int, bool) {
  TORCH_CHECK(false, "SM100 dense prefill not built");
}
CPP
python3 - <<'PY'
import re
s = open("setup.py").read()
a = s.index("sources=[") + len("sources=[")
b = s.index("],", a)
keep = ["csrc/api/api.cpp", "csrc/api/sm100_stub.cpp",
        "csrc/smxx/decode/get_decoding_sched_meta/get_decoding_sched_meta.cu", "csrc/smxx/decode/combine/combine.cu",
        "csrc/sm90/decode/sparse_fp8/instantiations/v32_persistent_h64.cu",
        "csrc/sm90/decode/sparse_fp8/instantiations/v32_persistent_h128.cu"]
s = s[:a] + "".join(f'\n            "{k}",' for k in keep) + "\n        " + s[b:]
s = s.replace('subprocess.run(["git", "submodule", "update", "--init", "csrc/cutlass"])', "")
open("setup.py", "w").write(s)
PY
export CPLUS_INCLUDE_PATH=$(dirname "$(dirname "$(command -v nvcc)")")/include/cccl
t0=$(date +%s)
FLASH_MLA_DISABLE_SM100=1 MAX_JOBS=16 NVCC_THREADS=2 timeout 110 python3 setup.py build_ext --inplace > /tmp/flashmla_build.log 2>&1
rc=$?
echo "FlashMLA trimmed build rc=$rc in $(( $(date +%s) - t0 )) s"
[ $rc -eq 0 ] || grep -E ' error|Error' /tmp/flashmla_build.log | head -10
