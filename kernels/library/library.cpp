// Library registration and the choice between hot-reloaded and embedded kernel sources.
#include "library/library.hpp"

#include <cstdlib>
#include <filesystem>
#include <mutex>

namespace tl {

// Each family's specs, defined in its spec file (families include nothing of the library's).
std::vector<KernelSpec> memory_kernels();  // memory/: copy, elementwise, rmsnorm, softmax
std::vector<KernelSpec> gemm_kernels();    // gemm/: gemm.simt
std::vector<KernelSpec> gemm_tc_kernels(); // gemm/: gemm.mma, gemm.wgmma, gemm.fp8, gemm.grouped
std::vector<KernelSpec> gemm_dequant_kernels(); // gemm/: gemm.dequant
std::vector<KernelSpec> attention_kernels(); // attention/: attn.fwd.mma
std::vector<KernelSpec> attention_bwd_kernels(); // attention/: attn.bwd.mma, attn.bwd.wgmma
std::vector<KernelSpec> attention_decode_kernels(); // attention/: attn.decode
std::vector<KernelSpec> mla_kernels();     // mla/: mla.decode, mla.sparse_decode, mla.sparse_prefill
std::vector<KernelSpec> test_kernels();    // test/: test.oob, test.spin (hidden)

// Generated at build time by cmake/embed_sources.cmake.
extern const EmbeddedSource tl_embedded_sources[];
extern const std::size_t tl_embedded_sources_count;

Status register_library_kernels(Registry& registry) {
  for (auto* family : {&memory_kernels, &gemm_kernels, &gemm_tc_kernels, &gemm_dequant_kernels, &attention_kernels, &attention_bwd_kernels, &attention_decode_kernels, &mla_kernels, &test_kernels})
    for (auto& spec : (*family)()) TL_RETURN_IF_ERROR(registry.add(std::move(spec)));
  return Status::success();
}

Registry& library_registry() {
  static std::once_flag once;
  std::call_once(once, [] {
    Status s = register_library_kernels(kernel_registry());
    if (!s) throw std::logic_error("registering the kernel library: " + s.message());  // a bug in a spec
  });
  return kernel_registry();
}

SourceSet embedded_kernel_sources() { return SourceSet::from_embedded(tl_embedded_sources, tl_embedded_sources_count); }

std::string build_tree_kernels_dir() { return TL_KERNELS_SOURCE_DIR; }

Result<SourceSet> kernel_sources(const std::string& dir_arg) {
  namespace fs = std::filesystem;
  std::error_code ec;
  std::string dir = dir_arg;
  if (const char* env = std::getenv("TILELAB_KERNELS_DIR"); dir.empty() && env && *env) dir = env;
  if (!dir.empty()) {
    if (!fs::is_directory(dir, ec))
      return make_error(ErrorCode::not_found, "--kernels-dir " + dir + " is not a directory");
    SourceSet s = SourceSet::from_directory(dir);
    if (!s.contains("tile/float16.hpp"))
      return make_error(ErrorCode::not_found, "--kernels-dir " + dir +
                                                  " does not look like TileLab's kernels/ directory (no tile/float16.hpp)");
    return s;
  }
  if (fs::is_regular_file(fs::path(build_tree_kernels_dir()) / "tile/float16.hpp", ec))
    return SourceSet::from_directory(build_tree_kernels_dir());
  return embedded_kernel_sources();
}

}  // namespace tl
