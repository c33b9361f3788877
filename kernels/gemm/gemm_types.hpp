// Host and device: the element types of C the tensor-core GEMMs are specialised on (their configs name one).
#pragma once

#include "tile/config.hpp"

namespace tl {
namespace gemm_detail {

// Element type of C (the host spec's out_dtype). Accumulation is fp32 in every case; only the epilogue's conversion
// and store differ.
enum OutType : int { kOutBf16 = 0, kOutF16 = 1, kOutF32 = 2 };

TL_HOST_DEVICE constexpr int out_bytes(OutType t) { return t == kOutF32 ? 4 : 2; }
template <int C_TYPE>
constexpr int out_bytes() {
  return out_bytes(static_cast<OutType>(C_TYPE));
}

#if !TL_DEVICE_CODE
// The enumerator as C++ source, for a config's name expression.
inline const char* out_type_source(OutType t) {
  return t == kOutF32 ? "tl::gemm_detail::kOutF32" : t == kOutF16 ? "tl::gemm_detail::kOutF16" : "tl::gemm_detail::kOutBf16";
}
#endif

}  // namespace gemm_detail
}  // namespace tl
