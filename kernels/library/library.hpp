// The kernel library: every built-in kernel's spec, the embedded sources, and where sources are read from.
#pragma once

#include <string>
#include <vector>

#include "runtime/jit/sources.hpp"
#include "runtime/spec/kernel_spec.hpp"
#include "runtime/spec/registry.hpp"

namespace tl {

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
