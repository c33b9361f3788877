// The kernel registry: library kernels and (later) user-defined ones from Lua, looked up by name.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "runtime/kernel_spec.hpp"
#include "runtime/status.hpp"

namespace tl {

class Registry {
 public:
  // Errors (invalid_argument) when the name is taken or the spec lacks a required member.
  Status add(KernelSpec spec);
  // The spec, or not_found listing the known names (and the closest one, for a typo).
  Result<const KernelSpec*> find(const std::string& name) const;
  // Sorted by name; hidden (test) kernels only when asked.
  std::vector<const KernelSpec*> list(bool include_hidden = false) const;

 private:
  std::vector<std::unique_ptr<KernelSpec>> m_specs;  // stable addresses: KernelInstance keeps a pointer
};

// The process-wide registry.
Registry& kernel_registry();

}  // namespace tl
