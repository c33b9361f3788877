// gemm.dequant against the formats and the hardware's rules: the bit-trick conversions give the int4 and e2m1 values
// for every byte, the bytes a thread picks are its wgmma A fragment's, the tiles are what TMA writes, refusals say what
// to fix, a name per config, and a float64 reference that a wrong scale group or nibble order cannot pass.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "gemm/gemm_dequant_gemv_plan.hpp"
#include "gemm/gemm_dequant_plan.hpp"
#include "library/library.hpp"
#include "runtime/core/numeric.hpp"
#include "tests/kernels/gemm_plan_checks.hpp"
#include "tile/banks.hpp"
#include "tile/layout_spec.hpp"

namespace tl {
namespace {

using KV = std::map<std::string, std::string>;

const KernelSpec& spec() { return *library_registry().find("gemm.dequant").value(); }

KernelInstance instance(const KV& problem, const KV& config) {
  auto k = instantiate(spec(), problem, config, limits_for_arch("sm_90a"));
  EXPECT_TRUE(k.ok()) << k.status().message();
  return *k;
}

float bf16_lo(unsigned v) { return num::bf16_to_float(static_cast<std::uint16_t>(v & 0xFFFF)); }
float bf16_hi(unsigned v) { return num::bf16_to_float(static_cast<std::uint16_t>(v >> 16)); }

// [SECTION] the formats and the conversions

TEST(Dequant4, ValueSetsAreTheFormats) {
  std::set<float> fp4, int4;
  for (std::uint8_t c = 0; c < 16; ++c) {
    fp4.insert(num::fp4_e2m1_value(c));
    int4.insert(static_cast<float>(num::int4_value(c)));
  }
  // OCP MX e2m1: +-{0, 0.5, 1, 1.5, 2, 3, 4, 6} (+0 and -0 compare equal: 15 distinct values).
  EXPECT_EQ(fp4, (std::set<float>{-6, -4, -3, -2, -1.5, -1, -0.5, 0, 0.5, 1, 1.5, 2, 3, 4, 6}));
  EXPECT_EQ(num::fp4_e2m1_value(0x1), 0.5f);  // the subnormal
  EXPECT_EQ(num::fp4_e2m1_value(0x7), 6.0f);  // no NaN or infinity
  EXPECT_EQ(num::fp4_e2m1_value(0xF), -6.0f);
  EXPECT_EQ(int4.size(), 16u);
  EXPECT_EQ(*int4.begin(), -8.0f);
  EXPECT_EQ(*int4.rbegin(), 7.0f);
  EXPECT_EQ(num::int4_value(0x8), -8);
  EXPECT_EQ(num::int4_value(0xF), -1);
}

// Every byte at every position of a word among other bytes: the byte permute picks it, and the conversion gives the
// low nibble's value in the low half and the high nibble's in the high half, exactly.
TEST(Dequant4, ConversionsGiveEveryCodesValue) {
  for (int q = 0; q < 4; ++q)
    for (unsigned b = 0; b < 256; ++b) {
      const unsigned other = 0x9C3E57A1u;  // neighbours with every nibble pattern nearby
      const unsigned word = (other & ~(0xFFu << (8 * q))) | (b << (8 * q));
      const unsigned s = dequant4::spread(word, dequant4::spread_selector(q));
      const unsigned i4 = dequant4::codes_to_bf16x2<dequant4::kInt4>(s);
      const unsigned f4 = dequant4::codes_to_bf16x2<dequant4::kFp4>(s);
      SCOPED_TRACE("byte " + std::to_string(b) + " at " + std::to_string(q));
      EXPECT_EQ(bf16_lo(i4), static_cast<float>(num::int4_value(b & 0xF)));
      EXPECT_EQ(bf16_hi(i4), static_cast<float>(num::int4_value(b >> 4)));
      EXPECT_EQ(bf16_lo(f4), num::fp4_e2m1_value(b & 0xF));
      EXPECT_EQ(bf16_hi(f4), num::fp4_e2m1_value(b >> 4));
      // Signs too: -0 stays -0 (bf16 bits, not only values).
      EXPECT_EQ(f4 & 0x80008000u, ((b & 8u) << 12) | ((b & 0x80u) << 24));
    }
}

// The wgmma path's fp4 pairs (spread_up, fp4_bits) are value * 2^-126 with the value's sign, for every byte at every
// position; with a bf16 scale folded in (fp4_fold_scale) the pair is bf16(value * scale) * 2^-kFp4ScaleShift exactly
// over the scales the fold promises, and a scale past them is not (the bound is real).
TEST(Dequant4, Fp4WithTheScaleFoldedIsTheScaledValue) {
  const float down = std::ldexp(1.0f, -dequant4::kFp4ScaleShift);
  const auto pair = [](float s) {
    const unsigned b = num::float_to_bf16(s);
    return b | (b << 16);
  };
  // Scales at the fold's two ends, around 1, and bf16 values with every mantissa bit.
  const std::vector<float> scales = {std::ldexp(1.0f, -93), std::ldexp(1.5f, -60), 0.0123f, 1.0f, -0.37f, 3.1416f,
                                     std::ldexp(1.9921875f, 33), -std::ldexp(1.0f, 33)};
  for (int q = 0; q < 4; ++q)
    for (unsigned b = 0; b < 256; ++b) {
      const unsigned word = (0x9C3E57A1u & ~(0xFFu << (8 * q))) | (b << (8 * q));
      const unsigned bits = dequant4::fp4_bits(dequant4::spread_up(word, dequant4::spread_selector(q)));
      SCOPED_TRACE("byte " + std::to_string(b) + " at " + std::to_string(q));
      EXPECT_EQ(bf16_lo(bits), num::fp4_e2m1_value(b & 0xF) * std::ldexp(1.0f, -126));
      EXPECT_EQ(bf16_hi(bits), num::fp4_e2m1_value(b >> 4) * std::ldexp(1.0f, -126));
      EXPECT_EQ(bits & 0x80008000u, ((b & 8u) << 12) | ((b & 0x80u) << 24));
      for (float s : scales) {
        const unsigned want = dequant4::mul_bf16x2(dequant4::codes_to_bf16x2<dequant4::kFp4>(
                                                       dequant4::spread(word, dequant4::spread_selector(q))),
                                                   pair(s));
        const unsigned got = dequant4::mul_bf16x2(bits, dequant4::fp4_fold_scale(pair(s)));
        EXPECT_EQ(bf16_lo(got), bf16_lo(want) * down) << "scale " << s;
        EXPECT_EQ(bf16_hi(got), bf16_hi(want) * down) << "scale " << s;
      }
    }
  // Past the bound the folded scale overflows.
  EXPECT_TRUE(std::isinf(bf16_lo(dequant4::fp4_fold_scale(pair(std::ldexp(1.0f, 34))))));
}

// byte_perm's host copy is prmt: result byte i is byte sel_i of {x, y}.
TEST(Dequant4, BytePermIsPrmt) {
  EXPECT_EQ(dequant4::byte_perm(0x33221100u, 0x77665544u, 0x7531u), 0x77553311u);
  EXPECT_EQ(dequant4::byte_perm(0x33221100u, 0x77665544u, 0x0246u), 0x00224466u);
}

// [SECTION] the plan

// The kernel reads, for register j of k16 step st, byte (e0.col / 2) % 4 of word 2 st + FT.at[2 j].col / 8 of row
// e0.row + FT.at[2 j].row, low nibble then high nibble. That must be the fragment's own (row, k) and (row, k + 1).
TEST(GemmDequantPlan, ThreadsPickTheirFragmentsBytes) {
  const GemmDequantPlan p = make_plan(GemmDequantConfig{});
  for (int t = 0; t < 128; ++t) {
    const TileCoord e0 = p.frag_W(t, 0);
    const int q = (e0.col / 2) % 4;
    for (int st = 0; st < 4; ++st)
      for (int j = 0; j < 4; ++j) {
        const TileCoord off = p.frag_W(0, 2 * j);
        const int row = e0.row + off.row, byte = 4 * (2 * st + off.col / 8) + q;
        for (int e = 0; e < 2; ++e) {
          const TileCoord want = p.frag_W(t, 2 * j + e);
          EXPECT_EQ(row, want.row) << "thread " << t << " register " << j;
          EXPECT_EQ(2 * byte + e, 16 * st + want.col) << "thread " << t << " register " << j << " half " << e;
        }
      }
  }
}

// The activation box is what TMA's SWIZZLE_128B writes and the weights what an unswizzled box writes (row-major
// bytes); the regions are disjoint, the swizzled ones 1024-byte aligned; the descriptor's stride is one 8-row atom.
// A stage's scales hold a word per row and group the stage meets, and a row's words start aligned to their total
// (the consumer reads them with one 4-, 8- or 16-byte shared load).
TEST(GemmDequantPlan, TilesAndRegionsAreWhatTmaWrites) {
  for (int bn : {64, 128})
    for (int bm : {16, 32, 64, 128, 256})
      for (int bk : {64, 128, 256})
        for (int group : {32, 64, 128}) {
          const GemmDequantConfig c{.block_N = bn, .block_M = bm, .block_K = bk, .num_stages = 3, .group = group};
          SCOPED_TRACE(name_expression(c));
          const GemmDequantPlan p = make_plan(c);
          ASSERT_TRUE(p.smem_A.ok() && p.smem_W.ok());
          for (int r = 0; r < bm; ++r)
            for (int k = 0; k < 64; ++k) ASSERT_EQ(2 * p.smem_A(r, k), test::tma_sw128(r * 128 + 2 * k));
          for (int r = 0; r < bn; ++r)
            for (int b = 0; b < bk / 2; ++b) ASSERT_EQ(p.smem_W(r, b), r * (bk / 2) + b);
          EXPECT_EQ(p.a_sbo, 1024);
          EXPECT_EQ(p.a_box_bytes, bm * 128);
          EXPECT_EQ(p.w_stage_bytes, bn * bk / 2);
          std::vector<test::Region> swizzled, others;
          for (int s = 0; s < 3; ++s) {
            for (int ch = 0; ch < c.chunks(); ++ch) {
              const int at = p.a_offset + s * p.a_stage_bytes + ch * p.a_box_bytes;
              swizzled.push_back({at, at + p.a_box_bytes});
            }
            const int w = p.w_offset + s * p.w_stage_bytes;
            others.push_back({w, w + p.w_stage_bytes});
            const int sc = p.s_offset + s * p.s_stage_bytes;
            others.push_back({sc, sc + p.s_stage_bytes});
            const int row_bytes = 4 * ((bk + group - 1) / group);
            EXPECT_EQ(p.s_row_bytes, row_bytes);
            EXPECT_EQ(p.s_stage_bytes, bn * row_bytes);
            if (row_bytes <= 16) {
              EXPECT_EQ(sc % row_bytes, 0);
            }
            others.push_back({p.full_bar_offset + 8 * s, p.full_bar_offset + 8 * s + 8});
            others.push_back({p.empty_bar_offset + 8 * s, p.empty_bar_offset + 8 * s + 8});
          }
          // Barriers are 8-byte aligned.
          EXPECT_EQ(p.full_bar_offset % 8, 0);
          // Without staged scales (the register ring) no shared memory goes to them.
          GemmDequantConfig ring = c;
          ring.smem_scales = false;
          EXPECT_EQ(make_plan(ring).s_stage_bytes, 0);
          EXPECT_EQ(make_plan(ring).bytes, p.bytes - 3 * p.s_stage_bytes);
          test::expect_disjoint_regions(swizzled, others, p.align, p.bytes);
          EXPECT_EQ(p.box_A.inner, 64);
          EXPECT_EQ(p.box_A.outer, bm);
          EXPECT_EQ(p.box_W.inner, bk / 2);
          EXPECT_EQ(p.box_W.outer, bn);
        }
}

// [SECTION] the gemv plan

// The k permutation covers a step's 128 codes once (8 mmas of 16 logical columns), each lane's pairs its 32 codes, and
// gemv_slot inverts the pair order.
// With nibble_pairs (stage_copy=async) a pair's codes are consecutive and the activations' slots are their codes.
// Each quarter warp's 8 lanes read their mma.sync A pieces (every n tile and 16-byte piece) from 8 distinct 16-byte
// bank groups: no bank conflicts.
void expect_fragment_reads_conflict_free(const GemmDequantGemvPlan& p, int nt) {
  for (int n = 0; n < nt; ++n)
    for (int q = 0; q < 4; ++q)
      for (int quarter = 0; quarter < 4; ++quarter) {
        std::set<int> groups;
        for (int lane = 8 * quarter; lane < 8 * quarter + 8; ++lane) {
          const TileCoord a0 = p.mma_A(lane, 0);
          groups.insert((2 * p.smem_act(8 * n + a0.row, kGemvLaneCodes * (a0.col / 2) + 8 * q) / 16) % 8);
        }
        EXPECT_EQ(groups.size(), 8u) << "n tile " << n << " piece " << q << " quarter " << quarter;
      }
}

TEST(GemmDequantGemvPlan, KPermutationIsABijectionOfTheStep) {
  for (bool np : {false, true}) {
    std::set<int> codes, lane_codes;
    for (int j = 0; j < 8; ++j)
      for (int col = 0; col < 16; ++col) codes.insert(gemv_code(j, col, np));
    EXPECT_EQ(codes.size(), 128u);
    EXPECT_EQ(*codes.begin(), 0);
    EXPECT_EQ(*codes.rbegin(), kGemvStepK - 1);
    for (int pair = 0; pair < 16; ++pair)
      for (int e = 0; e < 2; ++e) {
        lane_codes.insert(gemv_pair_code(pair, e, np));
        EXPECT_EQ(gemv_slot(gemv_pair_code(pair, e, np), np), 2 * pair + e);
        if (np) {
          EXPECT_EQ(gemv_pair_code(pair, e, np), 2 * pair + e);
        }
      }
    EXPECT_EQ(lane_codes.size(), 32u);
    EXPECT_EQ(*lane_codes.rbegin(), kGemvLaneCodes - 1);
  }
}

// nibble_pairs: a word stored in nibble-pair order (gemv_nibble_code), shifted right by 4p, has codes 2p and 2p + 1
// where the conversion takes a pair's halves.
TEST(GemmDequantGemvPlan, NibblePairWordsShiftToConsecutiveCodes) {
  const unsigned codes[8] = {0x1, 0x5, 0xE, 0x9, 0xA, 0x3, 0xC, 0x7};  // code c of the word (logical order)
  unsigned word = 0;
  for (int n = 0; n < 8; ++n) word |= codes[gemv_nibble_code(n)] << (4 * n);
  std::set<int> seen;
  for (int n = 0; n < 8; ++n) seen.insert(gemv_nibble_code(n));
  EXPECT_EQ(seen.size(), 8u);
  for (int pair = 0; pair < 16; ++pair) {
    const unsigned v = dequant4::codes_to_bf16x2<dequant4::kInt4>(word >> (4 * (pair % 4)));
    for (int e = 0; e < 2; ++e) {
      const int c = gemv_pair_code(pair, e, true) % 8;
      const float want = static_cast<float>(num::int4_value(static_cast<std::uint8_t>(codes[c])));
      EXPECT_EQ(e ? bf16_hi(v) : bf16_lo(v), want) << "pair " << pair << " half " << e;
    }
  }
}

// A word's codes shifted right by 4p: dequant4's conversion takes nibble p (low half) and p + 4 (high half), the
// codes gemv_pair_code says, for every word position; and the staging's pair order puts code c at element gemv_slot(c).
TEST(GemmDequantGemvPlan, ShiftedWordsAndStagedActivationsAreInPairOrder) {
  const unsigned word = 0x7C3A9E51u;  // eight different codes
  for (int pair = 0; pair < 16; ++pair) {
    const int p = pair % 4, base = 8 * (pair / 4);
    const unsigned v = dequant4::codes_to_bf16x2<dequant4::kInt4>(word >> (4 * p));
    for (int e = 0; e < 2; ++e) {
      const int nibble = gemv_pair_code(pair, e) - base;
      const float want = static_cast<float>(num::int4_value(static_cast<std::uint8_t>((word >> (4 * nibble)) & 0xF)));
      EXPECT_EQ(e ? bf16_hi(v) : bf16_lo(v), want) << "pair " << pair << " half " << e;
    }
  }
  const unsigned in[4] = {0x00010000u, 0x00030002u, 0x00050004u, 0x00070006u};  // element k holds k
  unsigned out[4];
  gemv_pair_order(in, out);
  for (int c = 0; c < 8; ++c) {
    const int slot = gemv_slot(c);
    EXPECT_EQ((out[slot / 2] >> (16 * (slot % 2))) & 0xFFFF, static_cast<unsigned>(c)) << "code " << c;
  }
}

// What the kernel picks, checked against mma.sync's fragments from the PTX ISA (the atoms): lane (g, t) = A's
// (row, col / 2) of value 0. For mma j, A register i (values 2i, 2i+1) is pair 2j + FA[2i].col / 8 of the lane's 32
// codes (k 32t ..) of row g + FA[2i].row; B register i is activation elements 2 (2j + FB[2i].row / 8) (+1) of the
// lane's 32 of activation row g, which hold codes gemv_pair_code of that pair; accumulator v is (weight row
// g + FC[v].row, activation row 2t + FC[v].col). Each must be the fragment's own element under the permutation, for
// the weights and the activations alike (else the k's would not meet).
TEST(GemmDequantGemvPlan, LanesFeedTheirOwnBytesToMmaSync) {
  const GemmDequantGemvPlan p = make_plan(GemmDequantGemvConfig{});
  for (bool np : {false, true})
  for (int lane = 0; lane < 32; ++lane) {
    const TileCoord a0 = p.mma_A(lane, 0);
    const int g = a0.row, t = a0.col / 2;
    for (int j = 0; j < 8; ++j)
      for (int v = 0; v < 8; ++v) {
        const TileCoord want = p.mma_A(lane, v), off = p.mma_A(0, 2 * (v / 2));
        const int pair = 2 * j + off.col / 8;
        EXPECT_EQ(want.row, g + off.row) << "lane " << lane << " A value " << v;
        EXPECT_EQ(kGemvLaneCodes * t + gemv_pair_code(pair, v % 2, np), gemv_code(j, want.col, np))
            << "lane " << lane << " A " << v;
      }
    for (int j = 0; j < 8; ++j)
      for (int v = 0; v < 4; ++v) {
        const TileCoord want = p.mma_B(lane, v), off = p.mma_B(0, 2 * (v / 2));
        const int slot = gemv_slot(gemv_code(j, off.row, np), np) + v % 2;
        EXPECT_EQ(slot % 2, v % 2) << "a B register is one aligned word";
        EXPECT_EQ(slot / 8, j / 2) << "mmas 2q and 2q+1 read the lane's 16-byte piece q";
        EXPECT_EQ(want.col, g) << "lane " << lane << " B value " << v;
        EXPECT_EQ(kGemvLaneCodes * t + gemv_pair_code(slot / 2, slot % 2, np), gemv_code(j, want.row, np))
            << "lane " << lane << " B value " << v;
      }
    for (int v = 0; v < 4; ++v) EXPECT_TRUE(p.mma_C(lane, v) == (TileCoord{g, 2 * t} + p.mma_C(0, v))) << lane;
  }
}

// The activations' layout: a bijection of one step onto [0, step_elems); each lane's 32 codes are 64 contiguous bytes
// (16-byte pieces: the staging's 8 consecutive k stay together), and the four 16-byte reads of every quarter warp hit
// 8 distinct 16-byte bank groups (no conflict).
TEST(GemmDequantGemvPlan, ActivationsReadWithoutBankConflicts) {
  for (int nt : {1, 2}) {
    const GemmDequantGemvPlan p = make_plan(GemmDequantGemvConfig{.n_tiles = nt});
    ASSERT_TRUE(p.smem_act.ok());
    EXPECT_EQ(p.step_elems, 8 * nt * kGemvStepK);
    EXPECT_EQ(p.step_bytes, 2 * p.step_elems);
    std::set<int> offsets;
    for (int m = 0; m < 8 * nt; ++m)
      for (int k = 0; k < kGemvStepK; ++k) offsets.insert(p.smem_act(m, k));
    EXPECT_EQ(offsets.size(), static_cast<size_t>(p.step_elems));
    EXPECT_EQ(*offsets.rbegin(), p.step_elems - 1);
    for (int m = 0; m < 8 * nt; ++m)
      for (int k = 0; k < kGemvStepK; k += 8) {
        const int base = p.smem_act(m, k);
        EXPECT_EQ(base % 8, 0);
        for (int e = 1; e < 8; ++e) ASSERT_EQ(p.smem_act(m, k + e), base + e);
      }
    expect_fragment_reads_conflict_free(p, nt);
    // The kernel addresses a lane's pieces as its base plus a constant per (n tile, piece): the offsets add.
    for (int g = 0; g < 8; ++g)
      for (int t = 0; t < 4; ++t)
        for (int n = 0; n < nt; ++n)
          for (int q = 0; q < 4; ++q)
            ASSERT_EQ(p.smem_act(8 * n + g, kGemvLaneCodes * t + 8 * q),
                      p.smem_act(g, kGemvLaneCodes * t) + p.smem_act(8 * n, 8 * q));
    // The staging's quarter warps (chunk k 32 (i % 4) + 8 ((i / 8) % 4) of row 2 (i / 32) + (i / 4) % 2) store to
    // 8 distinct bank groups too.
    for (int i0 = 0; i0 < 8 * nt * kGemvStepK / 8; i0 += 8) {
      std::set<int> groups;
      for (int i = i0; i < i0 + 8; ++i) {
        const int m = 2 * (i / 32) + (i / 4) % 2, k = kGemvLaneCodes * (i % 4) + 8 * ((i / 8) % 4);
        groups.insert((2 * p.smem_act(m, k) / 16) % 8);
      }
      EXPECT_EQ(groups.size(), 8u) << "staging chunks " << i0;
    }
    // group_sum's sums follow the activations, 16-byte aligned (the next step's 16-byte pieces).
    const GemmDequantGemvPlan ps = make_plan(GemmDequantGemvConfig{.n_tiles = nt, .group_sum = true});
    EXPECT_EQ(ps.sums, 2 * ps.step_elems);
    EXPECT_EQ(ps.step_bytes, ps.sums + 4 * 8 * nt);
    EXPECT_EQ(ps.step_bytes % 16, 0);
  }
}

// The permuted layout: a bijection of the padded matrix (whole 16-row blocks, whole steps) onto its bytes; each warp
// load (row block, half h, step) is the 32 lanes' 16-byte pieces of one contiguous, 512-aligned run, lane l at 16 l
// (the lane of mma.sync's A fragment that holds the rows and k), and a row block's next step 1 KiB further on.
// stage_copy=tma's step tile: what a 64-byte-swizzled TMA box of 32 k x 4 quarters x the rows writes (row m, quarter
// j at 64-byte row 4m + j, its 16-byte chunk c at c xor (row / 2 % 4)), a bijection onto the step, read without bank
// conflicts, and each lane's pieces at its base xor a constant per piece plus a constant per n tile (the kernel's
// addressing); the activations then start on a 1024-byte boundary with a barrier a step after them.
TEST(GemmDequantGemvPlan, TmaStepTileIsTheSwizzledBox) {
  for (int nt : {1, 2}) {
    const GemmDequantGemvPlan p = make_plan(GemmDequantGemvConfig{.n_tiles = nt, .stage_async = true, .stage_tma = true});
    EXPECT_EQ(p.step_bytes, 2048 * nt);
    EXPECT_EQ(p.align, 1024);
    EXPECT_EQ(p.bytes(3), 1024 + 3 * (2048 * nt + 8));
    std::set<int> offsets;
    for (int m = 0; m < 8 * nt; ++m)
      for (int k = 0; k < kGemvStepK; ++k) {
        const int row = 4 * m + k / 32, chunk = (k % 32) / 8;
        ASSERT_EQ(2 * p.smem_act(m, k), 64 * row + 16 * (chunk ^ (row / 2 % 4)) + 2 * (k % 8)) << m << " " << k;
        offsets.insert(p.smem_act(m, k));
      }
    EXPECT_EQ(offsets.size(), static_cast<size_t>(p.step_elems));
    EXPECT_EQ(*offsets.rbegin(), p.step_elems - 1);
    expect_fragment_reads_conflict_free(p, nt);
    for (int n = 0; n < nt; ++n)
      for (int q = 0; q < 4; ++q) {
        for (int g = 0; g < 8; ++g)
          for (int t = 0; t < 4; ++t)
            ASSERT_EQ(p.smem_act(8 * n + g, kGemvLaneCodes * t + 8 * q),
                      (p.smem_act(g, kGemvLaneCodes * t) ^ p.smem_act(0, 8 * q)) + p.smem_act(8 * n, 0));
      }
  }
}

// scale_smem: the scales' area starts at a 16-byte boundary (the chunks' cp.async needs 16) past the activations and,
// with stage_tma, the 8-byte barriers, for every step count; without scales the plan's bytes are what they were.
TEST(GemmDequantGemvPlan, ScaleAreaIs16ByteAlignedPastTheBarriers) {
  for (bool tma : {false, true})
    for (int nt : {1, 2})
      for (int tiles : {0, 1, 2})
        for (bool f32 : {false, true}) {
          const GemmDequantGemvPlan p = make_plan(GemmDequantGemvConfig{
              .n_tiles = nt, .scale_smem = tiles, .stage_async = tma, .stage_tma = tma, .scale_f32 = f32});
          for (int steps = 1; steps <= 32; ++steps) {
            const int past = steps * (p.step_bytes + p.bar_bytes);  // the activations' (and barriers') end
            const std::string at = std::to_string(tma) + " " + std::to_string(nt) + " " + std::to_string(tiles) + " " +
                                   std::to_string(f32) + " " + std::to_string(steps);
            if (tiles == 0) {
              EXPECT_EQ(p.scales(steps), past) << at;
              EXPECT_EQ(p.bytes(steps), p.align + past) << at;
              continue;
            }
            EXPECT_EQ((p.align + p.scales(steps)) % 16, 0) << at;
            EXPECT_GE(p.scales(steps), past) << at;
            EXPECT_LT(p.scales(steps), past + 16) << at;
            EXPECT_EQ(p.scale_rows, 128 * tiles) << at;
            EXPECT_EQ(p.scale_row(steps) % 16, 0) << at;
            EXPECT_EQ(p.bytes(steps), p.align + p.scales(steps) + p.scale_rows * p.scale_row(steps)) << at;
          }
        }
  // 13 steps with tma (8192 x 28672 at M 16): the barriers end 8 bytes past a boundary, the scales 8 bytes on.
  const GemmDequantGemvPlan p = make_plan(
      GemmDequantGemvConfig{.n_tiles = 2, .scale_smem = 1, .stage_async = true, .stage_tma = true});
  EXPECT_EQ(p.scales(13), 13 * (4096 + 8) + 8);
}

TEST(GemmDequantGemvPlan, PermutedWeightsAreOneRunPerWarpLoad) {
  const GemmDequantGemvPlan p = make_plan(GemmDequantGemvConfig{});
  for (int k_steps : {1, 3}) {
    const long long rows = 2 * kGemvTileRows, row_bytes = k_steps * kGemvRowStepBytes;
    std::set<long long> at;
    for (long long n = 0; n < rows; ++n)
      for (long long b = 0; b < row_bytes; ++b) at.insert(gemv_permuted_at(n, b, k_steps));
    EXPECT_EQ(at.size(), static_cast<size_t>(rows * row_bytes));
    EXPECT_EQ(*at.rbegin(), rows * row_bytes - 1);
    for (long long block = 0; block < 2; ++block)
      for (int h = 0; h < 2; ++h)
        for (int step = 0; step < k_steps; ++step) {
          const long long run = gemv_permuted_at(kGemvTileRows * block + 8 * h, step * kGemvRowStepBytes, k_steps);
          EXPECT_EQ(run % 512, 0);
          for (int lane = 0; lane < 32; ++lane) {
            const TileCoord a0 = p.mma_A(lane, 0);
            const long long n = kGemvTileRows * block + 8 * h + a0.row, b = step * kGemvRowStepBytes + (kGemvLaneCodes * (a0.col / 2)) / 2;
            for (int e = 0; e < 16; ++e) EXPECT_EQ(gemv_permuted_at(n, b + e, k_steps), run + 16 * lane + e);
            if (step + 1 < k_steps) {
              EXPECT_EQ(gemv_permuted_at(n, b + kGemvRowStepBytes, k_steps) - gemv_permuted_at(n, b, k_steps), kGemvTileBytes);
            }
          }
        }
  }
}

// group_sum's conversion: one LOP3 of a pair gives bf16(kGemvInt4Bias + code) exactly in both halves, for every code
// beside every other, so the bias taken off once per step (kGemvInt4Bias x the activations' sum) leaves the codes.
TEST(GemmDequantGemvPlan, Int4BiasedPairIsBiasPlusCode) {
  for (unsigned lo = 0; lo < 16; ++lo)
    for (unsigned hi = 0; hi < 16; ++hi) {
      const unsigned other = 0x9C3E57A0u;  // other nibbles set: the mask drops them
      const unsigned v = gemv_int4_biased((other & 0xFFF0FFF0u) | lo | (hi << 16));
      EXPECT_EQ(bf16_lo(v), static_cast<float>(kGemvInt4Bias + num::int4_value(static_cast<std::uint8_t>(lo))));
      EXPECT_EQ(bf16_hi(v), static_cast<float>(kGemvInt4Bias + num::int4_value(static_cast<std::uint8_t>(hi))));
    }
}

// [SECTION] the spec

TEST(GemmDequantSpec, RefusalsNameWhatToFix) {
  auto why = [](const KV& problem, const KV& config) {
    auto k = instantiate(spec(), problem, config, limits_for_arch("sm_90a"));
    return k.ok() ? std::string() : k.status().message();
  };
  EXPECT_NE(why({{"K", "48"}}, {}).find("multiple of 32"), std::string::npos);
  const std::string smem = why({{"M", "4096"}}, {{"block_M", "256"}, {"block_K", "256"}, {"num_stages", "4"}});
  EXPECT_NE(smem.find("lower num_stages"), std::string::npos) << smem;
  EXPECT_NE(why({{"M", "1048576"}}, {{"block_M", "16"}}).find("raise block_M"), std::string::npos);
  const std::string two = why({{"M", "64"}}, {{"block_M", "64"}, {"ctas_per_sm", "2"}, {"num_stages", "8"}});
  EXPECT_NE(two.find("set ctas_per_sm=1"), std::string::npos) << two;
  EXPECT_NE(why({}, {{"path", "wgmma"}, {"k_split", "4"}, {"num_stages", "6"}}).find("two stage slots"), std::string::npos);
  // One slot per lane would deadlock: a lane frees its slot only once its next stage has been loaded into it.
  EXPECT_NE(why({}, {{"path", "wgmma"}, {"k_split", "2"}, {"num_stages", "2"}}).find("at least 4"), std::string::npos);
  EXPECT_NE(why({}, {{"path", "wgmma"}, {"k_split", "4"}, {"block_N", "128"}}).find("over 1024 threads"), std::string::npos);
  EXPECT_NE(why({}, {{"path", "wgmma"}, {"weight_layout", "permuted"}}).find("set path=gemv"), std::string::npos);
  EXPECT_NE(why({{"M", "4"}}, {{"stage_copy", "async"}, {"weight_layout", "plain"}}).find("stage_copy=regs"),
            std::string::npos);
  // group_sum with the async copy: the sums read back from shared memory (no refusal); step_scale needs whole steps.
  EXPECT_TRUE(why({{"M", "4"}}, {{"stage_copy", "async"}, {"group_sum", "true"}}).empty());
  EXPECT_NE(why({{"M", "4"}, {"group", "64"}}, {{"path", "gemv"}, {"step_scale", "on"}}).find("step_scale=off"),
            std::string::npos);
  EXPECT_TRUE(why({{"M", "4"}, {"wtype", "fp4"}}, {{"path", "gemv"}, {"step_scale", "on"}}).empty());
  EXPECT_TRUE(why({{"M", "1"}, {"N", "1"}, {"K", "32"}}, {}).empty());
  // stage_copy=tma: whole 64-k boxes of A, the split schedule.
  EXPECT_NE(why({{"M", "16"}}, {{"path", "gemv"}, {"stage_copy", "tma"}, {"schedule", "stream"}}).find("stage_copy=async"),
            std::string::npos);
  EXPECT_TRUE(why({{"M", "13"}, {"K", "160"}}, {{"path", "gemv"}, {"stage_copy", "tma"}}).empty());
  EXPECT_TRUE(why({{"M", "3"}}, {{"path", "gemv"}, {"stage_copy", "tma"}}).empty());
  EXPECT_NE(why({{"M", "16"}}, {{"path", "gemv"}, {"act_multicast", "2"}}).find("stage_copy=tma"), std::string::npos);
  EXPECT_NE(why({{"M", "16"}, {"N", "200"}}, {{"path", "gemv"}, {"stage_copy", "tma"}, {"act_multicast", "4"}})
                .find("divides"),
            std::string::npos);
  EXPECT_TRUE(why({{"M", "16"}}, {{"path", "gemv"}, {"stage_copy", "tma"}, {"act_multicast", "2"}}).empty());
}

// An option of one path set on a problem that takes the other was dropped without a word: now a refusal naming it,
// the path the problem takes and why, and what to do; each path's options at their unset values (the schema's
// defaults) still pass, and so do the shared ones.
TEST(GemmDequantSpec, OptionsOfTheOtherPathAreRefused) {
  auto why = [](const KV& problem, const KV& config) {
    auto k = instantiate(spec(), problem, config, limits_for_arch("sm_90a"));
    return k.ok() ? std::string() : k.status().message();
  };
  // gemv's options where wgmma runs: M over 16, path=wgmma set, or auto's choice at M 9-16 (8192 x 8192: wgmma).
  const std::string big = why({{"M", "33"}}, {{"splits", "3"}});
  EXPECT_NE(big.find("splits=3 is path=gemv's option"), std::string::npos) << big;
  EXPECT_NE(big.find("M=33 is over gemv's 16"), std::string::npos) << big;
  EXPECT_NE(big.find("leave splits at 0"), std::string::npos) << big;
  EXPECT_EQ(big.find("set path=gemv"), std::string::npos) << big;
  const std::string set = why({{"M", "4"}}, {{"path", "wgmma"}, {"warp_rows", "32"}});
  EXPECT_NE(set.find("path=wgmma is set"), std::string::npos) << set;
  EXPECT_NE(set.find("or set path=gemv"), std::string::npos) << set;
  const std::string autow = why({{"M", "16"}, {"N", "8192"}, {"K", "8192"}}, {{"schedule", "stream"}});
  EXPECT_NE(autow.find("path=auto takes wgmma at M=16"), std::string::npos) << autow;
  // wgmma's options where gemv runs.
  const std::string autog = why({{"M", "4"}}, {{"block_M", "32"}});
  EXPECT_NE(autog.find("block_M=32 is path=wgmma's option"), std::string::npos) << autog;
  EXPECT_NE(autog.find("path=auto takes gemv at M=4"), std::string::npos) << autog;
  EXPECT_NE(autog.find("or set path=wgmma"), std::string::npos) << autog;
  EXPECT_NE(why({{"M", "4"}}, {{"path", "gemv"}, {"scale_feed", "regs"}}).find("scale_feed=regs"), std::string::npos);
  EXPECT_NE(why({{"M", "8"}}, {{"block_K", "64"}}).find("block_K=64"), std::string::npos);
  // Every option of each list is refused on the other path, and its unset value is the schema's default.
  for (const char* path : {"gemv", "wgmma"}) {
    const bool gemv = std::string(path) == "gemv";
    for (const ParamSpec& ps : spec().config.params) {
      const std::string& k = ps.name;
      static const std::set<std::string> gemv_only = {
          "splits", "tile_rounds", "sums_once", "warp_rows", "prefetch", "l2_prefetch", "schedule", "int4_lop3",
          "fp4_fold", "group_sum", "step_scale", "scale_copy", "reduce", "stage_rounds", "stage_copy", "act_multicast",
          "act_first", "batch", "step_loop", "step_unroll"};
      static const std::set<std::string> wgmma_only = {"block_N", "block_M", "block_K", "num_stages", "scale_feed",
                                                        "k_split"};
      // A new option must say whose it is: one path's (add it to its list in gemm_dequant.cpp and here) or both's.
      static const std::set<std::string> shared = {"path", "ctas_per_sm", "weight_layout"};
      EXPECT_TRUE(gemv_only.count(k) + wgmma_only.count(k) + shared.count(k) == 1) << k << ": whose option is it?";
      const bool other = gemv ? wgmma_only.count(k) > 0 : gemv_only.count(k) > 0;
      if (!other) continue;
      EXPECT_TRUE(why({{"M", "4"}}, {{"path", path}, {k, ps.default_value}}).empty()) << path << " " << k;
      std::string v = ps.default_value;
      for (const std::string& choice : ps.choices)
        if (choice != ps.default_value) v = choice;
      if (v == ps.default_value) v = ps.type == ParamType::bool_ ? (v == "true" ? "false" : "true") : std::to_string(ps.max);
      const std::string m = why({{"M", "4"}}, {{"path", path}, {k, v}});
      EXPECT_NE(m.find(k + "=" + v + " is path=" + (gemv ? "wgmma" : "gemv") + "'s option"), std::string::npos)
          << path << " " << k << "=" << v << ": " << m;
    }
  }
  // The shared options (weight_layout=plain, ctas_per_sm 1-2) stay valid on both paths.
  EXPECT_TRUE(why({{"M", "4"}}, {{"path", "gemv"}, {"weight_layout", "plain"}, {"ctas_per_sm", "2"}}).empty());
  EXPECT_TRUE(why({{"M", "64"}}, {{"weight_layout", "plain"}, {"ctas_per_sm", "1"}}).empty());
}

// A gemv option set where the rest of the problem and config leave the kernel no use for it was dropped without a word:
// refused naming it and what it resolved to; auto, its default or off value, and each where it applies, pass.
TEST(GemmDequantSpec, GemvOptionsThatCannotApplyAreRefusedNamingThem) {
  const auto why = [](const KV& p, const KV& c) {
    KV cc = c;
    cc["path"] = "gemv";
    auto r = instantiate(spec(), p, cc, limits_for_arch("sm_90a"));
    return r.ok() ? std::string() : r.status().message();
  };
  const KV wide = {{"M", "16"}, {"N", "28672"}, {"K", "8192"}}, deep = {{"M", "16"}, {"N", "8192"}, {"K", "28672"}};
  const KV fp4 = {{"M", "16"}, {"N", "4096"}, {"K", "4096"}, {"wtype", "fp4"}};
  const KV fp4_f32 = {{"M", "16"}, {"N", "4096"}, {"K", "4096"}, {"wtype", "fp4"}, {"scale_dtype", "f32"}};
  const KV int4 = {{"M", "16"}, {"N", "4096"}, {"K", "4096"}};
  struct Case {
    KV p, c;
    std::string names;
    std::vector<std::string> says;
  };
  const std::vector<Case> refused = {
      {deep, {{"sums_once", "on"}}, "sums_once=on", {"tile_rounds=auto takes 1 at M=16", "tile_rounds=2"}},
      {wide, {{"sums_once", "on"}, {"tile_rounds", "1"}}, "sums_once=on", {"(tile_rounds=1)"}},
      {wide, {{"sums_once", "on"}, {"schedule", "stream"}}, "sums_once=on", {"schedule=stream", "auto or off"}},
      {wide, {{"sums_once", "on"}, {"reduce", "cluster"}, {"splits", "2"}}, "sums_once=on", {"reduce=cluster"}},
      {int4, {{"stage_rounds", "4"}}, "stage_rounds=4", {"stage_copy=auto takes async at M=16", "stage_copy=regs"}},
      {deep, {{"stage_rounds", "2"}, {"stage_copy", "tma"}}, "stage_rounds=2", {"by TMA (stage_copy=tma)"}},
      {fp4, {{"int4_lop3", "on"}}, "int4_lop3=on", {"fp4 weights", "auto or off"}},
      {int4, {{"int4_lop3", "on"}, {"group_sum", "true"}}, "int4_lop3=on", {"group_sum=true", "set group_sum=false"}},
      {int4, {{"fp4_fold", "false"}}, "fp4_fold=false", {"int4 weights", "leave fp4_fold at true"}},
      {fp4_f32, {{"fp4_fold", "false"}}, "fp4_fold=false", {"f32 scales"}},
      {fp4, {{"fp4_fold", "false"}, {"step_scale", "on"}}, "fp4_fold=false", {"step_scale=on"}}};
  for (const Case& k : refused) {
    const std::string m = why(k.p, k.c);
    EXPECT_EQ(m.rfind("gemm.dequant: " + k.names, 0), 0u) << k.names << ": " << m;
    for (const std::string& s : k.says) EXPECT_NE(m.find(s), std::string::npos) << s << ": " << m;
  }
  const std::vector<std::pair<KV, KV>> pass = {
      {wide, {{"sums_once", "on"}}}, {deep, {{"sums_once", "off"}}}, {deep, {{"tile_rounds", "2"}, {"sums_once", "on"}}},
      {int4, {{"stage_rounds", "4"}, {"stage_copy", "regs"}}}, {{{"M", "4"}}, {{"stage_rounds", "4"}}},
      {int4, {{"int4_lop3", "on"}}}, {fp4, {{"int4_lop3", "off"}}}, {int4, {{"group_sum", "true"}, {"int4_lop3", "off"}}},
      {fp4, {{"fp4_fold", "false"}}}, {int4, {{"fp4_fold", "true"}}}, {fp4_f32, {{"fp4_fold", "true"}}}};
  for (const auto& [p, c] : pass) EXPECT_EQ(why(p, c), "");
}

TEST(GemmDequantSpec, EveryFieldReachesTheNameAndTheCacheKey) {
  const KV wg = {{"path", "wgmma"}}, gv = {{"path", "gemv"}};
  auto with = [&](KV c) {
    c.insert(wg.begin(), wg.end());
    return c;
  };
  auto gemv = [&](KV c) {
    c.insert(gv.begin(), gv.end());
    return c;
  };
  test::expect_distinct_names_and_keys(spec(), {{{}, wg},
                                                {{}, with({{"block_N", "128"}})},
                                                {{}, with({{"block_M", "32"}})},
                                                {{}, with({{"block_K", "64"}})},
                                                {{}, with({{"num_stages", "3"}})},
                                                {{}, with({{"k_split", "1"}})},
                                                {{}, with({{"k_split", "1"}, {"ctas_per_sm", "1"}})},
                                                {{}, with({{"k_split", "4"}})},
                                                {{{"wtype", "fp4"}}, wg},
                                                {{{"group", "32"}}, wg},
                                                {{{"scale_dtype", "f32"}}, wg},
                                                // gemv: every field of its config
                                                {{}, gv},
                                                {{{"M", "8"}}, gv},
                                                {{}, gemv({{"warp_rows", "32"}})},
                                                {{}, gemv({{"ctas_per_sm", "3"}})},
                                                {{}, gemv({{"prefetch", "3"}})},
                                                {{}, gemv({{"l2_prefetch", "true"}})},
                                                {{{"M", "8"}}, gemv({{"batch", "off"}})},
                                                {{}, gemv({{"reduce", "cluster"}})},
                                                {{}, gemv({{"stage_rounds", "4"}, {"stage_copy", "regs"}})},
                                                {{}, gemv({{"act_first", "on"}})},
                                                {{}, gemv({{"stage_copy", "tma"}})},
                                                {{}, gemv({{"stage_copy", "tma"}, {"act_multicast", "2"}})},
                                                {{}, gemv({{"weight_layout", "plain"}})},
                                                {{}, gemv({{"tile_rounds", "2"}})},
                                                {{}, gemv({{"step_scale", "on"}})},
                                                {{}, gemv({{"step_scale", "on"}, {"scale_copy", "smem"}})},
                                                {{}, gemv({{"tile_rounds", "2"}, {"sums_once", "off"}})},
                                                {{{"wtype", "fp4"}}, gv},
                                                {{{"group", "64"}}, gv},
                                                {{{"scale_dtype", "f32"}}, gv}});
}

TEST(GemmDequantSpec, LaunchesChecksAndPlotsThePlan) {
  // Prefill: block_N and block_M auto are 128 and 256, num_stages auto the deepest that fits (3 stages of 64 KiB
  // activations + 8 KiB weights; 4 do not).
  const KernelInstance k = instance({{"M", "300"}, {"N", "1000"}, {"K", "4128"}, {"group", "64"}}, {});
  const GemmDequantPlan p = make_plan(GemmDequantConfig{.block_N = 128, .block_M = 256, .num_stages = 3, .group = 64});
  EXPECT_EQ(k.launch.dynamic_smem, static_cast<std::uint32_t>(p.bytes));
  EXPECT_GT(make_plan(GemmDequantConfig{.block_N = 128, .block_M = 256, .num_stages = 4}).bytes,
            limits_for_arch("sm_90a").smem_per_block_optin);
  EXPECT_EQ(k.launch.block.x, 384u);
  EXPECT_EQ(k.launch.grid.x, 8u);  // ceil(1000 / 128)
  EXPECT_EQ(k.launch.grid.y, 2u);  // ceil(300 / 256)
  std::map<std::string, std::vector<std::int64_t>> boxes, shapes;
  std::map<std::string, DType> types;
  for (const ArgSpec& a : k.args) {
    if (a.kind == ArgSpec::Kind::tensor_map) boxes[a.name] = a.box;
    if (a.kind == ArgSpec::Kind::tensor) {
      shapes[a.name] = a.shape;
      types[a.name] = a.dtype;
    }
  }
  EXPECT_EQ(boxes["tma_A"], (std::vector<std::int64_t>{64, 256}));
  EXPECT_EQ(boxes["tma_W"], (std::vector<std::int64_t>{64, 128}));
  EXPECT_EQ(shapes["W"], (std::vector<std::int64_t>{1000, 2064}));
  EXPECT_EQ(types["W"], DType::u8);
  EXPECT_EQ(shapes["scales"], (std::vector<std::int64_t>{1000, 65}));  // ceil(4128 / 64)
  EXPECT_EQ(types["scales"], DType::bf16);
  std::map<std::string, std::string> by_name;
  for (const LayoutInfo& l : k.spec->layouts(k.problem, k.config)) by_name[l.name] = l.spec;
  EXPECT_EQ(by_name["frag_W"], "wgmma.m64k16.bf16.A");
  EXPECT_EQ(by_name["wgmma_C"], "wgmma.m64n256k16.f32.C");
  EXPECT_TRUE(parse_spec(by_name["frag_W"]).fragment.tv() == p.frag_W.tv());
  for (const auto& [name, tile] : std::map<std::string, SwizzledLayout>{{"smem_A", p.smem_A}, {"smem_W", p.smem_W}}) {
    const LayoutSpec s = parse_spec(by_name.at(name));
    EXPECT_TRUE(s.memory.layout() == tile.layout() && s.memory.swizzle() == tile.swizzle()) << name;
  }
  ASSERT_EQ(spec().probes.size(), 9u);
  EXPECT_EQ(spec().probes[GemmDequantProbe::dequant_mma], "dequant_mma");
  EXPECT_EQ(spec().probes[GemmDequantGemvProbe::gemv_stage], "gemv_stage");
  EXPECT_EQ(spec().probes[GemmDequantGemvProbe::gemv_sums], "gemv_sums");
  // Decode: block_M auto is 16, two k lanes, 8 stages; without the split two CTAs per SM; a split that suits a
  // given num_stages.
  const std::string decode = instance({{"M", "3"}}, {{"path", "wgmma"}}).name_expression;
  EXPECT_NE(decode.find(".block_M = 16"), std::string::npos) << decode;
  EXPECT_NE(decode.find(".num_stages = 8, .ctas_per_sm = 1, .k_split = 2"), std::string::npos) << decode;
  const std::string two = instance({{"M", "3"}}, {{"path", "wgmma"}, {"k_split", "1"}}).name_expression;
  EXPECT_NE(two.find(".ctas_per_sm = 2, .k_split = 1"), std::string::npos) << two;
  const std::string shallow = instance({{"M", "3"}}, {{"path", "wgmma"}, {"num_stages", "2"}}).name_expression;
  EXPECT_NE(shallow.find(".num_stages = 2, .ctas_per_sm = 2, .k_split = 1"), std::string::npos) << shallow;
  const std::string odd = instance({{"M", "3"}}, {{"path", "wgmma"}, {"num_stages", "5"}}).name_expression;
  EXPECT_NE(odd.find(".num_stages = 5, .ctas_per_sm = 2, .k_split = 1"), std::string::npos) << odd;
  EXPECT_NE(k.name_expression.find(".ctas_per_sm = 1"), std::string::npos) << k.name_expression;
}

// auto takes gemv where it measured faster (M <= 8; M 9-16 where wgmma's 64-row CTAs fill under 90% of their last
// wave on 132 SMs, and where gemv's one-tile grid takes over two waves); gemv refuses M > 16 and a split whose
// activations do not fit; its launch, split and scratch agree with each other and with the shared memory a CTA may take.
TEST(GemmDequantSpec, GemvPathLaunchesItsSplit) {
  auto name = [](const KV& problem, const KV& config) { return instance(problem, config).name_expression; };
  EXPECT_NE(name({{"M", "4"}}, {}).find("gemm_dequant_gemv"), std::string::npos);
  EXPECT_NE(name({{"M", "8"}, {"K", "28672"}}, {}).find("gemm_dequant_gemv"), std::string::npos);
  EXPECT_EQ(name({{"M", "9"}}, {}).find("gemm_dequant_gemv"), std::string::npos);  // N 8192: 128 CTAs, 97%
  EXPECT_NE(name({{"M", "16"}, {"K", "28672"}}, {}).find("gemm_dequant_gemv"), std::string::npos);  // deep grid
  EXPECT_NE(name({{"M", "12"}, {"K", "28672"}, {"wtype", "fp4"}, {"group", "32"}}, {}).find("gemm_dequant_gemv"),
            std::string::npos);
  EXPECT_NE(name({{"M", "16"}, {"N", "28672"}}, {}).find("gemm_dequant_gemv"), std::string::npos);  // 448: 85%
  EXPECT_NE(name({{"M", "12"}, {"N", "4096"}, {"K", "14336"}}, {}).find("gemm_dequant_gemv"), std::string::npos);
  EXPECT_EQ(name({{"M", "17"}, {"N", "4096"}}, {}).find("gemm_dequant_gemv"), std::string::npos);
  EXPECT_NE(name({{"M", "16"}}, {{"path", "gemv"}}).find(".n_tiles = 2"), std::string::npos);
  EXPECT_NE(name({{"M", "8"}}, {{"path", "gemv"}}).find(".n_tiles = 1"), std::string::npos);
  auto why = [](const KV& problem, const KV& config) {
    auto k = instantiate(spec(), problem, config, limits_for_arch("sm_90a"));
    return k.ok() ? std::string() : k.status().message();
  };
  EXPECT_NE(why({{"M", "17"}}, {{"path", "gemv"}}).find("needs path=wgmma"), std::string::npos);
  const std::string few = why({{"M", "16"}, {"K", "28672"}}, {{"path", "gemv"}, {"splits", "2"}});
  EXPECT_NE(few.find("raise splits to at least"), std::string::npos) << few;
  EXPECT_NE(why({}, {{"ctas_per_sm", "3"}, {"path", "wgmma"}}).find("gemv's"), std::string::npos);
  for (const KV& problem : std::vector<KV>{{{"M", "1"}, {"N", "8192"}, {"K", "8192"}},
                                           {{"M", "16"}, {"N", "28672"}, {"K", "8192"}},
                                           {{"M", "3"}, {"N", "8192"}, {"K", "28672"}},
                                           {{"M", "9"}, {"N", "333"}, {"K", "160"}}})
    for (const char* ctas : {"0", "2", "4"}) {
      const KernelInstance k = instance(problem, {{"path", "gemv"}, {"ctas_per_sm", ctas}, {"tile_rounds", "1"}});
      SCOPED_TRACE(k.problem.to_string() + " ctas_per_sm=" + ctas);
      const std::int64_t M = k.problem.integer("M"), N = k.problem.integer("N"), K = k.problem.integer("K");
      const int ctas_per_sm = std::string(ctas) == "0" ? 4 : std::stoi(ctas);
      std::int64_t steps = 0;
      std::vector<std::int64_t> partials;
      for (const ArgSpec& a : k.args) {
        if (a.name == "split_steps") steps = static_cast<std::int64_t>(a.value);
        if (a.name == "partials") partials = a.shape;
      }
      const std::int64_t k_steps = (K + 127) / 128;
      EXPECT_EQ(k.launch.grid.x, static_cast<std::uint32_t>((N + 127) / 128));  // 8 warps of 16 rows
      EXPECT_EQ(k.launch.block.x, 256u);
      EXPECT_EQ(static_cast<std::int64_t>(k.launch.grid.y), (k_steps + steps - 1) / steps);  // no empty split
      EXPECT_GT(k_steps, (static_cast<std::int64_t>(k.launch.grid.y) - 1) * steps);
      EXPECT_EQ(partials, (std::vector<std::int64_t>{k.launch.grid.y, M, N}));
      const int step_bytes = make_plan(GemmDequantGemvConfig{.n_tiles = M <= 8 ? 1 : 2}).step_bytes;
      EXPECT_EQ(k.launch.dynamic_smem, static_cast<std::uint32_t>(steps * step_bytes));
      // The CTAs fit the SM's 228 KiB together, each with its static int and the 1 KiB the hardware reserves.
      EXPECT_LE(k.launch.dynamic_smem + 16u + 1024u, 233472u / ctas_per_sm);
    }
  // Batched loads: no empty split in odd splits, and no weight tensor map (the kernel reads W through its pointer).
  for (const KV& problem : std::vector<KV>{{{"M", "1"}, {"N", "4096"}, {"K", "14336"}},
                                           {{"M", "4"}, {"N", "8192"}, {"K", "28672"}},
                                           {{"M", "13"}, {"N", "1000"}, {"K", "4128"}}})
    for (const KV& config : std::vector<KV>{{{"path", "gemv"}, {"batch", "on"}},
                                            {{"path", "gemv"}, {"batch", "on"}, {"prefetch", "3"}, {"ctas_per_sm", "3"}},
                                            {{"path", "gemv"}, {"batch", "on"}, {"splits", "9"}}}) {
      const KernelInstance k = instance(problem, config);
      SCOPED_TRACE(k.problem.to_string() + " " + k.config.to_string());
      std::int64_t steps = 0;
      for (const ArgSpec& a : k.args) {
        if (a.name == "split_steps") steps = static_cast<std::int64_t>(a.value);
        EXPECT_NE(a.kind, ArgSpec::Kind::tensor_map) << a.name;
      }
      const std::int64_t k_steps = (k.problem.integer("K") + 127) / 128;
      EXPECT_GT(k_steps, (static_cast<std::int64_t>(k.launch.grid.y) - 1) * steps);  // no empty split
      EXPECT_NE(k.name_expression.find(".batch = true"), std::string::npos);
    }
  // tile_rounds: ceil(row tiles / R) grid columns, each CTA looping over its tiles with one staging; the split model
  // then counts R tiles' steps a CTA (28672 x 8192, M 16, R 3: 75 columns x 7 splits of 10 steps, one wave of 525
  // CTAs on 132 SMs x 4); refused with the stream schedule and with cluster sums, and off (no loop) at R 1.
  {
    const KernelInstance k = instance({{"M", "16"}, {"N", "28672"}, {"K", "8192"}}, {{"path", "gemv"}, {"tile_rounds", "3"}});
    EXPECT_EQ(k.launch.grid.x, 75u);
    EXPECT_EQ(k.launch.grid.y, 7u);
    EXPECT_NE(k.name_expression.find(".tile_loop = true"), std::string::npos) << k.name_expression;
    std::vector<std::int64_t> counters;
    for (const ArgSpec& a : k.args)
      if (a.name == "counters") counters = a.shape;
    EXPECT_EQ(counters, (std::vector<std::int64_t>{224}));  // one per row tile, not per column
    // At M 4 the cluster sums auto takes at splits of 2-4 give way to global ones.
    const KernelInstance m4 = instance({{"M", "4"}, {"N", "28672"}, {"K", "8192"}}, {{"path", "gemv"}, {"tile_rounds", "2"}});
    EXPECT_NE(m4.name_expression.find(".cluster_reduce = false"), std::string::npos) << m4.name_expression;
    EXPECT_EQ(m4.launch.cluster.y, 1u);
  }
  EXPECT_NE(name({}, {{"path", "gemv"}}).find(".tile_loop = false"), std::string::npos);
  // auto (int4): two tiles a CTA at M 9-16 with N > K where one tile a CTA takes over two waves (28672 x 8192: 224
  // tiles x 7 splits = 1568 CTAs over 528 slots; then 112 columns x 8 splits of 8 steps) and at M 8 with N > K over
  // one wave (28672 x 8192: 224 x 4 = 896; then 112 x 8, gemvh200); one at N < K (8192 x 28672: 64 x 23 = 1472 CTAs,
  // 2.8 waves), under two waves (8192 x 8192: 64 x 8), at M 8 on one wave (14336 x 4096) and at M <= 7.
  {
    const KernelInstance a = instance({{"M", "16"}, {"N", "28672"}, {"K", "8192"}}, {{"path", "gemv"}});
    EXPECT_NE(a.name_expression.find(".tile_loop = true"), std::string::npos) << a.name_expression;
    EXPECT_EQ(a.launch.grid.x, 112u);
    EXPECT_EQ(a.launch.grid.y, 8u);
    EXPECT_NE(name({{"M", "9"}, {"N", "28672"}, {"K", "8192"}}, {}).find(".tile_loop = true"), std::string::npos);
    EXPECT_NE(name({{"M", "16"}, {"N", "28672"}, {"K", "8192"}}, {{"path", "gemv"}, {"tile_rounds", "1"}})
                  .find(".tile_loop = false"), std::string::npos);
    EXPECT_NE(name({{"M", "16"}, {"N", "8192"}, {"K", "28672"}}, {{"path", "gemv"}}).find(".tile_loop = false"),
              std::string::npos);
    const KernelInstance m8 = instance({{"M", "8"}, {"N", "28672"}, {"K", "8192"}}, {{"path", "gemv"}});
    EXPECT_NE(m8.name_expression.find(".tile_loop = true"), std::string::npos) << m8.name_expression;
    EXPECT_EQ(m8.launch.grid.x, 112u);
    EXPECT_EQ(m8.launch.grid.y, 8u);
    EXPECT_NE(name({{"M", "7"}, {"N", "28672"}, {"K", "8192"}}, {}).find(".tile_loop = false"), std::string::npos);
    EXPECT_NE(name({{"M", "8"}, {"N", "14336"}, {"K", "4096"}}, {}).find(".tile_loop = false"), std::string::npos);
    EXPECT_NE(name({{"M", "16"}, {"N", "8192"}, {"K", "8192"}}, {{"path", "gemv"}}).find(".tile_loop = false"),
              std::string::npos);
  }
  EXPECT_NE(why({}, {{"path", "gemv"}, {"tile_rounds", "2"}, {"schedule", "stream"}}).find("schedule=split's"),
            std::string::npos);
  EXPECT_NE(why({}, {{"path", "gemv"}, {"tile_rounds", "2"}, {"reduce", "cluster"}}).find("schedule=split's"),
            std::string::npos);
  EXPECT_NE(name({{"M", "8"}}, {{"path", "gemv"}}).find(".batch = true"), std::string::npos);
  EXPECT_NE(name({{"M", "9"}}, {{"path", "gemv"}}).find(".batch = false"), std::string::npos);
  EXPECT_NE(name({{"M", "4"}}, {{"path", "gemv"}, {"batch", "off"}}).find(".batch = false"), std::string::npos);
  // group_sum: int4 with group 128 only (a step's four lanes, one mma.sync, share its scale); each staged step then
  // carries its f32 activation sums, and the launch's shared memory counts them.
  EXPECT_NE(name({}, {{"path", "gemv"}, {"group_sum", "true"}}).find(".group_sum = true"), std::string::npos);
  EXPECT_NE(name({}, {{"path", "gemv"}}).find(".group_sum = false"), std::string::npos);
  // Set where it cannot apply it was dropped without a word: refused, naming why.
  for (const KV& p : std::vector<KV>{{{"wtype", "fp4"}}, {{"group", "64"}}, {{"group", "32"}}}) {
    KV problem = p;
    problem["M"] = "4";
    auto k = instantiate(spec(), problem, {{"path", "gemv"}, {"group_sum", "true"}}, limits_for_arch("sm_90a"));
    ASSERT_FALSE(k.ok());
    EXPECT_NE(k.status().message().find("group_sum=true converts int4 codes in groups of 128"), std::string::npos)
        << k.status().message();
  }
  for (const char* m : {"1", "16"}) {
    const KernelInstance k =
        instance({{"M", m}, {"N", "8192"}, {"K", "8192"}}, {{"path", "gemv"}, {"group_sum", "true"}});
    std::int64_t steps = 0;
    for (const ArgSpec& a : k.args)
      if (a.name == "split_steps") steps = static_cast<std::int64_t>(a.value);
    const GemmDequantGemvPlan plan = make_plan(GemmDequantGemvConfig{.n_tiles = std::string(m) == "1" ? 1 : 2,
                                                                     .group_sum = true});
    EXPECT_EQ(k.launch.dynamic_smem, static_cast<std::uint32_t>(steps * plan.step_bytes)) << "M " << m;
  }
}

// step_unroll=S (gemv23): the unrolled loop rolled into iterations of S steps (CFG.unroll_by), the split, grid and
// everything else as the unrolled loop's; 0 (and the split's own step count) = all unrolled; refused where the loop is
// not the unrolled one or S is no multiple of prefetch dividing the split (8192 x 28672: 14 steps, so 4 and 8 are not).
TEST(GemmDequantSpec, GemvStepUnrollRollsTheUnrolledLoop) {
  const KV deep{{"M", "16"}, {"N", "28672"}, {"K", "8192"}}, tall{{"M", "16"}, {"N", "8192"}, {"K", "28672"}};
  const KernelInstance u = instance(deep, {{"path", "gemv"}, {"step_loop", "unrolled"}, {"step_unroll", "all"}});
  const KernelInstance r = instance(deep, {{"path", "gemv"}, {"step_loop", "unrolled"}, {"step_unroll", "2"}});
  EXPECT_NE(u.name_expression.find(".unroll = 8, .unroll_by = 0"), std::string::npos) << u.name_expression;
  EXPECT_NE(r.name_expression.find(".unroll = 8, .unroll_by = 2"), std::string::npos) << r.name_expression;
  std::string rest = r.name_expression;
  rest.replace(rest.find(".unroll_by = 2"), 14, ".unroll_by = 0");
  EXPECT_EQ(rest, u.name_expression);
  EXPECT_EQ(r.launch.grid.x, u.launch.grid.x);
  EXPECT_EQ(r.launch.grid.y, u.launch.grid.y);
  EXPECT_EQ(r.launch.dynamic_smem, u.launch.dynamic_smem);
  // The split's own step count is the whole loop: the unrolled build itself.
  EXPECT_EQ(instance(deep, {{"path", "gemv"}, {"step_loop", "unrolled"}, {"step_unroll", "8"}}).name_expression,
            u.name_expression);
  // auto (gemv23, session 47's merged call): 2 at int4 group 128 M 9-16 with two tiles a CTA (28672 x 8192: step_loop's
  // auto unrolls M 13-16 there now, batch off, as timed) and on the tall one-tile grid; all elsewhere (fp4, M 8,
  // shallow grids), and step_unroll=all keeps the old defaults (M 16 there: the indexed batched loop).
  EXPECT_EQ(instance(deep, {{"path", "gemv"}}).name_expression, r.name_expression);
  EXPECT_EQ(instance(tall, {{"path", "gemv"}}).name_expression,
            instance(tall, {{"path", "gemv"}, {"step_unroll", "2"}}).name_expression);
  EXPECT_NE(instance(tall, {{"path", "gemv"}, {"step_unroll", "2"}}).name_expression.find(".unroll = 14, .unroll_by = 2"),
            std::string::npos);
  for (const char* m : {"9", "12", "13"}) {
    KV problem = deep;
    problem["M"] = m;
    EXPECT_NE(instance(problem, {{"path", "gemv"}}).name_expression.find(".unroll = 8, .unroll_by = 2"), std::string::npos)
        << m;
  }
  for (const char* m : {"9", "12"}) {
    KV problem = tall;
    problem["M"] = m;
    EXPECT_NE(instance(problem, {{"path", "gemv"}}).name_expression.find(".unroll = 14, .unroll_by = 2"),
              std::string::npos)
        << m;
  }
  for (const KV& problem : std::vector<KV>{{{"M", "8"}, {"N", "28672"}, {"K", "8192"}},
                                           {{"M", "16"}, {"N", "28672"}, {"K", "8192"}, {"wtype", "fp4"}},
                                           {{"M", "16"}, {"N", "8192"}, {"K", "8192"}}})
    EXPECT_NE(instance(problem, {{"path", "gemv"}}).name_expression.find(".unroll_by = 0"), std::string::npos)
        << instance(problem, {{"path", "gemv"}}).name_expression;
  // A prefetch that 2 is no multiple of: auto leaves the loop whole.
  EXPECT_NE(instance(deep, {{"path", "gemv"}, {"prefetch", "4"}}).name_expression.find(".unroll = 8, .unroll_by = 0"),
            std::string::npos);
  const KernelInstance old = instance(deep, {{"path", "gemv"}, {"step_unroll", "all"}});
  EXPECT_NE(old.name_expression.find(".batch = true"), std::string::npos) << old.name_expression;
  EXPECT_NE(old.name_expression.find(".unroll = 0"), std::string::npos) << old.name_expression;
  auto why = [](const KV& problem, const KV& config) {
    auto k = instantiate(spec(), problem, config, limits_for_arch("sm_90a"));
    return k.ok() ? std::string() : k.status().message();
  };
  EXPECT_NE(why({{"M", "16"}, {"N", "8192"}, {"K", "8192"}}, {{"path", "gemv"}, {"step_unroll", "2"}}).find("indexed"),
            std::string::npos);  // (auto: runtime there)
  EXPECT_NE(why(deep, {{"path", "gemv"}, {"step_loop", "runtime"}, {"step_unroll", "2"}}).find("step_unroll=2"),
            std::string::npos);
  EXPECT_NE(why(tall, {{"path", "gemv"}, {"step_unroll", "4"}}).find("14 steps"), std::string::npos);
  EXPECT_NE(why(tall, {{"path", "gemv"}, {"step_unroll", "8"}}).find("dividing"), std::string::npos);
  EXPECT_NE(why(deep, {{"path", "gemv"}, {"step_loop", "unrolled"}, {"prefetch", "4"}, {"step_unroll", "2"}})
                .find("multiple of prefetch"),
            std::string::npos);
  EXPECT_EQ(why(tall, {{"path", "gemv"}, {"step_unroll", "2"}}), "");
}

// step_loop=unrolled: the kernel built for its split's steps (CFG.unroll), a split whose steps divide K's 128-k steps in
// whole prefetch rounds, the one auto's model picks where it does (28672 x 8192 M 16: 8 splits of 8), else the
// cheapest such one; the launch's split_steps is the built one on any device; refused where no such split exists or K
// is no multiple of 128. auto: unrolled for int4 with N > K at M 1 and 8-12, for int4 at M <= 8 wherever the indexed
// loop's own split can be unrolled (gemvh200), and for fp4 on the deep M 9-16 grids (the builds that won), the indexed
// loop elsewhere (int4 M 16 unless step_unroll rolls it, int4 M <= 8 whose split has an odd step count, fp4 below M 9).
TEST(GemmDequantSpec, GemvUnrolledLoopTakesAnExactSplit) {
  auto split_steps = [](const KernelInstance& k) {
    for (const ArgSpec& a : k.args)
      if (a.name == "split_steps") return static_cast<std::int64_t>(a.value);
    return std::int64_t{-1};
  };
  const KV deep{{"M", "16"}, {"N", "28672"}, {"K", "8192"}};
  for (const KV& problem : std::vector<KV>{{{"M", "12"}, {"N", "28672"}, {"K", "8192"}},
                                           {{"M", "9"}, {"N", "28672"}, {"K", "8192"}},
                                           {{"M", "8"}, {"N", "28672"}, {"K", "8192"}},
                                           {{"M", "1"}, {"N", "28672"}, {"K", "8192"}},
                                           {{"M", "4"}, {"N", "28672"}, {"K", "8192"}},
                                           {{"M", "1"}, {"N", "8192"}, {"K", "28672"}},
                                           {{"M", "8"}, {"N", "8192"}, {"K", "28672"}},
                                           {{"M", "4"}, {"N", "14336"}, {"K", "4096"}},
                                           {{"M", "16"}, {"N", "28672"}, {"K", "8192"}, {"wtype", "fp4"}},
                                           {{"M", "16"}, {"N", "8192"}, {"K", "28672"}, {"wtype", "fp4"}}}) {
    const KernelInstance on = instance(problem, {{"path", "gemv"}, {"step_loop", "unrolled"}});
    EXPECT_EQ(instance(problem, {{"path", "gemv"}}).name_expression, on.name_expression) << on.problem.to_string();
    EXPECT_EQ(on.name_expression.find(".unroll = 0"), std::string::npos) << on.name_expression;
  }
  // (int4 M 13-16 at 28672 x 8192 unrolled since gemv23's step_unroll auto: GemvStepUnrollRollsTheUnrolledLoop.)
  // (4096 x 14336 at M 1: the indexed loop's 16 splits of 7 steps; the unrolled loop's 14 of 8 lost, 0.93x.)
  for (const KV& problem : std::vector<KV>{{{"M", "4"}, {"N", "28672"}, {"K", "8192"}, {"wtype", "fp4"}},
                                           {{"M", "4"}, {"N", "4096"}, {"K", "14336"}},
                                           {{"M", "12"}, {"N", "8192"}, {"K", "28672"}, {"group", "64"}},
                                           {{"M", "16"}, {"N", "8192"}, {"K", "8192"}, {"wtype", "fp4"}},
                                           {{"M", "1"}, {"N", "4096"}, {"K", "14336"}}}) {
    const KernelInstance k = instance(problem, {{"path", "gemv"}});
    EXPECT_NE(k.name_expression.find(".unroll = 0"), std::string::npos) << k.name_expression;
  }
  // (auto's indexed loop at M 16 batches its loads since gemv22; unrolled, batch auto is off there.)
  const KernelInstance a = instance(deep, {{"path", "gemv"}, {"batch", "off"}, {"step_loop", "runtime"}});
  const KernelInstance u = instance(deep, {{"path", "gemv"}, {"step_loop", "unrolled"}, {"step_unroll", "all"}});
  EXPECT_NE(a.name_expression.find(".unroll = 0"), std::string::npos) << a.name_expression;
  EXPECT_NE(u.name_expression.find(".unroll = 8"), std::string::npos) << u.name_expression;
  EXPECT_EQ(split_steps(u), 8);
  EXPECT_EQ(u.launch.grid.x, a.launch.grid.x);  // the same grid as the indexed loop's (112 x 8)
  EXPECT_EQ(u.launch.grid.y, a.launch.grid.y);
  EXPECT_EQ(u.launch.dynamic_smem, a.launch.dynamic_smem);
  // Apart from the loop, the config is the indexed loop's.
  std::string rest = u.name_expression;
  rest.replace(rest.find(".unroll = 8"), 11, ".unroll = 0");
  EXPECT_EQ(rest, a.name_expression);
  for (const KV& problem : std::vector<KV>{{{"M", "16"}, {"N", "8192"}, {"K", "28672"}},   // auto: 13 steps of 224
                                           {{"M", "9"}, {"N", "8192"}, {"K", "28672"}, {"wtype", "fp4"}},
                                           {{"M", "1"}, {"N", "28672"}, {"K", "8192"}},
                                           {{"M", "11"}, {"N", "28600"}, {"K", "8192"}},
                                           {{"M", "5"}, {"N", "200"}, {"K", "512"}}})
    for (const KV& config : std::vector<KV>{{{"path", "gemv"}, {"step_loop", "unrolled"}},
                                            {{"path", "gemv"}, {"step_loop", "unrolled"}, {"batch", "on"},
                                             {"prefetch", "4"}, {"ctas_per_sm", "3"}}}) {
      const KernelInstance k = instance(problem, config);
      SCOPED_TRACE(k.problem.to_string() + " " + k.config.to_string());
      const std::int64_t k_steps = k.problem.integer("K") / 128, steps = split_steps(k);
      const std::int64_t prefetch = k.config.integer("prefetch");
      EXPECT_EQ(k_steps % steps, 0);
      EXPECT_EQ(steps % prefetch, 0);
      EXPECT_EQ(static_cast<std::int64_t>(k.launch.grid.y) * steps, k_steps);
      EXPECT_NE(k.name_expression.find(".unroll = " + std::to_string(steps) + ","), std::string::npos)
          << k.name_expression;
      // Another device's SM count leaves the built split as it is.
      DeviceLimits fewer = limits_for_arch("sm_90a");
      fewer.sm_count = 78;
      auto other = instantiate(spec(), problem, config, fewer);
      ASSERT_TRUE(other.ok()) << other.status().message();
      EXPECT_EQ(split_steps(*other), steps);
      EXPECT_EQ(other->name_expression, k.name_expression);
    }
  auto why = [](const KV& problem, const KV& config) {
    auto k = instantiate(spec(), problem, config, limits_for_arch("sm_90a"));
    return k.ok() ? std::string() : k.status().message();
  };
  for (const KV& problem : std::vector<KV>{{{"M", "16"}, {"N", "1000"}, {"K", "4128"}}, {{"M", "12"}, {"K", "160"}}})
    EXPECT_NE(why(problem, {{"path", "gemv"}, {"step_loop", "unrolled"}}).find("step_loop=unrolled"), std::string::npos);
  EXPECT_NE(why(deep, {{"path", "gemv"}, {"step_loop", "unrolled"}, {"splits", "3"}}).find("divide"), std::string::npos);
  EXPECT_NE(why(deep, {{"path", "gemv"}, {"step_loop", "unrolled"}, {"prefetch", "3"}}).find("prefetch"),
            std::string::npos);
  EXPECT_NE(why(deep, {{"path", "gemv"}, {"step_loop", "unrolled"}, {"schedule", "stream"}}).find("schedule=split"),
            std::string::npos);
  EXPECT_EQ(why(deep, {{"path", "gemv"}, {"step_loop", "runtime"}, {"splits", "16"}}), "");
  // The gemv path's switch: refused where wgmma runs.
  EXPECT_NE(why(deep, {{"path", "wgmma"}, {"step_loop", "unrolled"}}).find("step_loop=unrolled is path=gemv's option"),
            std::string::npos);
}

// reduce=cluster: a row tile's split CTAs are one cluster where the split has 2-16 CTAs (the grid then a whole number
// of clusters), none beyond (the partials through global memory) or without a split; the launch's shared memory holds
// the sums; the stream schedule refuses it. stage_rounds auto: 2 at one n tile, 1 at two.
TEST(GemmDequantSpec, GemvClusterReduceTakesTheSplit) {
  for (const KV& problem : std::vector<KV>{{{"M", "1"}, {"N", "8192"}, {"K", "8192"}},
                                           {{"M", "16"}, {"N", "28672"}, {"K", "8192"}},
                                           {{"M", "4"}, {"N", "4096"}, {"K", "14336"}},
                                           {{"M", "13"}, {"N", "1000"}, {"K", "4128"}},
                                           {{"M", "1"}, {"N", "100"}, {"K", "32"}}})
    for (const char* splits : {"0", "5", "20"}) {
      const KernelInstance k = instance(problem, {{"path", "gemv"}, {"reduce", "cluster"}, {"splits", splits}});
      SCOPED_TRACE(k.problem.to_string() + " splits=" + splits);
      const std::uint32_t y = k.launch.grid.y;
      EXPECT_EQ(k.launch.cluster.x, 1u);
      EXPECT_EQ(k.launch.cluster.y, y >= 2 && y <= static_cast<std::uint32_t>(kGemvMaxCluster) ? y : 1u);
      EXPECT_EQ(y % k.launch.cluster.y, 0u);
      const bool two = k.problem.integer("M") > 8;
      const GemmDequantGemvPlan plan = make_plan(GemmDequantGemvConfig{.n_tiles = two ? 2 : 1});
      EXPECT_GE(k.launch.dynamic_smem, static_cast<std::uint32_t>(plan.red_bytes));
      EXPECT_EQ(plan.red_bytes, 4 * 4 * (two ? 2 : 1) * 256);  // each thread's sums, f32
      EXPECT_NE(k.name_expression.find(".cluster_reduce = true"), std::string::npos);
      EXPECT_NE(k.name_expression.find(two ? ".stage_rounds = 1" : ".stage_rounds = 2"), std::string::npos);
    }
  EXPECT_EQ(instance({}, {{"path", "gemv"}}).launch.cluster.y, 1u);
  auto k = instantiate(spec(), {}, {{"path", "gemv"}, {"reduce", "cluster"}, {"schedule", "stream"}},
                       limits_for_arch("sm_90a"));
  ASSERT_FALSE(k.ok());
  EXPECT_NE(k.status().message().find("leave reduce at auto or global"), std::string::npos) << k.status().message();
  // auto: a cluster for splits of 2-4 at M <= 4 where the grid is one wave at most (14336 x 4096: 112 row tiles x 4,
  // 448 CTAs), none for more splits or over a wave (28672 x 8192: 224 x 4, 896 CTAs; gemvh200), and the kernel built
  // without the cluster's code where its launch takes none.
  const KernelInstance four = instance({{"M", "4"}, {"N", "14336"}, {"K", "4096"}}, {{"path", "gemv"}});
  EXPECT_EQ(four.launch.grid.y, 4u);
  EXPECT_EQ(four.launch.cluster.y, 4u);
  for (const char* m : {"1", "4"}) {
    const KernelInstance tall = instance({{"M", m}, {"N", "28672"}, {"K", "8192"}}, {{"path", "gemv"}});
    EXPECT_EQ(tall.launch.grid.y, 4u) << m;
    EXPECT_EQ(tall.launch.cluster.y, 1u) << m;
    EXPECT_NE(tall.name_expression.find(".cluster_reduce = false"), std::string::npos) << m;
  }
  const KernelInstance eight = instance({{"M", "4"}, {"N", "8192"}, {"K", "8192"}}, {{"path", "gemv"}});
  EXPECT_EQ(eight.launch.grid.y, 8u);
  EXPECT_EQ(eight.launch.cluster.y, 1u);
  EXPECT_NE(eight.name_expression.find(".cluster_reduce = false"), std::string::npos);
  const KernelInstance m8 = instance({{"M", "8"}, {"N", "28672"}, {"K", "8192"}}, {{"path", "gemv"}});
  EXPECT_EQ(m8.launch.cluster.y, 1u);
  EXPECT_NE(m8.name_expression.find(".cluster_reduce = false"), std::string::npos);
  const KernelInstance m16 = instance({{"M", "16"}, {"N", "28672"}, {"K", "8192"}}, {{"path", "gemv"}});
  EXPECT_EQ(m16.launch.cluster.y, 1u);
  EXPECT_NE(m16.name_expression.find(".cluster_reduce = false"), std::string::npos);
  EXPECT_NE(four.name_expression.find(".cluster_reduce = true"), std::string::npos);
  // act_first auto: on for M <= 8.
  EXPECT_NE(four.name_expression.find(".act_first = true"), std::string::npos);
  EXPECT_NE(m8.name_expression.find(".act_first = true"), std::string::npos);
  EXPECT_NE(m16.name_expression.find(".act_first = false"), std::string::npos);
  const KV global = {{"path", "gemv"}, {"reduce", "global"}};
  EXPECT_EQ(instance({{"M", "4"}, {"N", "28672"}, {"K", "8192"}}, global).launch.cluster.y, 1u);
}

// schedule=stream: CTA c takes chunks [c U / G, (c+1) U / G) of the U = row tiles x k chunks (as the kernel computes);
// every CTA gets some, their staged steps fit the launched shared memory and the SM's share, the kernel's inverse
// (the CTA holding chunk u) agrees, a row tile's CTAs fit the partials' planes, and one wave is launched where the
// CTAs' shares fit (all 132 x ctas_per_sm slots busy).
TEST(GemmDequantSpec, GemvStreamDealsEveryChunkOnce) {
  for (const KV& problem : std::vector<KV>{{{"M", "1"}, {"N", "8192"}, {"K", "8192"}},
                                           {{"M", "4"}, {"N", "28672"}, {"K", "8192"}},
                                           {{"M", "16"}, {"N", "8192"}, {"K", "28672"}},
                                           {{"M", "13"}, {"N", "1000"}, {"K", "4128"}},
                                           {{"M", "7"}, {"N", "333"}, {"K", "160"}},
                                           {{"M", "1"}, {"N", "100"}, {"K", "32"}}})
    for (const KV& config : std::vector<KV>{{{"path", "gemv"}, {"schedule", "stream"}},
                                            {{"path", "gemv"}, {"schedule", "stream"}, {"batch", "off"}},
                                            {{"path", "gemv"}, {"schedule", "stream"}, {"batch", "on"},
                                             {"prefetch", "4"}, {"ctas_per_sm", "3"}}}) {
      const KernelInstance k = instance(problem, config);
      SCOPED_TRACE(k.problem.to_string() + " " + k.config.to_string());
      const std::int64_t M = k.problem.integer("M"), N = k.problem.integer("N"), K = k.problem.integer("K");
      const bool batch = k.name_expression.find(".batch = true") != std::string::npos;
      const std::int64_t ctas_per_sm = k.config.integer("ctas_per_sm") != 0 ? k.config.integer("ctas_per_sm") : 4;
      const std::int64_t unit = batch ? k.config.integer("prefetch") : 1, k_steps = (K + 127) / 128;
      const std::int64_t kc = (k_steps + unit - 1) / unit, row_tiles = (N + 127) / 128, U = row_tiles * kc;
      const std::int64_t G = k.launch.grid.x;
      EXPECT_EQ(k.launch.grid.y, 1u);
      std::vector<std::int64_t> partials;
      for (const ArgSpec& a : k.args)
        if (a.name == "partials") partials = a.shape;
      ASSERT_EQ(partials.size(), 3u);
      const int step_bytes = make_plan(GemmDequantGemvConfig{.n_tiles = M <= 8 ? 1 : 2}).step_bytes;
      EXPECT_LE(k.launch.dynamic_smem + 16u + 1024u, 233472u / ctas_per_sm);
      const std::int64_t slots = 132 * ctas_per_sm, share = (U + slots - 1) / slots * unit * step_bytes;
      if (U >= slots && share + 128 + 1024 <= 233472 / ctas_per_sm) {
        EXPECT_EQ(G, slots);
      }
      auto lo = [&](std::int64_t c) { return c * U / G; };
      auto cta_of = [&](std::int64_t u) { return ((u + 1) * G - 1) / U; };
      for (std::int64_t c = 0; c < G; ++c) {
        ASSERT_GT(lo(c + 1), lo(c)) << "CTA " << c << " has no chunk";
        EXPECT_LE(static_cast<std::uint32_t>((lo(c + 1) - lo(c)) * unit * step_bytes), k.launch.dynamic_smem);
        EXPECT_EQ(cta_of(lo(c)), c);
        EXPECT_EQ(cta_of(lo(c + 1) - 1), c);
      }
      EXPECT_EQ(lo(G), U);
      for (std::int64_t x = 0; x < row_tiles; ++x) EXPECT_LE(cta_of(x * kc + kc - 1) - cta_of(x * kc) + 1, partials[0]);
    }
  auto why = [](const KV& config) {
    auto k = instantiate(spec(), {{"M", "4"}}, config, limits_for_arch("sm_90a"));
    return k.ok() ? std::string() : k.status().message();
  };
  const std::string splits = why({{"path", "gemv"}, {"schedule", "stream"}, {"splits", "3"}});
  EXPECT_NE(splits.find("leave splits at 0"), std::string::npos) << splits;
}

// [SECTION] the reference

ReferenceInputs inputs_of(const KernelInstance& k) {
  ReferenceInputs in;
  for (const ArgSpec& a : k.args)
    if (a.kind == ArgSpec::Kind::tensor && a.role == ArgRole::in) in.tensors[a.name] = make_host_tensor(a);
  return in;
}

// An entry by hand from the format's definition; and with the scales of the next group, or each byte's nibbles
// swapped (what a kernel indexing them wrongly computes), the entries leave the tolerance.
// weight_layout=permuted (auto's on the gemv path): the kernel's W_tiles (a parameter, in W's place) holds each byte of the logical W (the
// reference's input, no longer a parameter) where the plan's gemv_permuted_at puts it, at a shape that ends inside a
// row block and a step (padding zero), and the launch and reference are otherwise the plain layout's.
TEST(GemmDequantSpec, PermutedWeightsHoldTheLogicalOnes) {
  const KV problem = {{"M", "3"}, {"N", "70"}, {"K", "224"}, {"group", "32"}};
  const KernelInstance k = instance(problem, {{"path", "gemv"}, {"weight_layout", "permuted"}});
  const KernelInstance plain = instance(problem, {{"path", "gemv"}, {"weight_layout", "plain"}});
  // auto: permuted on the gemv path, row-major W for wgmma.
  EXPECT_EQ(instance(problem, {{"path", "gemv"}}).name_expression, k.name_expression);
  EXPECT_EQ(instance(problem, {{"path", "wgmma"}}).args[1].name, "W");
  std::vector<std::string> params, plain_params;
  for (const ArgSpec& a : k.args)
    if (a.kind == ArgSpec::Kind::tensor && a.is_param) params.push_back(a.name);
  for (const ArgSpec& a : plain.args)
    if (a.kind == ArgSpec::Kind::tensor && a.is_param) plain_params.push_back(a.name == "W" ? "W_tiles" : a.name);
  EXPECT_EQ(params, plain_params);
  EXPECT_EQ(k.launch.grid.x, plain.launch.grid.x);
  EXPECT_EQ(k.launch.grid.y, plain.launch.grid.y);
  const ReferenceInputs in = inputs_of(k);
  const HostTensor &W = in.tensor("W"), &T = in.tensor("W_tiles");
  EXPECT_EQ(W.data, inputs_of(plain).tensor("W").data);
  const std::int64_t N = 70, row_bytes = 112, k_steps = 2;
  ASSERT_EQ(T.numel(), 5 * k_steps * kGemvTileBytes);  // 5 row blocks of 16, 2 steps of 64 bytes
  std::vector<bool> used(static_cast<size_t>(T.numel()), false);
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t b = 0; b < row_bytes; ++b) {
      const long long at = gemv_permuted_at(n, b, k_steps);
      used[static_cast<size_t>(at)] = true;
      ASSERT_EQ(T.data[static_cast<size_t>(at)], W.data[static_cast<size_t>(n * row_bytes + b)]) << n << " " << b;
    }
  for (size_t i = 0; i < used.size(); ++i)
    if (!used[i]) {
      ASSERT_EQ(T.data[i], 0) << "padding byte " << i;
    }
  EXPECT_EQ(k.spec->reference(k.problem, in, "C", {0, 69, 209}).value(),
            plain.spec->reference(plain.problem, inputs_of(plain), "C", {0, 69, 209}).value());
}

// stage_copy=async: the kernel's W_pairs (the tiled bytes, no plain W beside them) are the logical W read through
// gemv_pairs_nibble_at, a bijection of the logical codes onto the non-padding nibbles; what a lane loads (its 16 bytes
// of a row's step at the permuted layout's place) holds, at nibble p of word w, the lane's code 8w + gemv_nibble_code(p)
// (what the kernel's pair order takes it for); and the reference reads those codes, not the plain layout's.
TEST(GemmDequantSpec, NibblePairWeightsAreTheReferencesLogicalOnes) {
  const KV problem = {{"M", "3"}, {"N", "70"}, {"K", "224"}, {"group", "32"}};
  const KernelInstance a = instance(problem, {{"path", "gemv"}, {"stage_copy", "async"}});
  const KernelInstance tiled = instance(problem, {{"path", "gemv"}});
  EXPECT_NE(a.name_expression, tiled.name_expression);
  std::vector<std::string> params;
  for (const ArgSpec& x : a.args)
    if (x.kind == ArgSpec::Kind::tensor) params.push_back(x.name);
  EXPECT_EQ(params, (std::vector<std::string>{"A", "W_pairs", "scales", "C", "partials", "counters"}));
  const ReferenceInputs in = inputs_of(a);
  const HostTensor& T = in.tensor("W_pairs");
  EXPECT_EQ(T.data, inputs_of(tiled).tensor("W_tiles").data);  // the same bytes, another reading
  const std::int64_t N = 70, K = 224, k_steps = 2;
  std::vector<int> hits(static_cast<size_t>(2 * T.numel()), 0);
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t k = 0; k < K; ++k) ++hits[static_cast<size_t>(gemv_pairs_nibble_at(n, k, k_steps))];
  EXPECT_EQ(std::count(hits.begin(), hits.end(), 1), N * K);
  EXPECT_EQ(std::count(hits.begin(), hits.end(), 0), 2 * T.numel() - N * K);
  for (std::int64_t n = 0; n < N; ++n)
    for (int s = 0; s < k_steps; ++s)
      for (int t = 0; t < 4; ++t)
        for (int w = 0; w < 4; ++w) {
          const long long word = gemv_permuted_at(n, 64 * s + 16 * t + 4 * w, k_steps);
          for (int p = 0; p < 8; ++p) {
            const std::int64_t k = kGemvStepK * s + kGemvLaneCodes * t + 8 * w + gemv_nibble_code(p);
            if (k < K) {
              ASSERT_EQ(gemv_pairs_nibble_at(n, k, k_steps), 2 * word + p) << n << " " << k;
            }
          }
        }
  // The reference: row 0's sum over W_pairs' codes, against one computed here from the nibbles.
  const HostTensor &A = in.tensor("A"), &S = in.tensor("scales");
  double want = 0;
  for (std::int64_t k = 0; k < K; ++k) {
    const std::int64_t at = gemv_pairs_nibble_at(5, k, k_steps);
    const auto code = static_cast<std::uint8_t>(T.data[static_cast<size_t>(at / 2)] >> (4 * (at % 2)) & 0xF);
    const float v = static_cast<float>(num::int4_value(code)) * static_cast<float>(S.at(5 * 7 + k / 32));
    want += A.at(k) * num::bf16_to_float(num::float_to_bf16(v));
  }
  EXPECT_EQ(a.spec->reference(a.problem, in, "C", {5}).value()[0], want);
  EXPECT_NE(want, tiled.spec->reference(tiled.problem, inputs_of(tiled), "C", {5}).value()[0]);
}

