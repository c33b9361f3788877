// Host-only: layouts to and from text (CuTe's print format), and the SPEC strings of `tilelab layout`.
#pragma once

#include "tile/config.hpp"

#if !TL_DEVICE_CODE

#include <string>

#include "tile/layout.hpp"

namespace tl {

inline std::string to_string(const IntTuple& t) {
  std::string out;
  int leaf = 0;
  signed char prev = -1;
  for (int p = 0; p < t.m_num_tokens; ++p) {
    const signed char tok = t.m_tok[p];
    // a comma goes between two siblings: after a leaf or ')' and before a leaf or '('
    if ((prev == IntTuple::kLeaf || prev == IntTuple::kClose) && tok != IntTuple::kClose) out += ',';
    if (tok == IntTuple::kOpen) out += '(';
    if (tok == IntTuple::kClose) out += ')';
    if (tok == IntTuple::kLeaf) out += std::to_string(t.m_leaf[leaf++]);
    prev = tok;
  }
  return out;
}

inline std::string to_string(const Layout& l) { return to_string(l.shape()) + ":" + to_string(l.stride()); }

}  // namespace tl

#endif  // !TL_DEVICE_CODE
