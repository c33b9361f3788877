// The one set of Hopper wgmma wrappers: m64nNk16 (bf16/f16) and m64nNk32 (e4m3) with an f32 accumulator, A from
// shared memory (WgmmaSS) or registers (WgmmaRS), plus fence/commit/wait and the shared-memory descriptors.
//
// Operands. B is always a shared-memory descriptor; TRANS_B is the instruction's imm-trans-b: 0 for a K-major B
// (rows of B are its n index with the k values contiguous), 1 for an N-major one (rows are k with the n values
// contiguous, as V's rows are in attention's O += P V). A is always K-major (imm-trans-a = 0). RS: A is the
// warpgroup's register fragment (per warp 16 rows, the mma.m16n8k16 A layout: 4 registers of two 16-bit values).
// e4m3 (WgmmaSSE4M3) takes no transpose immediates: both operands K-major.
// Accumulator d[N/2]: warp w of the warpgroup holds rows 16w + lane/4 (+8); d[4j..4j+3] are columns
// 8j + 2*(lane%4) + {0, 1} of rows r (4j, 4j+1) and r + 8 (4j+2, 4j+3).
// scale_d: run(d, a, b, scale_d) takes it in a register (nonzero adds to d, zero overwrites it: decided at run
// time, through a predicate); run<SCALE_D>(d, a, b) bakes it in as an immediate (default 1: accumulate; 0
// overwrites), which spares the register. Each form emits, operand for operand, the asm the kernels spelled out
// by hand before (gemm.wgmma, attn.fwd.wgmma, mla.decode, the built-in ceiling kernels): their PTX is unchanged.
//
// Inline asm takes only literal strings, so the "{%0, %1, ...}" accumulator list and the "+f"(d[i]) operand list
// are generated below by the preprocessor from one table of operand numbers; the operands that follow the
// accumulators (descriptors, A registers, scale_d, trans-b) are numbered from the table's next group of eight.
#pragma once

#include "tile/config.hpp"

// Operand numbers in groups of eight: accumulators of an N-column wgmma are groups 0 .. N/16 - 1, the operands
// after them are group N/16 (N a multiple of 16 here; m64n152 has a half group of its own, 9h, and other odd
// multiples of 8 would need one too).
#define TL_WG_G0 0, 1, 2, 3, 4, 5, 6, 7
#define TL_WG_G1 8, 9, 10, 11, 12, 13, 14, 15
#define TL_WG_G2 16, 17, 18, 19, 20, 21, 22, 23
#define TL_WG_G3 24, 25, 26, 27, 28, 29, 30, 31
#define TL_WG_G4 32, 33, 34, 35, 36, 37, 38, 39
#define TL_WG_G5 40, 41, 42, 43, 44, 45, 46, 47
#define TL_WG_G6 48, 49, 50, 51, 52, 53, 54, 55
#define TL_WG_G7 56, 57, 58, 59, 60, 61, 62, 63
#define TL_WG_G8 64, 65, 66, 67, 68, 69, 70, 71
#define TL_WG_G9 72, 73, 74, 75, 76, 77, 78, 79
#define TL_WG_G10 80, 81, 82, 83, 84, 85, 86, 87
#define TL_WG_G11 88, 89, 90, 91, 92, 93, 94, 95
#define TL_WG_G12 96, 97, 98, 99, 100, 101, 102, 103
#define TL_WG_G13 104, 105, 106, 107, 108, 109, 110, 111
#define TL_WG_G14 112, 113, 114, 115, 116, 117, 118, 119
#define TL_WG_G15 120, 121, 122, 123, 124, 125, 126, 127
#define TL_WG_G16 128, 129, 130, 131, 132, 133, 134, 135
// m64n152 (76 accumulators: 9 groups and a half): its operands come right after the half group, from 76.
#define TL_WG_G9h 76, 77, 78, 79, 80, 81, 82, 83