TEST(GemmDequantSpec, ReferenceUsesEveryScaleAndAWrongOneFails) {
  for (const char* wtype : {"int4", "fp4"})
    for (const char* sd : {"bf16", "f32"}) {
      SCOPED_TRACE(std::string(wtype) + " " + sd);
      const std::int64_t M = 3, N = 70, K = 224, G = 32, KG = 7;
      const KernelInstance k = instance(
          {{"M", "3"}, {"N", "70"}, {"K", "224"}, {"group", "32"}, {"wtype", wtype}, {"scale_dtype", sd}}, {});
      const ReferenceInputs in = inputs_of(k);
      const HostTensor &A = in.tensor("A"), &W = in.tensor("W"), &S = in.tensor("scales");
      ASSERT_EQ(S.shape, (std::vector<std::int64_t>{N, KG}));
      std::set<int> codes;
      for (std::int64_t i = 0; i < W.numel(); ++i) codes.insert(static_cast<int>(W.at(i)) & 0xF);
      EXPECT_EQ(codes.size(), 16u);  // every code occurs
      double by_hand = 0;
      const std::int64_t n = 69, m = 2;
      for (std::int64_t kk = 0; kk < K; ++kk) {
        const int byte = static_cast<int>(W.at(n * (K / 2) + kk / 2));
        const int code = kk % 2 ? byte >> 4 : byte & 0xF;
        const double v = std::string(wtype) == "fp4" ? num::fp4_e2m1_value(static_cast<std::uint8_t>(code))
                                                     : num::int4_value(static_cast<std::uint8_t>(code));
        const float w = static_cast<float>(v) * static_cast<float>(S.at(n * KG + kk / G));
        by_hand += A.at(m * K + kk) * num::bf16_to_float(num::float_to_bf16(w));
      }
      EXPECT_NEAR(k.spec->reference(k.problem, in, "C", {m * N + n}).value().at(0), by_hand, 1e-9 * std::abs(by_hand));

      std::vector<std::int64_t> all(static_cast<size_t>(M * N));
      for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<std::int64_t>(i);
      const std::vector<double> right = k.spec->reference(k.problem, in, "C", all).value();
      const Tolerance tol = k.spec->tolerance(k.problem, DType::bf16);
      auto rel = [&](const ReferenceInputs& wrong) {
        const std::vector<double> w = k.spec->reference(k.problem, wrong, "C", all).value();
        double diff = 0, norm = 0;
        for (size_t i = 0; i < w.size(); ++i) {
          diff += (w[i] - right[i]) * (w[i] - right[i]);
          norm += right[i] * right[i];
        }
        return std::sqrt(diff / norm);
      };
      ReferenceInputs next_group = in, swapped = in;
      HostTensor& s = next_group.tensors.at("scales");
      for (std::int64_t r = 0; r < N; ++r)
        for (std::int64_t g = 0; g < KG; ++g)
          store_element(s.data.data(), s.dtype, static_cast<std::uint64_t>(r * KG + g), S.at(r * KG + (g + 1) % KG));
      for (auto& b : swapped.tensors.at("W").data) b = static_cast<unsigned char>((b >> 4) | (b << 4));
      EXPECT_GT(rel(next_group), 10 * tol.rel);
      EXPECT_GT(rel(swapped), 10 * tol.rel);
    }
}

