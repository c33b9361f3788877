// The kernel registry: library kernels and (later) user-defined ones from Lua, looked up by name.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/core/status.hpp"
#include "runtime/spec/kernel_spec.hpp"

namespace tl {

class Registry {
 public:
  // Errors (invalid_argument) when the name is taken or the spec lacks a required member.
  Status add(KernelSpec spec);
  // Drops a spec (user-defined kernels when the Lua state that defined them closes); false when absent.
  // Instances made from it must be gone by then.
  bool remove(const std::string& name);
  // The spec, or not_found listing the known names (and the closest one, for a typo).
  Result<const KernelSpec*> find(const std::string& name) const;
  // Sorted by name; hidden (test) kernels only when asked.
  std::vector<const KernelSpec*> list(bool include_hidden = false) const;

 private:
  std::vector<std::unique_ptr<KernelSpec>> m_specs;  // stable addresses: KernelInstance keeps a pointer
};

// The process-wide registry.
Registry& kernel_registry();

// The key=value maps checked against the schemas (defaults filled in) and can_implement: what instantiate checks
// before it builds the launch, the arguments and the problem's host data (which can take long: mla.sparse_decode's
// index lists at tens of GB). Errors as instantiate's.
struct ValidatedValues {
  Values problem, config;
};
Result<ValidatedValues> validate(const KernelSpec& spec, const std::map<std::string, std::string>& problem,
                                 const std::map<std::string, std::string>& config, const DeviceLimits& limits);

// Everything a launch needs for one kernel, problem and config: the resolved instance (launch geometry,
// arguments, FLOPs/bytes, tolerance, spec->reference) and the compiled code (cubin, lowered name, resources).
struct PreparedKernel {
  KernelInstance instance;
  CompiledKernel compiled;
  std::optional<CompiledKernel> timeline;  // the probe build (-DTL_TIMELINE=1), from add_timeline_build (bench.hpp)
};

// find -> instantiate (schema checks, can_implement against `limits`) -> compile for limits.arch through `jit`.
// `options.arch` is overridden by limits.arch. Errors: not_found, invalid_argument, unsupported, compile.
Result<PreparedKernel> prepare_kernel(const Registry& registry, const Jit& jit, const std::string& name,
                                      const std::map<std::string, std::string>& problem,
                                      const std::map<std::string, std::string>& config, const DeviceLimits& limits,
                                      JitOptions options = {});
// prepare_kernel's last step: an instance compiled for its limits' arch (`options.arch` overridden).
Result<PreparedKernel> compile_instance(const Jit& jit, KernelInstance instance, JitOptions options = {});

}  // namespace tl