#define TL_WG_STR_(x) #x
#define TL_WG_STR(x) TL_WG_STR_(x)
// F on the group's first number, M on the other seven (F differs for the list's very first element: no separator).
#define TL_WG_EACH8_(F, M, a, b, c, d, e, f, g, h) F(a) M(b) M(c) M(d) M(e) M(f) M(g) M(h)
#define TL_WG_EACH8(F, M, ...) TL_WG_EACH8_(F, M, __VA_ARGS__)
#define TL_WG_GROUP(F, M, g) TL_WG_EACH8(F, M, TL_WG_G##g)
// F(0) M(1) ... M(8G - 1).
#define TL_WG_UPTO1(F, M) TL_WG_GROUP(F, M, 0)
#define TL_WG_UPTO2(F, M) TL_WG_UPTO1(F, M) TL_WG_GROUP(M, M, 1)
#define TL_WG_UPTO3(F, M) TL_WG_UPTO2(F, M) TL_WG_GROUP(M, M, 2)
#define TL_WG_UPTO4(F, M) TL_WG_UPTO3(F, M) TL_WG_GROUP(M, M, 3)
#define TL_WG_UPTO5(F, M) TL_WG_UPTO4(F, M) TL_WG_GROUP(M, M, 4)
#define TL_WG_UPTO6(F, M) TL_WG_UPTO5(F, M) TL_WG_GROUP(M, M, 5)
#define TL_WG_UPTO7(F, M) TL_WG_UPTO6(F, M) TL_WG_GROUP(M, M, 6)
#define TL_WG_UPTO8(F, M) TL_WG_UPTO7(F, M) TL_WG_GROUP(M, M, 7)
#define TL_WG_UPTO9(F, M) TL_WG_UPTO8(F, M) TL_WG_GROUP(M, M, 8)
#define TL_WG_UPTO10(F, M) TL_WG_UPTO9(F, M) TL_WG_GROUP(M, M, 9)
#define TL_WG_UPTO11(F, M) TL_WG_UPTO10(F, M) TL_WG_GROUP(M, M, 10)
#define TL_WG_UPTO12(F, M) TL_WG_UPTO11(F, M) TL_WG_GROUP(M, M, 11)
#define TL_WG_UPTO13(F, M) TL_WG_UPTO12(F, M) TL_WG_GROUP(M, M, 12)
#define TL_WG_UPTO14(F, M) TL_WG_UPTO13(F, M) TL_WG_GROUP(M, M, 13)
#define TL_WG_UPTO15(F, M) TL_WG_UPTO14(F, M) TL_WG_GROUP(M, M, 14)
#define TL_WG_UPTO16(F, M) TL_WG_UPTO15(F, M) TL_WG_GROUP(M, M, 15)
#define TL_WG_UPTO9h(F, M) TL_WG_UPTO9(F, M) M(72) M(73) M(74) M(75)
// The j-th number (0..7) of group g, as an operand reference "%n".
#define TL_WG_PICK0(a, b, c, d, e, f, g, h) a
#define TL_WG_PICK1(a, b, c, d, e, f, g, h) b
#define TL_WG_PICK2(a, b, c, d, e, f, g, h) c
#define TL_WG_PICK3(a, b, c, d, e, f, g, h) d
#define TL_WG_PICK4(a, b, c, d, e, f, g, h) e
#define TL_WG_PICK5(a, b, c, d, e, f, g, h) f
#define TL_WG_PICK6(a, b, c, d, e, f, g, h) g
#define TL_WG_AT_(j, ...) TL_WG_STR(TL_WG_PICK##j(__VA_ARGS__))
#define TL_WG_AT(g, j) "%" TL_WG_AT_(j, TL_WG_G##g)

#define TL_WG_PCT_FIRST(i) "%" #i
#define TL_WG_PCT_NEXT(i) ", %" #i
#define TL_WG_ACC_FIRST(i) "+f"(d[i])
#define TL_WG_ACC_NEXT(i) , "+f"(d[i])
// "{%0, %1, ..., %(8G-1)}" and "+f"(d[0]), ..., "+f"(d[8G-1]) for an accumulator of 8G registers.
#define TL_WG_DLIST(G) "{" TL_WG_UPTO##G(TL_WG_PCT_FIRST, TL_WG_PCT_NEXT) "}"
#define TL_WG_DOUTS(G) TL_WG_UPTO##G(TL_WG_ACC_FIRST, TL_WG_ACC_NEXT)

// The asm text. SCALE: the setp's source, an operand ("%n": scale_d in a register) or a literal 0/1 (an immediate);
// TB: imm-trans-b, a literal. Immediates are spelled into the text rather than passed as "n" operands: an extra
// operand, even a constant one, reorders the PTX that the compiler emits around the asm.
#define TL_WG_PRED(SCALE) "{\n.reg .pred p;\nsetp.ne.b32 p, " SCALE ", 0;\n"
// SS: d, desc_a = %(8G), desc_b = %(8G+1), scale_d = %(8G+2) when in a register; TA: imm-trans-a, a literal.
#define TL_WG_SS_TEXT_T(G, SHAPE, SCALE, TA, TB)                                                              \
  TL_WG_PRED(SCALE) "wgmma.mma_async.sync.aligned." SHAPE " " TL_WG_DLIST(G) ", " TL_WG_AT(G, 0) ", "         \
                    TL_WG_AT(G, 1) ", p, 1, 1, " TA ", " TB ";\n}\n"