// stage_copy=auto: async on the split schedule with the permuted weights at M >= 8, and below M 8 where the grid is
// over one wave (gemvh200); regs below M 8 on one wave and with row-major weights (the kernel name carries the choice).
TEST(GemmDequantSpec, StageCopyAutoIsAsyncFromM8) {
  auto name = [](const KV& p, const KV& c) { return instance(p, c).name_expression; };
  for (const char* m : {"1", "4", "8", "16"}) {
    for (const char* n : {"28672", "8192"}) {
      if (std::string(m) == "16" && std::string(n) == "8192") continue;  // tma there (the next test)
      const KV p = {{"M", m}, {"N", n}, {"K", std::string(n) == "8192" ? "28672" : "8192"}};
      EXPECT_EQ(name(p, {{"path", "gemv"}}), name(p, {{"path", "gemv"}, {"stage_copy", "async"}})) << m << " " << n;
      EXPECT_NE(name(p, {{"path", "gemv"}}), name(p, {{"path", "gemv"}, {"stage_copy", "regs"}})) << m << " " << n;
    }
  }
  const KV m4 = {{"M", "4"}, {"N", "14336"}, {"K", "4096"}};
  EXPECT_EQ(name(m4, {{"path", "gemv"}}), name(m4, {{"path", "gemv"}, {"stage_copy", "regs"}}));
  const KV m16 = {{"M", "16"}, {"N", "28672"}, {"K", "8192"}};
  EXPECT_EQ(name(m16, {{"path", "gemv"}, {"weight_layout", "plain"}}),
            name(m16, {{"path", "gemv"}, {"weight_layout", "plain"}, {"stage_copy", "regs"}}));
}

