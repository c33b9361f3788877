// Device toolkit: ldmatrix / stmatrix, warp-wide 8x8 16-bit matrix moves between shared memory and mma fragments.
#pragma once

#include "tile/config.hpp"

namespace tl {

// Four 8x8 matrices; lane l gives the address of row l % 8 of matrix l / 8 (16 contiguous bytes) and receives, in
// r_i, its pair of matrix i at row lane / 4, columns 2 (lane % 4) + {0, 1} (tile/atoms.hpp: ldmatrix(4, false)).
TL_DEVICE_INLINE void ldmatrix_x4(unsigned addr, unsigned& r0, unsigned& r1, unsigned& r2, unsigned& r3) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
               : "r"(addr));
}
// The same, each matrix transposed on the way (the B fragment of an N-major operand).
TL_DEVICE_INLINE void ldmatrix_x4_trans(unsigned addr, unsigned& r0, unsigned& r1, unsigned& r2, unsigned& r3) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
               : "r"(addr));
}
TL_DEVICE_INLINE void ldmatrix_x2(unsigned addr, unsigned& r0, unsigned& r1) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\n" : "=r"(r0), "=r"(r1) : "r"(addr));
}
TL_DEVICE_INLINE void ldmatrix_x2_trans(unsigned addr, unsigned& r0, unsigned& r1) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];\n" : "=r"(r0), "=r"(r1) : "r"(addr));
}

// The inverse of ldmatrix_x4 (sm_90): fragments in registers to four 8x8 matrices, lane l addressing row l % 8 of
// matrix l / 8 (an accumulator tile to shared memory in 16-byte rows, e.g. a staged epilogue).
TL_DEVICE_INLINE void stmatrix_x4(unsigned addr, unsigned r0, unsigned r1, unsigned r2, unsigned r3) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(addr), "r"(r0), "r"(r1),
               "r"(r2), "r"(r3)
               : "memory");
}
TL_DEVICE_INLINE void stmatrix_x4_trans(unsigned addr, unsigned r0, unsigned r1, unsigned r2, unsigned r3) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(addr), "r"(r0),
               "r"(r1), "r"(r2), "r"(r3)
               : "memory");
}

}  // namespace tl