#define TL_WG_SS_TEXT(G, SHAPE, SCALE, TB) TL_WG_SS_TEXT_T(G, SHAPE, SCALE, "0", TB)
// RS: d, a[0..3] = %(8G)..%(8G+3), desc_b = %(8G+4), scale_d = %(8G+5).
#define TL_WG_RS_TEXT(G, SHAPE, SCALE, TB)                                                                    \
  TL_WG_PRED(SCALE) "wgmma.mma_async.sync.aligned." SHAPE " " TL_WG_DLIST(G) ", {" TL_WG_AT(G, 0) ", "        \
                    TL_WG_AT(G, 1) ", " TL_WG_AT(G, 2) ", " TL_WG_AT(G, 3) "}, " TL_WG_AT(G, 4)              \
                    ", p, 1, 1, " TB ";\n}\n"
// e4m3 RS: a[0..3] = %(8G)..%(8G+3), desc_b = %(8G+4); no transpose immediates.
#define TL_WG_RS8_TEXT(G, SHAPE, SCALE)                                                                       \
  TL_WG_PRED(SCALE) "wgmma.mma_async.sync.aligned." SHAPE " " TL_WG_DLIST(G) ", {" TL_WG_AT(G, 0) ", "        \
                    TL_WG_AT(G, 1) ", " TL_WG_AT(G, 2) ", " TL_WG_AT(G, 3) "}, " TL_WG_AT(G, 4) ", p, 1, 1;\n}\n"
// e4m3 SS: no transpose immediates.
#define TL_WG_SS8_TEXT(G, SHAPE, SCALE)                                                                       \
  TL_WG_PRED(SCALE) "wgmma.mma_async.sync.aligned." SHAPE " " TL_WG_DLIST(G) ", " TL_WG_AT(G, 0) ", "         \
                    TL_WG_AT(G, 1) ", p, 1, 1;\n}\n"