// stage_copy=auto takes tma where it measured faster, group 128 at M 9-16 on the deep grids: with pairs of CTAs
// multicasting each step on the grid of one int4 row tile a CTA (8192 x 28672, 3 CTAs an SM) with the indexed loop
// (with the unrolled loop, auto's there since gemv22: M 9 async, M 10-12 multicast, M 13-16 tma alone); async for int4
// at two tiles a CTA (28672 x 8192), for fp4 (since gemvwg1), at M 8 and at other groups; act_multicast=1 keeps tma
// without the cluster.
TEST(GemmDequantSpec, StageCopyAutoIsTmaOnDeepOneTileGrids) {
  auto name = [](const KV& p, const KV& c) { return instance(p, c).name_expression; };
  const KV gv = {{"path", "gemv"}}, tma2 = {{"path", "gemv"}, {"stage_copy", "tma"}, {"act_multicast", "2"}};
  const KV rt = {{"path", "gemv"}, {"step_loop", "runtime"}};
  auto with = [](KV c, const KV& more) {
    c.insert(more.begin(), more.end());
    return c;
  };
  for (const char* m : {"9", "12", "16"}) {
    const KV p = {{"M", m}, {"N", "8192"}, {"K", "28672"}};
    EXPECT_EQ(name(p, rt), name(p, with(tma2, rt))) << m;
    EXPECT_EQ(name(p, with(rt, {{"act_multicast", "1"}})),
              name(p, with(rt, {{"stage_copy", "tma"}, {"act_multicast", "1"}}))) << m;
    EXPECT_NE(name(p, rt), name(p, with(rt, {{"stage_copy", "async"}}))) << m;
    const KV w = {{"M", m}, {"N", "28672"}, {"K", "8192"}};
    EXPECT_EQ(name(w, gv), name(w, {{"path", "gemv"}, {"stage_copy", "async"}})) << m;
    // fp4: async on the deep grids too (since the unrolled loop, 1.03-1.12x tma's on an H100: gemvwg1).
    const KV f = {{"M", m}, {"N", "8192"}, {"K", "28672"}, {"wtype", "fp4"}, {"group", "128"}};
    EXPECT_EQ(name(f, gv), name(f, {{"path", "gemv"}, {"stage_copy", "async"}})) << m;
    EXPECT_NE(name(f, gv), name(f, tma2)) << m;
    const KV fw = {{"M", m}, {"N", "28672"}, {"K", "8192"}, {"wtype", "fp4"}, {"group", "128"}};
    EXPECT_EQ(name(fw, gv), name(fw, {{"path", "gemv"}, {"stage_copy", "async"}})) << m;
    const KV f32 = {{"M", m}, {"N", "8192"}, {"K", "28672"}, {"wtype", "fp4"}, {"group", "32"}};
    EXPECT_EQ(name(f32, gv), name(f32, {{"path", "gemv"}, {"stage_copy", "async"}})) << m;
    const KV i64 = {{"M", m}, {"N", "8192"}, {"K", "28672"}, {"group", "64"}};
    EXPECT_EQ(name(i64, gv), name(i64, {{"path", "gemv"}, {"stage_copy", "async"}})) << m;
  }
  const KV m8 = {{"M", "8"}, {"N", "8192"}, {"K", "28672"}};
  EXPECT_EQ(name(m8, gv), name(m8, {{"path", "gemv"}, {"stage_copy", "async"}}));
  EXPECT_EQ(instance({{"M", "16"}, {"N", "8192"}, {"K", "28672"}}, rt).launch.cluster.x, 2u);
  // The unrolled loop's staging by M (each M's timed build; gemv22's test below names them whole).
  for (const char* m : {"9", "10", "11", "12", "13", "16"}) {
    const KernelInstance k = instance({{"M", m}, {"N", "8192"}, {"K", "28672"}}, gv);
    const int M = std::stoi(m);
    EXPECT_NE(k.name_expression.find(M <= 9 ? ".stage_tma = false, .act_multicast = 1"
                                     : M <= 12 ? ".stage_tma = true, .act_multicast = 2"
                                               : ".stage_tma = true, .act_multicast = 1"),
              std::string::npos)
        << m << " " << k.name_expression;
    EXPECT_EQ(k.launch.cluster.x, M >= 10 && M <= 12 ? 2u : 1u) << m;
  }
}

