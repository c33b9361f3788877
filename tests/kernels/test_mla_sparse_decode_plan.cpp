// mla.sparse_decode's plan against the facts its producer relies on: the one-xor addressing equals the tile's SW128
// layout, a cache row's raw chunks land inside the row's own 128-byte panel rows and apart, the dequant fragments put
// lane l's 16 values where cache bytes 16l .. 16l + 15 belong (the format's NoPE values in order, group l / 8), the
// stores of a quarter warp hit 8 different 16-byte bank groups, and the shared memory and registers fit.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <set>

#include "library/library.hpp"
#include "mla/mla_sparse_decode_plan.hpp"
#include "tile/layout_spec.hpp"

namespace tl {
namespace {

std::vector<MlaSparseDecodeConfig> all_configs() {
  std::vector<MlaSparseDecodeConfig> out;
  for (int qk : {1, 2})
    for (bool vec : {false, true})
      for (int rows : {1, 2})
        for (bool cross : {false, true})
          for (MlaRopeDirect rope : {MlaRopeDirect::off, MlaRopeDirect::on, MlaRopeDirect::unpaired})
            for (bool ahead : {false, true})
              for (MlaSparseGather gather : {MlaSparseGather::copies, MlaSparseGather::regs, MlaSparseGather::paired})
                for (MlaPeerCopy peer : {MlaPeerCopy::store, MlaPeerCopy::bulk, MlaPeerCopy::bulk_half})
                  for (int c1 : {0, 2, 4})
                    out.push_back({.qk_warpgroups = qk, .vec_store = vec, .dequant_rows = rows, .crossover = cross,
                                   .rope_direct = rope, .lookahead = ahead, .gather = gather, .hybrid = c1 > 0,
                                   .peer_copy = peer, .c1_rows = c1});
  return out;
}

// The kernel addresses (16 w + t, col) as offset(t, 0) + (offset(16 w, col) ^ term(offset(t, 0))), in bytes.
TEST(MlaSparseDecodePlan, OneXorAddressingIsTheTile) {
  const MlaSparseDecodePlan p = make_plan(MlaSparseDecodeConfig{});
  const SwizzledLayout& tile = p.mma.tile;
  for (int w = 0; w < p.producer_warps; ++w)
    for (int t = 0; t < p.rows_per_warp; ++t)
      for (int col = 0; col < kMlaDimQK; ++col) {
        const int lin = tile.layout()(t, 0);
        const int fast = 2 * lin + ((2 * tile.layout()(p.rows_per_warp * w, col)) ^ (2 * tile.swizzle().term(lin)));
        ASSERT_EQ(fast, 2 * tile(p.rows_per_warp * w + t, col)) << w << "," << t << "," << col;
      }
}

// Raw chunk j of row r (cp.async's 16 bytes) is 16 contiguous bytes of row r's own panel rows, 16-byte aligned,
// and the 41 chunks of a row are apart; they end before the RoPE columns the row's dequant writes last.
TEST(MlaSparseDecodePlan, RawChunksStayInTheirRow) {
  const MlaSparseDecodePlan p = make_plan(MlaSparseDecodeConfig{});
  EXPECT_EQ(kMlaFp8Chunks * 16, kMlaFp8RowBytes);
  EXPECT_EQ(kMlaFp8ScaleChunk * 16, kMlaFp8Nope);
  EXPECT_LE(p.raw_col(kMlaFp8Chunks - 1) + 8, kMlaDimQK);
  for (int r = 0; r < p.mma.rows; ++r) {
    std::set<int> at;
    for (int j = 0; j < kMlaFp8Chunks; ++j) {
      const int b = 2 * p.mma.tile(r, p.raw_col(j));
      EXPECT_EQ(b % 16, 0);
      for (int e = 1; e < 8; ++e) ASSERT_EQ(2 * p.mma.tile(r, p.raw_col(j) + e), b + 2 * e);
      // the 128-byte panel row of tile row r: its first byte is 2 * tile(r, 64 * panel)
      const int panel = p.raw_col(j) / p.mma.panel_cols;
      EXPECT_EQ(b / 128, 2 * p.mma.tile(r, panel * p.mma.panel_cols) / 128) << r << "," << j;
      EXPECT_TRUE(at.insert(b).second);
    }
  }
}

// NoPE: producer thread (lane l, warp w), value (e, t) is column 16 l + e of row 16 w + t: cache byte 16 l + e of the
// row's token (the format stores NoPE value c at byte c), so lane l's raw chunk l holds its values and its scale is
// group (16 l) / 128 = l / 8. RoPE: column 512 + 2 l + e, the bf16 at byte 528 + 4 l + 2 e.
TEST(MlaSparseDecodePlan, DequantFragmentsFollowTheFormat) {
  const MlaSparseDecodePlan p = make_plan(MlaSparseDecodeConfig{});
  ASSERT_TRUE(p.nope.ok() && p.rope.ok());
  EXPECT_TRUE(p.nope.linear() && p.rope.linear());
  EXPECT_EQ(p.nope.num_threads(), 128);
  std::set<std::pair<int, int>> nope, rope;
  for (int th = 0; th < 128; ++th) {
    const int lane = th % 32, warp = th / 32;
    for (int v = 0; v < p.nope.num_values(); ++v) {
      const TileCoord c = p.nope(th, v);
      EXPECT_EQ(c.row / p.rows_per_warp, warp);
      EXPECT_EQ(c.col / 16, lane);
      EXPECT_EQ(c.col / kMlaFp8Group, lane / 8);
      nope.insert({c.row, c.col});
    }
    for (int v = 0; v < p.rope.num_values(); ++v) {
      const TileCoord c = p.rope(th, v);
      EXPECT_EQ(c.row / p.rows_per_warp, warp);
      EXPECT_EQ(c.col / 2, lane);
      rope.insert({c.row, c.col});
    }
  }
  EXPECT_EQ(nope.size(), static_cast<std::size_t>(64 * kMlaDimV));
  EXPECT_EQ(rope.size(), static_cast<std::size_t>(64 * (kMlaDimQK - kMlaDimV)));
}

// A 16-byte access is served a quarter warp (8 lanes) at a time; no bank conflict when the 8 lanes touch 8 different
// 16-byte positions modulo 128 bytes. The producer's: the raw chunk reads (lane l: chunk l) and the two NoPE stores
// (lane l: the chunk of columns 16l + 8 * first first, first = bit 2 of l, then the other).
TEST(MlaSparseDecodePlan, QuarterWarpsTouchEightBankGroups) {
  const MlaSparseDecodePlan p = make_plan(MlaSparseDecodeConfig{});
  for (int row = 0; row < p.mma.rows; ++row)
    for (int q = 0; q < 4; ++q)
      for (int access = 0; access < 3; ++access) {
        std::set<int> groups;
        for (int lane = 8 * q; lane < 8 * q + 8; ++lane) {
          const int first = (lane >> 2) & 1;
          const int col = access == 0 ? p.raw_col(lane) : p.nope(lane, 0).col + 8 * (access == 1 ? first : 1 - first);
          groups.insert((2 * p.mma.tile(row, col) % 128) / 16);
        }
        EXPECT_EQ(groups.size(), 8u) << row << "," << q << "," << access;
      }
}

// peer_copy=bulk: warp w of the CTA of rank k sends rows 16 w + 8 k .. + 7 as peer_copy_panels bulk copies of
// peer_copy_bytes at peer_copy_offset: together exactly the bytes of those rows' columns (all 576, or with rope_direct
// the 512 NoPE ones) in the swizzled tile, no byte twice and no other row's; 16-byte aligned; the four warps' copies
// are the half's remote_bytes, and the two ranks' cover the whole tile (or its NoPE panels).
TEST(MlaSparseDecodePlan, PeerCopiesCoverExactlyTheWarpsRows) {
  const MlaSparseDecodePlan p = make_plan(MlaSparseDecodeConfig{.crossover = true, .peer_copy = MlaPeerCopy::bulk});
  const SwizzledLayout& tile = p.mma.tile;
  const int half = p.rows_per_warp / 2;
  EXPECT_EQ(p.peer_copy_parts(MlaPeerCopy::bulk), 1);
  EXPECT_EQ(p.peer_copy_parts(MlaPeerCopy::bulk_half), 2);
  for (int parts : {1, 2}) {
    for (bool rd : {false, true}) {
      const int cols = rd ? kMlaDimV : kMlaDimQK;
      std::set<int> both;
      for (unsigned rank = 0; rank < 2; ++rank) {
        unsigned sent = 0;
        for (int w = 0; w < p.producer_warps; ++w) {
          std::set<int> copied, rows;
          for (int part = 0; part < parts; ++part) {
            std::set<int> piece, piece_rows;
            for (int k = 0; k < p.peer_copy_panels(rd); ++k) {
              const unsigned off = p.peer_copy_offset(w, rank, k, part, parts), n = p.peer_copy_bytes(parts);
              EXPECT_EQ(off % 16, 0u);
              EXPECT_EQ(n % 16, 0u);
              for (unsigned b = off; b < off + n; ++b) {
                ASSERT_TRUE(copied.insert(static_cast<int>(b)).second) << w << "," << k << "," << part;
                piece.insert(static_cast<int>(b));
              }
              sent += n;
            }
            // Piece `part`: exactly rows part * half / parts .. of the warp's half (what is stored when it goes).
            for (int t = part * half / parts; t < (part + 1) * half / parts; ++t)
              for (int col = 0; col < cols; ++col)
                for (int e = 0; e < 2; ++e)
                  piece_rows.insert(2 * tile(p.rows_per_warp * w + half * static_cast<int>(rank) + t, col) + e);
            EXPECT_EQ(piece, piece_rows) << "rank " << rank << " warp " << w << " part " << part << "/" << parts;
          }
          for (int t = 0; t < half; ++t)
            for (int col = 0; col < cols; ++col)
              for (int e = 0; e < 2; ++e) rows.insert(2 * tile(p.rows_per_warp * w + half * static_cast<int>(rank) + t, col) + e);
          EXPECT_EQ(copied, rows) << "rank " << rank << " warp " << w << " rope_direct " << rd << " parts " << parts;
          for (int b : copied) EXPECT_TRUE(both.insert(b).second);
        }
        EXPECT_EQ(sent, p.remote_bytes(rd)) << rank << "," << rd;
      }
      EXPECT_EQ(both.size(), static_cast<std::size_t>(2 * p.mma.rows * cols));
    }
  }
}

TEST(MlaSparseDecodePlan, SharedMemoryAndRegistersFit) {
  for (const auto& c : all_configs()) {
    const MlaSparseDecodePlan p = make_plan(c);
    EXPECT_LE(p.smem_bytes, 232448u);  // sm_90's opt-in limit per block
    EXPECT_EQ(p.off_valid % 8, 0u);
    EXPECT_GE(p.off_valid, p.mma.smem_used);  // after everything mla.decode's plan places
    EXPECT_EQ(p.off_remote, p.off_valid + 16u);  // mbarriers: 8-byte aligned
    EXPECT_EQ(p.smem_used, p.off_remote + 16u);
    // Crossover: a CTA sends the peer half the block's rows, 1152 bytes each (1024 with rope_direct).
    EXPECT_EQ(p.remote_bytes(false), 32u * 1152u);
    EXPECT_EQ(p.remote_bytes(true), 32u * 1024u);
    // rope_direct copies RoPE chunks to columns 512..575 while the raw chunks of the same row occupy columns 0 ..
    // 8 * 41: they must not meet.
    EXPECT_LE(p.raw_col(kMlaFp8Chunks), kMlaDimV);
    // setmaxnreg moves registers between warpgroups: the sum stays within what 384 threads start with (168 each).
    EXPECT_LE(128 * (p.producer_regs + p.consumer_regs + p.consumer1_regs), 384 * 168);
    for (int r : {p.producer_regs, p.consumer_regs, p.consumer1_regs}) {
      EXPECT_EQ(r % 8, 0);  // setmaxnreg's granularity and range
      EXPECT_GE(r, 24);
      EXPECT_LE(r, 256);
    }
    // gather=regs: each warp's rows of a block (16, or 8 with crossover) are whole rings.
    EXPECT_EQ(p.rows_per_warp / 2 % p.gather_rows, 0);
    // c1_rows: only beside the hybrid register producer; consumer 1 takes 8 of the producer's registers for its rows,
    // the producer's copied rows (between its ring and consumer 1's) are whole batches of dequant_rows.
    EXPECT_EQ(p.helper_rows, c.gather == MlaSparseGather::regs && c.hybrid ? c.c1_rows : 0);
    if (p.helper_rows > 0) {
      EXPECT_EQ(p.consumer1_regs, 176);
      EXPECT_EQ(p.producer_regs, 120);
      const int copied = p.rows_per_warp - p.helper_rows - p.gather_rows;
      EXPECT_GT(copied, 0);
      EXPECT_EQ(copied % c.dequant_rows, 0);
      EXPECT_EQ(p.helper_rows % 2, 0);
    }
  }
}

// The name expression names every field, so two configs never share a cache entry.
TEST(MlaSparseDecodePlan, NameExpressionsDiffer) {
  std::set<std::string> names;
  for (const auto& c : all_configs()) {
    const std::string n = name_expression(c);
    EXPECT_NE(n.find(".dequant_rows = "), std::string::npos) << n;
    EXPECT_TRUE(names.insert(n).second) << n;
  }
}

// prmt_cvt: prmt(a, b, prmt_cvt_selector(first, i)) (PTX's default mode: bytes 0-3 of a, 4-7 of b; a selector nibble
// with bit 3 set replicates the chosen byte's sign), an arithmetic shift right by 4 and kPrmtCvtMask give, for every
// pair of e4m3 bytes, the old conversion's bf16 pair (e4m3x4_to_bf16x4_scaled: [b0, 0, b1, 0] moved into bf16's sign,
// low exponent and top mantissa bits) taken from a when !first and from b when first, whatever the other bytes hold.
std::uint32_t prmt(std::uint32_t a, std::uint32_t b, std::uint32_t sel) {
  const std::uint64_t bytes = a | (std::uint64_t{b} << 32);
  std::uint32_t r = 0;
  for (int i = 0; i < 4; ++i) {
    const std::uint32_t nib = (sel >> (4 * i)) & 0xFu;
    std::uint32_t byte = (bytes >> (8 * (nib & 7u))) & 0xFFu;
    if (nib & 8u) byte = (byte & 0x80u) ? 0xFFu : 0u;
    r |= byte << (8 * i);
  }
  return r;
}
std::uint32_t old_pair(std::uint32_t lo_byte, std::uint32_t hi_byte) {
  const std::uint32_t w = (hi_byte << 24) | (lo_byte << 8);  // __byte_perm(x, 0, 0x1404)'s [b1, 0, b0, 0]
  return (w & 0x80008000u) | ((w >> 4) & 0x07F007F0u);
}
// The value a bf16 half stands for, times 2^120, against the e4m3 byte's own value: the conversion is exact.
double bf16_value(std::uint32_t h) {
  float f;
  const std::uint32_t bits = h << 16;
  std::memcpy(&f, &bits, 4);
  return std::ldexp(static_cast<double>(f), 120);
}
double e4m3_value(std::uint32_t byte) {
  const int e = (byte >> 3) & 0xF, m = byte & 7;
  const double v = e ? std::ldexp(1.0 + m / 8.0, e - 7) : std::ldexp(m / 8.0, -6);
  return byte & 0x80u ? -v : v;
}

TEST(MlaSparseDecodePlan, PrmtCvtIsTheOldConversion) {
  int checked = 0;
  for (std::uint32_t x0 = 0; x0 < 256; ++x0)
    for (std::uint32_t x1 = 0; x1 < 256; ++x1)
      for (int i = 0; i < 2; ++i)
        for (bool first : {false, true}) {
          // The pair's bytes at positions 2i, 2i + 1 of the chosen word; the rest (and the other word) arbitrary.
          const std::uint32_t noise = (x0 * 0x9E3779B1u) ^ (x1 * 0x85EBCA77u);
          const std::uint32_t word = (noise & ~(0xFFFFu << (16 * i))) | ((x0 | (x1 << 8)) << (16 * i));
          const std::uint32_t other = ~noise * 0xC2B2AE3Du;
          const std::uint32_t a = first ? other : word, b = first ? word : other;
          const std::uint32_t w = prmt(a, b, prmt_cvt_selector(first, i));
          const std::uint32_t got = static_cast<std::uint32_t>(static_cast<std::int32_t>(w) >> 4) & kPrmtCvtMask;
          ASSERT_EQ(got, old_pair(x0, x1)) << std::hex << x0 << " " << x1 << " i " << i << " first " << first;
          if ((x0 & 0x7F) != 0x7F) {  // not NaN
            EXPECT_EQ(bf16_value(got & 0xFFFFu), e4m3_value(x0)) << std::hex << x0;
          }
          ++checked;
        }
  EXPECT_EQ(checked, 4 * 65536);
  // The two pairs' selectors a chunk are + 0x2222 apart (the kernel adds it to the lane's one register).
  for (bool first : {false, true}) {
    EXPECT_EQ(prmt_cvt_selector(first, 1), prmt_cvt_selector(first, 0) + 0x2222u);
  }
}

// prmt_cvt is in the name only when on: every other config's name, and its NVRTC cache key, stays the default's.
TEST(MlaSparseDecodePlan, PrmtCvtNamedOnlyWhenOn) {
  MlaSparseDecodeConfig c{};
  const std::string off = name_expression(c);
  EXPECT_EQ(off.find("prmt_cvt"), std::string::npos) << off;
  c.prmt_cvt = true;
  EXPECT_NE(name_expression(c).find(".prmt_cvt = true"), std::string::npos) << name_expression(c);
}

}  // namespace
}  // namespace tl
