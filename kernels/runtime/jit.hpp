// NVRTC compilation of a kernel source for a name expression and an arch, with the ptxas resource report.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "runtime/sources.hpp"
#include "runtime/status.hpp"

namespace tl {

class KernelCache;

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

// What ptxas said about the kernel's function. -1 = not reported.
struct ResourceUsage {
  int registers = -1;
  int shared_static_bytes = -1;  // __shared__ arrays; dynamic shared memory comes on top at launch
  int spill_store_bytes = -1;
  int spill_load_bytes = -1;
  int stack_frame_bytes = -1;
  int barriers = -1;
  int const_bytes = -1;       // cmem[0]: parameters and constants (sm_80 reports it, sm_90 does not)
  std::string source;         // "ptxas" (the -v log) or "elf" (the cubin's .nv.info; when the log lacked them)
};

struct CompileRequest {
  std::string source;           // file of the SourceSet, "gemm/gemm_simt.cuh"
  std::string name_expression;  // "tl::gemm_simt<tl::GemmSimtConfig{.block_M = 128, ...}>"
  JitOptions options;
  std::string context;          // who asks, for messages: "gemm.simt block_M=128,..."
};

struct CompiledKernel {
  std::string name_expression;
  std::string lowered_name;  // mangled entry point: cudaLibraryGetKernel / cuModuleGetFunction take this
  std::string arch;
  std::vector<char> cubin;
  std::string ptx;
  std::string log;           // NVRTC + ptxas log
  ResourceUsage resources;
  std::string key;           // cache key (32 hex digits)
  bool from_cache = false;
  double compile_ms = 0;     // wall time of this call (hashing + cache lookup or NVRTC)
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

void to_json(nlohmann::json& j, const ResourceUsage& r);
void from_json(const nlohmann::json& j, ResourceUsage& r);

}  // namespace tl