// batch=auto: on at M <= 8, and at int4 M 9-16 where a CTA holds one row tile staged by TMA with the indexed loop
// (8192 x 28672 with step_loop=runtime: the config batch=on gives), off there with the unrolled loop (auto's since
// gemv22) and with async staging forced; at two int4 tiles a CTA (28672 x 8192) off with the unrolled loop (M 9-12),
// on with the indexed one (M 13-16, or runtime forced); fp4 group 128 on the tall grid on at M 9-12 (unrolled), off at
// M 16 and at two tiles a CTA.
TEST(GemmDequantSpec, BatchAutoIsOnAtOneTileTmaGrids) {
  auto name = [](const KV& p, const KV& c) { return instance(p, c).name_expression; };
  const KV gv = {{"path", "gemv"}}, on = {{"path", "gemv"}, {"batch", "on"}}, off = {{"path", "gemv"}, {"batch", "off"}};
  const KV rt = {{"path", "gemv"}, {"step_loop", "runtime"}};
  const KV rt_on = {{"path", "gemv"}, {"step_loop", "runtime"}, {"batch", "on"}};
  for (const char* m : {"9", "12", "16"}) {
    const bool m16 = std::string(m) == "16";
    const KV tall = {{"M", m}, {"N", "8192"}, {"K", "28672"}};
    EXPECT_EQ(name(tall, rt), name(tall, rt_on)) << m;
    EXPECT_NE(name(tall, rt).find(".batch = true"), std::string::npos) << m;
    EXPECT_NE(name(tall, rt).find(".stage_tma = true"), std::string::npos) << m;
    EXPECT_EQ(name(tall, gv), name(tall, off)) << m;
    const KV wide = {{"M", m}, {"N", "28672"}, {"K", "8192"}};
    // (gemv23: M 13-16 there unrolled too since step_unroll's auto, so batch off; step_unroll=all keeps the indexed
    // batched loop at M 16.)
    EXPECT_EQ(name(wide, gv), name(wide, off)) << m;
    const KV all = {{"path", "gemv"}, {"step_unroll", "all"}};
    const KV all_on = {{"path", "gemv"}, {"step_unroll", "all"}, {"batch", "on"}};
    const KV all_off = {{"path", "gemv"}, {"step_unroll", "all"}, {"batch", "off"}};
    EXPECT_EQ(name(wide, all), name(wide, m16 ? all_on : all_off)) << m;
    EXPECT_EQ(name(wide, rt), name(wide, rt_on)) << m;
    EXPECT_EQ(name(wide, {{"path", "gemv"}, {"step_loop", "unrolled"}}),
              name(wide, {{"path", "gemv"}, {"step_loop", "unrolled"}, {"batch", "off"}})) << m;
    const KV fp4 = {{"M", m}, {"N", "8192"}, {"K", "28672"}, {"wtype", "fp4"}, {"group", "128"}};
    EXPECT_EQ(name(fp4, gv), name(fp4, m16 ? off : on)) << m;
    const KV fp4w = {{"M", m}, {"N", "28672"}, {"K", "8192"}, {"wtype", "fp4"}, {"group", "128"}};
    EXPECT_EQ(name(fp4w, gv), name(fp4w, off)) << m;
    const KV async = {{"path", "gemv"}, {"stage_copy", "async"}};
    EXPECT_NE(name(tall, async).find(".batch = false"), std::string::npos) << m;
  }
  EXPECT_NE(name({{"M", "8"}, {"N", "8192"}, {"K", "28672"}}, gv).find(".batch = true"), std::string::npos);
}

