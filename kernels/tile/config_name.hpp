// Host-only: the name expression of a kernel whose one template parameter is its config struct, and its probe names.
#pragma once

#include "tile/config.hpp"

#if !TL_DEVICE_CODE

#include <string>
#include <string_view>
#include <vector>

namespace tl {

// Builds `tl::KERNEL<tl::TYPE{.field = value, ...}>` field by field. Designated initializers let the compiler check
// each field name and their order against the struct, so the text cannot silently mean another config.
class ConfigName {
 public:
  ConfigName(std::string_view kernel, std::string_view type) {
    m_text.append("tl::").append(kernel).append("<tl::").append(type).append("{");
  }
  ConfigName& field(std::string_view name, bool v) { return raw(name, v ? "true" : "false"); }
  ConfigName& field(std::string_view name, int v) { return raw(name, std::to_string(v)); }
  // A value written as C++ source (an enumerator such as `tl::ElemType::bf16`).
  ConfigName& raw(std::string_view name, std::string_view source) {
    m_text.append(m_fields++ ? ", ." : ".").append(name).append(" = ").append(source);
    return *this;
  }
  std::string str() const { return m_text + "}>"; }

 private:
  std::string m_text;
  int m_fields = 0;
};

}  // namespace tl

// The region names of a plan's X-macro probe list (`#define LIST(X) X(load_issue) X(mma) ...`), in region-id order:
// the spec's `probes`, from the same list the kernel's enum is expanded from.
#define TL_PROBE_NAME_STRING(name) #name,
#define TL_PROBE_NAMES(LIST) std::vector<std::string>{LIST(TL_PROBE_NAME_STRING)}

#endif  // !TL_DEVICE_CODE