// The statements (inside run(), whose parameters they name).
#define TL_WG_SS_REG(G, SHAPE, TB)                                                                            \
  asm volatile(TL_WG_SS_TEXT(G, SHAPE, TL_WG_AT(G, 2), #TB) : TL_WG_DOUTS(G) : "l"(da), "l"(db), "r"(scale_d))
// An M-major A (imm-trans-a 1), B as TB, scale_d in a register.
#define TL_WG_SST_REG(G, SHAPE, TB)                                                                           \
  asm volatile(TL_WG_SS_TEXT_T(G, SHAPE, TL_WG_AT(G, 2), "1", #TB) : TL_WG_DOUTS(G) : "l"(da), "l"(db), "r"(scale_d))
#define TL_WG_SS_IMM(G, SHAPE, S, TB) asm volatile(TL_WG_SS_TEXT(G, SHAPE, #S, #TB) : TL_WG_DOUTS(G) : "l"(da), "l"(db))
#define TL_WG_RS_REG(G, SHAPE, TB)                                                                            \
  asm volatile(TL_WG_RS_TEXT(G, SHAPE, TL_WG_AT(G, 5), #TB)                                                   \
               : TL_WG_DOUTS(G)                                                                               \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(scale_d))
#define TL_WG_SHAPE16(N, T) "m64n" #N "k16.f32." T "." T

namespace tl::wgmma_ops {

TL_DEVICE_INLINE void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
TL_DEVICE_INLINE void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
// Waits until at most N of this warpgroup's committed groups are still in flight.
template <int N>
TL_DEVICE_INLINE void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}

// Shared-memory matrix descriptor in the 128-byte swizzle layout with the given leading / stride byte offsets
// (PTX ISA "Matrix Descriptor Format"; the address and offsets in 16-byte units, swizzle mode 1 = 128 B).
TL_DEVICE_INLINE unsigned long long smem_desc_sw128(unsigned addr, unsigned lbo, unsigned sbo) {
  unsigned long long d = (addr & 0x3FFFFu) >> 4;
  d |= static_cast<unsigned long long>((lbo >> 4) & 0x3FFFu) << 16;
  d |= static_cast<unsigned long long>((sbo >> 4) & 0x3FFFu) << 32;
  d |= 1ull << 62;
  return d;
}
// A K-major operand, 128-byte swizzle: stride byte offset one 8-row x 128-byte atom (the leading byte offset is
// unused for a swizzled K-major operand: 16, encoded 1).
TL_DEVICE_INLINE unsigned long long smem_desc_sw128(unsigned addr) { return smem_desc_sw128(addr, 16, 1024); }
// An MN-major operand, 128-byte swizzle: 64 MN elements per 128-byte row, 8 k-rows per 1024-byte atom (stride
// byte offset), the next 64 MN elements block_bytes further (leading byte offset). CuTe's make_gmma_desc<Major::MN>
// for SW128.
TL_DEVICE_INLINE unsigned long long smem_desc_sw128_mn(unsigned addr, unsigned block_bytes) {
  return smem_desc_sw128(addr, block_bytes, 1024);
}
// The same SW128 descriptors as two 32-bit words, for kernels that keep them in uniform registers (tile/barrier.cuh's
// warp_uniform): the low word is the address field with the leading byte offset at bit 16, and adding (bytes >> 4) to
// it gives the descriptor of the address `bytes` further (shared memory ends below 2^18 bytes, so the address field
// never carries into the offset); the high word (stride byte offset 1024, 128-byte swizzle) is every SW128 operand's.
enum : unsigned { kSw128DescHi = (1024u >> 4) | (1u << 30) };
TL_DEVICE_INLINE unsigned sw128_desc_lo(unsigned addr, unsigned lbo) {
  return ((addr & 0x3FFFFu) >> 4) | (((lbo >> 4) & 0x3FFFu) << 16);
}
TL_DEVICE_INLINE unsigned long long desc_of(unsigned lo, unsigned hi) {
  return static_cast<unsigned long long>(hi) << 32 | lo;
}

// wgmma m64nNk16, A and B from shared memory (descriptors); BF16 picks bf16 (else f16) inputs.
template <int N, bool BF16, int TRANS_B>
struct WgmmaSS;
// wgmma m64nNk16, A and B from shared memory with A M-major (imm-trans-a 1: rows of A are its k index with the m
// values contiguous, an MN-major descriptor), as dS is stored for attention backward's dQ = dS K.
template <int N, bool BF16, int TRANS_B>
struct WgmmaSSTransA;
// wgmma m64nNk16, A from registers (4 per thread), B from shared memory.
template <int N, bool BF16, int TRANS_B>
struct WgmmaRS;
// wgmma m64nNk32 e4m3 x e4m3, both from shared memory (K-major).
template <int N>
struct WgmmaSSE4M3;
// wgmma m64nNk32 e4m3 x e4m3, A from registers (4 per thread: per warp 16 rows, the mma.m16n8k32 e4m3 A layout, four
// k-consecutive bytes per register), B from shared memory (K-major).
template <int N>
struct WgmmaRSE4M3;

#define TL_WG_DEFINE16(N, G, BF16, T)                                                                        \
  template <int TRANS_B>                                                                                     \
  struct WgmmaSS<N, BF16, TRANS_B> {                                                                         \
    static_assert(TRANS_B == 0 || TRANS_B == 1, "imm-trans-b is 0 or 1");                                   \
    static TL_DEVICE_INLINE void run(float* d, unsigned long long da, unsigned long long db, int scale_d) {  \
      if constexpr (TRANS_B) TL_WG_SS_REG(G, TL_WG_SHAPE16(N, T), 1);                                        \
      else TL_WG_SS_REG(G, TL_WG_SHAPE16(N, T), 0);                                                          \
    }                                                                                                        \
    template <int SCALE_D = 1>                                                                               \
    static TL_DEVICE_INLINE void run(float* d, unsigned long long da, unsigned long long db) {               \
      static_assert(SCALE_D == 0 || SCALE_D == 1, "scale_d is 0 (overwrite) or 1 (accumulate)");            \
      if constexpr (SCALE_D && TRANS_B) TL_WG_SS_IMM(G, TL_WG_SHAPE16(N, T), 1, 1);                          \
      else if constexpr (SCALE_D) TL_WG_SS_IMM(G, TL_WG_SHAPE16(N, T), 1, 0);                                \
      else if constexpr (TRANS_B) TL_WG_SS_IMM(G, TL_WG_SHAPE16(N, T), 0, 1);                                \
      else TL_WG_SS_IMM(G, TL_WG_SHAPE16(N, T), 0, 0);                                                       \
    }                                                                                                        \
  };                                                                                                         \
  template <int TRANS_B>                                                                                     \
  struct WgmmaSSTransA<N, BF16, TRANS_B> {                                                                   \
    static_assert(TRANS_B == 0 || TRANS_B == 1, "imm-trans-b is 0 or 1");                                   \
    static TL_DEVICE_INLINE void run(float* d, unsigned long long da, unsigned long long db, int scale_d) {  \
      if constexpr (TRANS_B) TL_WG_SST_REG(G, TL_WG_SHAPE16(N, T), 1);                                       \
      else TL_WG_SST_REG(G, TL_WG_SHAPE16(N, T), 0);                                                         \
    }                                                                                                        \
  };                                                                                                         \
  template <int TRANS_B>                                                                                     \
  struct WgmmaRS<N, BF16, TRANS_B> {                                                                         \
    static_assert(TRANS_B == 0 || TRANS_B == 1, "imm-trans-b is 0 or 1");                                   \
    static TL_DEVICE_INLINE void run(float* d, const unsigned* a, unsigned long long db, int scale_d) {      \
      if constexpr (TRANS_B) TL_WG_RS_REG(G, TL_WG_SHAPE16(N, T), 1);                                        \
      else TL_WG_RS_REG(G, TL_WG_SHAPE16(N, T), 0);                                                          \
    }                                                                                                        \
  };

#define TL_WG_DEFINE16_BOTH(N, G) TL_WG_DEFINE16(N, G, true, "bf16") TL_WG_DEFINE16(N, G, false, "f16")

// The N the kernels use (G = N / 16 groups of eight accumulator registers; 152: 9h, nine and a half), bf16 and f16.
TL_WG_DEFINE16_BOTH(16, 1)
TL_WG_DEFINE16_BOTH(32, 2)
TL_WG_DEFINE16_BOTH(64, 4)
TL_WG_DEFINE16_BOTH(80, 5)
TL_WG_DEFINE16_BOTH(96, 6)
TL_WG_DEFINE16_BOTH(112, 7)
TL_WG_DEFINE16_BOTH(128, 8)
TL_WG_DEFINE16_BOTH(152, 9h)
TL_WG_DEFINE16_BOTH(176, 11)
TL_WG_DEFINE16_BOTH(192, 12)
TL_WG_DEFINE16_BOTH(256, 16)
#undef TL_WG_DEFINE16_BOTH
#undef TL_WG_DEFINE16

#define TL_WG_SS8_IMM(G, N, S) \
  asm volatile(TL_WG_SS8_TEXT(G, "m64n" #N "k32.f32.e4m3.e4m3", #S) : TL_WG_DOUTS(G) : "l"(da), "l"(db))
#define TL_WG_RS8_IMM(G, N, S)                                                                          \
  asm volatile(TL_WG_RS8_TEXT(G, "m64n" #N "k32.f32.e4m3.e4m3", #S)                                    \
               : TL_WG_DOUTS(G)                                                                         \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db))
#define TL_WG_DEFINE_E4M3(N, G)                                                                                \
  template <>                                                                                                  \
  struct WgmmaSSE4M3<N> {                                                                                      \
    template <int SCALE_D = 1>                                                                                 \
    static TL_DEVICE_INLINE void run(float* d, unsigned long long da, unsigned long long db) {                 \
      static_assert(SCALE_D == 0 || SCALE_D == 1, "scale_d is 0 (overwrite) or 1 (accumulate)");               \
      if constexpr (SCALE_D) TL_WG_SS8_IMM(G, N, 1);                                                           \
      else TL_WG_SS8_IMM(G, N, 0);                                                                             \
    }                                                                                                          \
  };                                                                                                           \
  template <>                                                                                                  \
  struct WgmmaRSE4M3<N> {                                                                                      \
    template <int SCALE_D = 1>                                                                                 \
    static TL_DEVICE_INLINE void run(float* d, const unsigned* a, unsigned long long db) {                     \
      static_assert(SCALE_D == 0 || SCALE_D == 1, "scale_d is 0 (overwrite) or 1 (accumulate)");               \
      if constexpr (SCALE_D) TL_WG_RS8_IMM(G, N, 1);                                                           \
      else TL_WG_RS8_IMM(G, N, 0);                                                                             \
    }                                                                                                          \
  };

// e4m3: the N of gemm.fp8's wgmma chains (G = N / 16 groups of eight accumulator registers; 112: the 64 x 112 tiles
// of small M, cuBLASLt's there); 256 is also the ceiling kernel's.
TL_WG_DEFINE_E4M3(64, 4)
TL_WG_DEFINE_E4M3(112, 7)
TL_WG_DEFINE_E4M3(128, 8)
TL_WG_DEFINE_E4M3(192, 12)
TL_WG_DEFINE_E4M3(256, 16)
#undef TL_WG_DEFINE_E4M3

}  // namespace tl::wgmma_ops