// M 9-16 int4 on a grid of one row tile a CTA over two waves (8192 x 28672, 28672 x 8192): with N <= K 3 CTAs an SM and
// the one-LOP3 conversion, with N > K two row tiles a CTA (tile_rounds) and the LOP3 at 4 CTAs; fp4 with N <= K 3 CTAs
// an SM too (gemvh200: 16 splits against 28); under two waves (8192 x 8192), at M <= 8, fp4 with N > K and with
// warp_rows 32 as before.
TEST(GemmDequantSpec, DeepDecodeGridsTakeTheLop3AndTheirCtas) {
  auto name = [](const KV& p, const KV& c) { return instance(p, c).name_expression; };
  const KV gv = {{"path", "gemv"}};
  auto with = [&](KV c) {
    c.insert(gv.begin(), gv.end());
    return c;
  };
  for (const char* m : {"12", "16"}) {
    const KV tall = {{"M", m}, {"N", "8192"}, {"K", "28672"}};
    EXPECT_EQ(name(tall, gv), name(tall, with({{"ctas_per_sm", "3"}, {"int4_lop3", "on"}}))) << m;
    // the split model's at 3 CTAs an SM (23 at 4); the unrolled loop's (auto's since gemv22) 16 of 14 steps
    EXPECT_EQ(instance(tall, with({{"step_loop", "runtime"}})).launch.grid.y, 18u) << m;
    EXPECT_EQ(instance(tall, gv).launch.grid.y, 16u) << m;
    const KV wide = {{"M", m}, {"N", "28672"}, {"K", "8192"}};
    EXPECT_EQ(name(wide, gv), name(wide, with({{"ctas_per_sm", "4"}, {"int4_lop3", "on"}, {"tile_rounds", "2"}}))) << m;
    const KV fp4 = {{"M", m}, {"N", "28672"}, {"K", "8192"}, {"wtype", "fp4"}, {"group", "32"}};
    EXPECT_EQ(name(fp4, gv), name(fp4, with({{"int4_lop3", "off"}, {"ctas_per_sm", "4"}}))) << m;
    for (const char* g : {"32", "128"}) {
      const KV tall_fp4 = {{"M", m}, {"N", "8192"}, {"K", "28672"}, {"wtype", "fp4"}, {"group", g}};
      EXPECT_EQ(name(tall_fp4, gv), name(tall_fp4, with({{"ctas_per_sm", "3"}}))) << m << " " << g;
      EXPECT_NE(name(tall_fp4, gv), name(tall_fp4, with({{"ctas_per_sm", "4"}}))) << m << " " << g;
      EXPECT_EQ(instance(tall_fp4, gv).launch.grid.y, 16u) << m << " " << g;
    }
  }
  const KV square = {{"M", "16"}, {"N", "8192"}, {"K", "8192"}};
  EXPECT_EQ(name(square, gv), name(square, with({{"ctas_per_sm", "4"}, {"int4_lop3", "off"}})));
  const KV m8 = {{"M", "8"}, {"N", "8192"}, {"K", "28672"}};
  EXPECT_EQ(name(m8, gv), name(m8, with({{"ctas_per_sm", "4"}, {"int4_lop3", "on"}})));
  const KV tall16 = {{"M", "16"}, {"N", "8192"}, {"K", "28672"}};
  EXPECT_EQ(name(tall16, with({{"warp_rows", "32"}})),
            name(tall16, with({{"warp_rows", "32"}, {"ctas_per_sm", "2"}, {"int4_lop3", "off"}})));
}

