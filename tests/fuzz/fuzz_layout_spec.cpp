// libFuzzer target for the SPEC parser: never crashes, errors point inside the text, layouts round-trip.
#include <cstddef>
#include <cstdint>
#include <string>

#include "tile/layout_spec.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const tl::LayoutSpec s = tl::parse_spec(text);
  if (!s.ok) {
    if (s.position < 0 || s.position > static_cast<int>(text.size()) || s.message.empty()) __builtin_trap();
    (void)tl::format_spec_error(s);
    return 0;
  }
  if (s.is_fragment()) {
    if (!s.fragment.covers_tile()) __builtin_trap();
    return 0;
  }
  // the size limits keep every offset in int range
  for (int i = 0; i < s.memory.size() && i < 64; ++i) (void)s.memory(i);
  (void)s.offset(s.rows - 1, s.cols - 1);
  const tl::LayoutSpec again = tl::parse_spec(tl::to_string(s.memory));
  if (!again.ok || again.memory.layout() != s.memory.layout() || !(again.memory.swizzle() == s.memory.swizzle()))
    __builtin_trap();
  return 0;
}
