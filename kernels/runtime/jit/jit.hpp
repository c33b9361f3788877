// NVRTC compilation of a kernel source for a name expression and an arch, with the ptxas resource report.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "runtime/core/status.hpp"
#include "runtime/jit/cache.hpp"
#include "runtime/jit/compiled.hpp"
#include "runtime/jit/sources.hpp"

namespace tl {

struct JitOptions {
  std::string arch = "sm_90a";  // sm_80, sm_90a, ... (a real arch: NVRTC emits SASS for it)
  std::string cpp_std = "c++20";
  bool fast_math = false;
  bool lineinfo = true;
  std::vector<std::string> include_dirs;  // for <cuda_*.h> and the like; our own sources come from the SourceSet
  std::vector<std::string> defines;       // "NAME" or "NAME=VALUE"
  std::vector<std::string> extra;         // passed to NVRTC verbatim

  // The exact NVRTC argument list (also what the cache key hashes).
  std::vector<std::string> nvrtc_args() const;
};

struct CompileRequest {
  std::string source;           // file of the SourceSet, "gemm/gemm_simt.cuh"
  std::string name_expression;  // "tl::gemm_simt<tl::GemmSimtConfig{.block_M = 128, ...}>"
  JitOptions options;
  std::string context;          // who asks, for messages: "gemm.simt block_M=128,..."
};

// Compiles through the cache when one is given. Errors: not_found (no such source), compile (with the log's
// `path:line: error: ...` lines and the kernel, expression and arch named), invalid_argument (bad arch).
// compile() and cache_key() may run on several threads at once (a sweep compiles ahead on a pool): each call has
// its own NVRTC program, and the cache writes every file under a unique temporary name and renames it into place,
// so two threads storing one key both leave a whole entry. Changing sources() meanwhile is not allowed.
class Jit {
 public:
  explicit Jit(SourceSet sources, KernelCache* cache = nullptr) : m_sources(std::move(sources)), m_cache(cache) {}

  Result<CompiledKernel> compile(const CompileRequest& request) const;
  // The key compile() would use, without compiling: everything that produced the output.
  Result<std::string> cache_key(const CompileRequest& request) const;

  const SourceSet& sources() const { return m_sources; }
  SourceSet& sources() { return m_sources; }

 private:
  SourceSet m_sources;
  KernelCache* m_cache;
};

// Parsing of ptxas -v output for one entry (by lowered name) and of the cubin's ELF, exposed for tests.
ResourceUsage parse_ptxas_report(const std::string& log, const std::string& lowered_name);
ResourceUsage parse_cubin_resources(const std::vector<char>& cubin, const std::string& lowered_name);
// The sizes in bytes of an entry's parameters, in order, from its PTX `.entry name(.param ..., ...)` declaration
// (what cudaFuncGetParamInfo reports, known without probing past the last one); not_found when the PTX has no
// such entry, parse when a declaration is not understood.
Result<std::vector<std::size_t>> ptx_entry_param_sizes(const std::string& ptx, const std::string& lowered_name);
// NVRTC's "file(12): error: ..." lines rewritten as "display_path:12: error: ...", the rest kept.
std::string format_nvrtc_log(const std::string& log, const SourceSet& sources);
// NVRTC version as "13.0".
std::string nvrtc_version_string();
// "sm_90a" -> ok; anything NVRTC cannot target -> invalid_argument naming the accepted forms.
Status check_arch(const std::string& arch);

}  // namespace tl