// step_scale auto: on for int4 group 128 on the deep M 9-16 grids (gemv_deep_grid), off under two waves, at M <= 8,
// for fp4, groups 32 / 64 (which refuse it when asked) and under group_sum (which scales per step itself).
TEST(GemmDequantSpec, StepScaleAutoTakesInt4Group128OnDeepGrids) {
  auto name = [](const KV& p, const KV& c) { return instance(p, c).name_expression; };
  const KV gv = {{"path", "gemv"}};
  for (const char* m : {"9", "12", "16"})
    for (const char* n : {"8192", "28672"}) {
      const KV p = {{"M", m}, {"N", n}, {"K", n == std::string("8192") ? "28672" : "8192"}};
      EXPECT_NE(name(p, gv).find(".step_scale = true"), std::string::npos) << m << " " << n;
    }
  const KV wide = {{"M", "16"}, {"N", "28672"}, {"K", "8192"}};
  EXPECT_NE(name(wide, {{"path", "gemv"}, {"step_scale", "off"}}).find(".step_scale = false"), std::string::npos);
  for (const KV& p : std::vector<KV>{{{"M", "16"}, {"N", "4096"}, {"K", "14336"}},
                                     {{"M", "12"}, {"N", "8192"}, {"K", "8192"}},
                                     {{"M", "8"}, {"N", "8192"}, {"K", "28672"}},
                                     {{"M", "16"}, {"N", "28672"}, {"K", "8192"}, {"wtype", "fp4"}},
                                     {{"M", "16"}, {"N", "28672"}, {"K", "8192"}, {"group", "64"}}})
    EXPECT_NE(name(p, gv).find(".step_scale = false"), std::string::npos) << p.at("M") << " " << p.at("N");
  EXPECT_NE(name(wide, {{"path", "gemv"}, {"group_sum", "true"}}).find(".step_scale = false"), std::string::npos);
  EXPECT_NE(name({{"M", "16"}}, {{"path", "gemv"}, {"step_scale", "on"}}).find(".step_scale = true"),
            std::string::npos);
}

