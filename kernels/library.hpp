// The kernel library: every built-in kernel's spec, the embedded sources, and where sources are read from.
#pragma once

#include <string>
#include <vector>

#include "runtime/kernel_spec.hpp"
#include "runtime/registry.hpp"
#include "runtime/sources.hpp"

namespace tl {

std::vector<KernelSpec> memory_kernels();  // memory/: copy, elementwise, rmsnorm, softmax
std::vector<KernelSpec> gemm_kernels();    // gemm/: gemm.simt
std::vector<KernelSpec> gemm_tc_kernels(); // gemm/: gemm.mma, gemm.wgmma, gemm.fp8
std::vector<KernelSpec> attention_kernels(); // attention/: attn.fwd.mma
std::vector<KernelSpec> attention_bwd_kernels(); // attention/: attn.bwd.mma
std::vector<KernelSpec> mla_kernels();     // mla/: mla.decode
std::vector<KernelSpec> test_kernels();    // test/: test.oob, test.spin (hidden)

// Adds every library kernel to `registry`.
Status register_library_kernels(Registry& registry);
// kernel_registry() with the library kernels registered (once per process).
Registry& library_registry();

// The copy of kernels/**/*.cuh and kernels/tile/*.hpp compiled into this executable.
SourceSet embedded_kernel_sources();
// kernels/ of the source tree this binary was built from (baked in at build time); it may no longer exist.
std::string build_tree_kernels_dir();
// Where compiles read sources from: `dir` when given (not_found if it has no kernel sources), else
// $TILELAB_KERNELS_DIR when set; else the build's
// source tree when it still exists (hot reload: edits apply on the next compile); else the embedded copy.
Result<SourceSet> kernel_sources(const std::string& dir = "");

}  // namespace tl
