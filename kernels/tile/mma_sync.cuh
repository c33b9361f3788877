// Device toolkit: mma.sync (sm_80+), warp-wide tensor-core MMAs with operands in registers.
#pragma once

#include "tile/config.hpp"

namespace tl {

// D = A B + D, m16n8k16, A row-major / B column-major 16-bit (bf16 or f16), f32 accumulators. Fragments as the PTX
// ISA lays them out (tile/atoms.hpp: mma_m16n8k16_a_f16, _b_f16, _c): a[4], b[2], d[4] per lane.
template <bool BF16>
TL_DEVICE_INLINE void mma_16816(float* d, const unsigned* a, const unsigned* b) {
  if constexpr (BF16) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
}

// D = A B + D, m16n8k32, e4m3 operands (sm_89+), f32 accumulators (tile/atoms.hpp: mma_m16n8k32_a_8bit, _b_8bit).
TL_DEVICE_INLINE void mma_16832_e4m3(float* d, const unsigned* a, const unsigned* b) {
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

}  // namespace tl