// sums_once auto: on for int4 wherever a CTA holds several row tiles (auto's two at 28672 x 8192, M 9-16), off where
// it holds one and for fp4.
TEST(GemmDequantSpec, SumsOnceWhereAnInt4CtaHoldsSeveralTiles) {
  auto name = [](const KV& p, const KV& c) { return instance(p, c).name_expression; };
  const KV gv = {{"path", "gemv"}};
  const KV wide = {{"M", "16"}, {"N", "28672"}, {"K", "8192"}}, deep = {{"M", "16"}, {"N", "8192"}, {"K", "28672"}};
  for (const char* m : {"9", "12", "16"})
    EXPECT_NE(name({{"M", m}, {"N", "28672"}, {"K", "8192"}}, gv).find(".tile_loop = true, .sums_once = true"),
              std::string::npos)
        << m;
  EXPECT_NE(name(wide, {{"path", "gemv"}, {"sums_once", "off"}}).find(".sums_once = false"), std::string::npos);
  EXPECT_NE(name(deep, gv).find(".tile_loop = false, .sums_once = false"), std::string::npos);
  EXPECT_NE(name(deep, {{"path", "gemv"}, {"tile_rounds", "2"}}).find(".sums_once = true"), std::string::npos);
  // fp4: one tile a CTA by auto since gemvh200; two asked for, sums_once stays off unless asked for too.
  const KV fp4 = {{"M", "16"}, {"N", "28672"}, {"K", "8192"}, {"wtype", "fp4"}, {"group", "128"}};
  EXPECT_NE(name(fp4, gv).find(".tile_loop = false, .sums_once = false"), std::string::npos);
  EXPECT_NE(name(fp4, {{"path", "gemv"}, {"tile_rounds", "2"}}).find(".tile_loop = true, .sums_once = false"),
            std::string::npos);
  EXPECT_NE(name(fp4, {{"path", "gemv"}, {"tile_rounds", "2"}, {"sums_once", "on"}}).find(".sums_once = true"),
            std::string::npos);
}

// scale_copy=smem: where step_scale is on (split schedule, group 128, K a multiple of 1024 for bf16 scales), room for
// the CTA's tile_rounds row tiles' scales, which the plan's shared memory counts (with stage_copy=tma from the first
// 16-byte boundary past the barriers); refused elsewhere; auto = smem for int4 where a CTA holds two row tiles (28672 x
// 8192 at M 9-16) and the split stays.
TEST(GemmDequantSpec, ScaleCopySmemStagesTheTilesStepScales) {
  auto inst = [](const KV& p, const KV& c) { return instance(p, c); };
  const KV smem = {{"path", "gemv"}, {"scale_copy", "smem"}}, gv = {{"path", "gemv"}};
  const KV regs = {{"path", "gemv"}, {"scale_copy", "regs"}};
  const KV wide = {{"M", "16"}, {"N", "28672"}, {"K", "8192"}}, deep = {{"M", "16"}, {"N", "8192"}, {"K", "28672"}};
  for (const char* m : {"9", "12", "16"})
    EXPECT_NE(inst({{"M", m}, {"N", "28672"}, {"K", "8192"}}, gv).name_expression.find(
                  ".step_scale = true, .scale_smem = 2"),
              std::string::npos)
        << m;
  EXPECT_NE(inst(wide, regs).name_expression.find(".scale_smem = 0"), std::string::npos);
  // auto leaves tma builds alone (0.98-0.99x where timed); smem takes them.
  EXPECT_NE(inst(wide, {{"path", "gemv"}, {"stage_copy", "tma"}}).name_expression.find(
                ".scale_smem = 0, .cluster_reduce = false, .stage_rounds = 1, .act_first = false, .permuted = true, "
                ".stage_async = true, .stage_tma = true"),
            std::string::npos);
  EXPECT_NE(inst(wide, {{"path", "gemv"}, {"stage_copy", "tma"}, {"scale_copy", "smem"}}).name_expression.find(
                ".scale_smem = 2"),
            std::string::npos);
  EXPECT_NE(inst(wide, {{"path", "gemv"}, {"tile_rounds", "3"}}).name_expression.find(".scale_smem = 0"),
            std::string::npos);  // (auto: two tiles a CTA, as timed)
  // One tile a CTA (auto with the indexed loop: regs; smem with its stage_copy=tma and multicast; auto with the
  // unrolled loop, auto's since gemv22: smem), fp4 (step_scale auto off), M 8.
  const KV rt = {{"path", "gemv"}, {"step_loop", "runtime"}};
  const KV rt_smem = {{"path", "gemv"}, {"step_loop", "runtime"}, {"scale_copy", "smem"}};
  EXPECT_NE(inst(deep, rt).name_expression.find(".scale_smem = 0"), std::string::npos);
  EXPECT_NE(inst(deep, rt_smem).name_expression.find(".stage_tma = true, .act_multicast = 2"), std::string::npos);
  EXPECT_NE(inst(deep, rt_smem).name_expression.find(".scale_smem = 1"), std::string::npos);
  EXPECT_NE(inst(deep, gv).name_expression.find(".scale_smem = 1"), std::string::npos);
  EXPECT_NE(inst(deep, {{"path", "gemv"}, {"step_loop", "unrolled"}, {"scale_copy", "regs"}}).name_expression.find(
                ".scale_smem = 0"),
            std::string::npos);
  EXPECT_NE(inst(deep, {{"path", "gemv"}, {"scale_copy", "smem"}, {"stage_copy", "async"}}).name_expression.find(
                ".scale_smem = 1"),
            std::string::npos);
  const KV fp4 = {{"M", "16"}, {"N", "28672"}, {"K", "8192"}, {"wtype", "fp4"}, {"group", "128"}};
  EXPECT_NE(inst(fp4, gv).name_expression.find(".scale_smem = 0"), std::string::npos);
  EXPECT_NE(inst(fp4, {{"path", "gemv"}, {"step_scale", "on"}}).name_expression.find(".scale_smem = 0"),
            std::string::npos);
  const KV two = {{"path", "gemv"}, {"tile_rounds", "2"}, {"step_scale", "on"}, {"scale_copy", "smem"}};
  EXPECT_NE(inst(fp4, two).name_expression.find(".stage_tma = false, .act_multicast = 1, .tile_loop = true"),
            std::string::npos);  // (fp4's auto staging there is async)
  EXPECT_NE(inst(fp4, two).name_expression.find(".scale_smem = 2"), std::string::npos);
  KV two_async = two;
  two_async["stage_copy"] = "async";
  EXPECT_NE(inst(fp4, two_async).name_expression.find(".scale_smem = 2"), std::string::npos);
  EXPECT_NE(inst(fp4, {{"path", "gemv"}, {"step_scale", "on"}, {"scale_copy", "smem"}}).name_expression.find(
                ".scale_smem = 1"),
            std::string::npos);  // (one tile a CTA by auto)
  // Elsewhere refused (it was dropped without a word): step_scale off (auto at M 8), the stream schedule, and a row's
  // scales not whole 16-byte chunks (K a multiple of 1024 with bf16 scales, 512 with f32).
  const auto refusal = [](const KV& p, const KV& c) {
    auto r = instantiate(spec(), p, c, limits_for_arch("sm_90a"));
    return r.ok() ? std::string() : r.status().message();
  };
  EXPECT_NE(refusal({{"M", "8"}, {"N", "28672"}, {"K", "8192"}}, smem).find("step_scale=auto is off"), std::string::npos);
  EXPECT_NE(refusal(wide, {{"path", "gemv"}, {"scale_copy", "smem"}, {"step_scale", "off"}}).find("step_scale=off"),
            std::string::npos);
  EXPECT_NE(refusal(wide, {{"path", "gemv"}, {"scale_copy", "smem"}, {"step_scale", "on"}, {"schedule", "stream"}})
                .find("schedule=stream"),
            std::string::npos);
  EXPECT_NE(refusal({{"M", "16"}, {"N", "28672"}, {"K", "8320"}}, smem).find("K a multiple of 1024"), std::string::npos);
  EXPECT_NE(inst({{"M", "16"}, {"N", "28672"}, {"K", "8704"}, {"scale_dtype", "f32"}}, smem)
                .name_expression.find(".scale_smem = 2"),
            std::string::npos);
  // The same grid, the scales' bytes on top of the activations' (2 x 128 rows of a chunk more than their bf16 scales).
  const KernelInstance a = inst(wide, regs), b = inst(wide, smem);
  EXPECT_EQ(a.launch.grid.x, b.launch.grid.x);
  EXPECT_EQ(a.launch.grid.y, b.launch.grid.y);
  const std::uint32_t steps = (8192 / 128 + a.launch.grid.y - 1) / a.launch.grid.y;
  EXPECT_EQ(b.launch.dynamic_smem, a.launch.dynamic_smem + 2 * 128 * 16 * ((steps * 2 + 15) / 16 + 1));
  // With stage_copy=tma (8192 x 28672: one tile a CTA, 13 steps, an odd number of 8-byte barriers): the same grid,
  // the scales from 8 bytes past the barriers' end, one row tile's.
  const KernelInstance c = inst(deep, {{"path", "gemv"}, {"scale_copy", "regs"}, {"step_loop", "runtime"}}),
                       d = inst(deep, rt_smem);
  EXPECT_EQ(c.launch.grid.x, d.launch.grid.x);
  EXPECT_EQ(c.launch.grid.y, d.launch.grid.y);
  const std::uint32_t deep_steps = (28672 / 128 + c.launch.grid.y - 1) / c.launch.grid.y;
  EXPECT_EQ(deep_steps, 13u);
  EXPECT_EQ(d.launch.dynamic_smem, c.launch.dynamic_smem + 8 + 128 * 16 * ((deep_steps * 2 + 15) / 16 + 1));
}

// gemv22's autos (H100, docs/perf.md: each won all four alternated rounds by medians and minima against the old
// default): each timed point's auto config is the timed build, name, grid, split and cluster alike.
TEST(GemmDequantSpec, Gemv22AutosAreTheTimedBuilds) {
  const auto split_steps = [](const KernelInstance& k) {
    for (const ArgSpec& a : k.args)
      if (a.name == "split_steps") return static_cast<std::int64_t>(a.value);
    return std::int64_t{-1};
  };
  const KV wide = {{"N", "28672"}, {"K", "8192"}}, tall = {{"N", "8192"}, {"K", "28672"}};
  const KV fp4 = {{"N", "8192"}, {"K", "28672"}, {"wtype", "fp4"}, {"group", "128"}};
  struct Case {
    const char* m;
    KV shape;
    KV timed;
  };
  const std::vector<Case> cases = {
      // (gemv23: int4 28672 x 8192 M 9-16 and 8192 x 28672 M 9-16 rolled in 2-step iterations since, step_unroll.)
      {"16", wide,
       {{"step_loop", "unrolled"}, {"step_unroll", "2"}, {"stage_copy", "async"}, {"batch", "off"},
        {"scale_copy", "smem"}}},
      {"16", tall,
       {{"step_loop", "unrolled"}, {"step_unroll", "2"}, {"stage_copy", "tma"}, {"act_multicast", "1"},
        {"batch", "off"}, {"scale_copy", "smem"}}},
      {"12", tall,
       {{"step_loop", "unrolled"}, {"step_unroll", "2"}, {"stage_copy", "tma"}, {"act_multicast", "2"},
        {"batch", "off"}, {"scale_copy", "smem"}}},
      {"9", tall,
       {{"step_loop", "unrolled"}, {"step_unroll", "2"}, {"stage_copy", "async"}, {"batch", "off"},
        {"scale_copy", "smem"}}},
      {"8", wide, {{"step_loop", "unrolled"}, {"splits", "8"}}},
      {"9", fp4, {{"step_loop", "unrolled"}, {"stage_copy", "async"}, {"batch", "on"}}},
      {"12", fp4, {{"step_loop", "unrolled"}, {"stage_copy", "async"}, {"batch", "on"}}},
      // unchanged: int4 28672 x 8192 M 9 and 12 (unrolled, async, batch off, smem)
      {"12", wide,
       {{"step_loop", "unrolled"}, {"step_unroll", "2"}, {"stage_copy", "async"}, {"batch", "off"},
        {"scale_copy", "smem"}}},
      {"9", wide,
       {{"step_loop", "unrolled"}, {"step_unroll", "2"}, {"stage_copy", "async"}, {"batch", "off"},
        {"scale_copy", "smem"}}}};
  for (const Case& c : cases) {
    KV problem = c.shape;
    problem["M"] = c.m;
    KV timed = c.timed;
    timed["path"] = "gemv";
    const KernelInstance a = instance(problem, {{"path", "gemv"}}), t = instance(problem, timed);
    SCOPED_TRACE(t.problem.to_string() + " " + t.config.to_string());
    EXPECT_EQ(a.name_expression, t.name_expression);
    EXPECT_EQ(a.launch.grid.x, t.launch.grid.x);
    EXPECT_EQ(a.launch.grid.y, t.launch.grid.y);
    EXPECT_EQ(a.launch.cluster.x, t.launch.cluster.x);
    EXPECT_EQ(a.launch.dynamic_smem, t.launch.dynamic_smem);
    EXPECT_EQ(split_steps(a), split_steps(t));
  }
  // The timed splits: int4 M 8 8 of 8 steps (the model's 4 of 16 halved), the tall grid's unrolled 16 of 14.
  EXPECT_EQ(instance({{"M", "8"}, {"N", "28672"}, {"K", "8192"}}, {{"path", "gemv"}}).launch.grid.y, 8u);
  EXPECT_EQ(instance({{"M", "8"}, {"N", "28672"}, {"K", "8192"}}, {{"path", "gemv"}, {"splits", "4"}, {"step_loop", "unrolled"}})
                .launch.grid.y, 4u);
  EXPECT_EQ(instance({{"M", "16"}, {"N", "8192"}, {"K", "28672"}}, {{"path", "gemv"}}).launch.grid.y, 16u);
  // The old defaults stay reachable: the indexed loop on the tall grid is the tma multicast batched build.
  EXPECT_EQ(instance({{"M", "16"}, {"N", "8192"}, {"K", "28672"}}, {{"path", "gemv"}, {"step_loop", "runtime"}})
                .name_expression,
            instance({{"M", "16"}, {"N", "8192"}, {"K", "28672"}},
                     {{"path", "gemv"}, {"step_loop", "runtime"}, {"stage_copy", "tma"}, {"act_multicast", "2"},
                      {"batch", "on"}, {"scale_copy", "regs"}})
                .name_expression);
}

}  // namespace
}  // namespace tl
