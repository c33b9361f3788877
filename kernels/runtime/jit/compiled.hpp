// What a compile produces (cubin, PTX, lowered name, ptxas resources): shared by the JIT and its on-disk cache.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace tl {

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

void to_json(nlohmann::json& j, const ResourceUsage& r);
void from_json(const nlohmann::json& j, ResourceUsage& r);

}  // namespace tl
