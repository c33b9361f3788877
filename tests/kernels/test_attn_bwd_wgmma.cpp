// attn.bwd.wgmma without a GPU: its plan against TMA and wgmma facts (the swizzled tiles, the N-/M-major views and
// descriptor steps, P^T and dS^T as A registers, conflict-free dS stores), the spec's refusals and arguments, and
// every config compiling for sm_90a.
#include <gtest/gtest.h>

#include <set>
#include <tuple>

#include "attention/attn_bwd_wgmma_plan.hpp"
#include "library/library.hpp"
#include "tests/support/scratch_jit.hpp"
#include "tile/layout_spec.hpp"

namespace tl {
namespace {

using KV = std::map<std::string, std::string>;

const KernelSpec& spec() { return *library_registry().find("attn.bwd.wgmma").value(); }

std::vector<AttnBwdWgmmaConfig> configs() {
  std::vector<AttnBwdWgmmaConfig> v;
  for (int dim : {64, 128})
    for (int st : {1, 2}) v.push_back({.dim = dim, .block_M = attn_bwd_wgmma_block_m(dim), .num_stages = st, .d_pass = false});
  // Deferred lists of other lengths: odd and even counts (the mbarriers after the list stay 8-byte aligned).
  for (int n : {15, 16}) v.push_back({.dim = 128, .block_M = 64, .num_stages = 2, .defer_tiles = n});
  // D by the pre-pass (the default): stages of Q and dO only.
  for (int dim : {64, 128})
    for (int st : {1, 2, 3})
      v.push_back({.dim = dim, .block_M = attn_bwd_wgmma_block_m(dim), .num_stages = st, .d_pass = true});
  // The warpgroups' turns at dQ: two dS buffers and a second staging mbarrier.
  for (int dim : {64, 128})
    for (int st : {1, 2})
      v.push_back({.dim = dim, .block_M = attn_bwd_wgmma_block_m(dim), .num_stages = st, .dq_alt = true});
  // Key blocks in sequence (kv_blocks): the kv_empty mbarrier after the others.
  for (int dim : {64, 128})
    v.push_back({.dim = dim, .block_M = attn_bwd_wgmma_block_m(dim), .dq_alt = true, .kv_blocks = 2});
  return v;
}

// TMA's SWIZZLE_128B image of a (rows, cols) box sequence: 16-byte chunk j of row r at r * 128 + (j ^ (r % 8)) * 16,
// one box of 64 columns after another.
int tma_sw128_byte(int rows, int r, int c) {
  return (c / 64) * rows * 128 + r * 128 + (((c % 64) / 8) ^ (r % 8)) * 16 + (c % 8) * 2;
}

TEST(AttnBwdWgmmaPlan, TilesAreWhatTmaWritesAndTheirTransposedViews) {
  for (const AttnBwdWgmmaConfig& c : configs()) {
    const AttnBwdWgmmaPlan p = make_plan(c);
    ASSERT_TRUE(p.ok()) << name_expression(c);
    for (int r = 0; r < c.block_M; ++r)
      for (int d = 0; d < c.dim; ++d) {
        ASSERT_EQ(p.byte(p.smem_Q, r, d), tma_sw128_byte(c.block_M, r, d));
        ASSERT_EQ(p.byte(p.smem_Qt, d, r), p.byte(p.smem_Q, r, d));  // the N-major B view of the same bytes
      }
    for (int r = 0; r < c.block_N; ++r)
      for (int d = 0; d < c.dim; ++d) {
        ASSERT_EQ(p.byte(p.smem_K, r, d), tma_sw128_byte(c.block_N, r, d));
        ASSERT_EQ(p.byte(p.smem_Kt, d, r), p.byte(p.smem_K, r, d));
      }
    // dS, M-major (query-contiguous): the (key, query) image of a TMA box sequence over 64 queries at a time, the
    // canonical 128-byte-swizzled MN-major layout wgmma reads.
    for (int q = 0; q < c.block_M; ++q)
      for (int k = 0; k < c.block_N; ++k) ASSERT_EQ(p.byte(p.smem_dS, q, k), tma_sw128_byte(c.block_N, k, q));
  }
}

// Descriptor starts: a K-major k16 step is +32 bytes inside the 128-byte row and the next box +rows * 128 (rows of
// that tile: block_M for Q and dO, block_N for K and V); an N-/M-major k16 step is 16 rows of 128 bytes; a leading
// byte offset is one box.
TEST(AttnBwdWgmmaPlan, DescriptorStepsAndParts) {
  for (const AttnBwdWgmmaConfig& c : configs()) {
    const AttnBwdWgmmaPlan p = make_plan(c);
    for (int kk = 0; kk < c.dim / 16; ++kk) {
      EXPECT_EQ(p.q_k16[kk], (kk / 4) * c.block_M * 128 + (kk % 4) * 32);
      EXPECT_EQ(p.k_k16[kk], (kk / 4) * c.block_N * 128 + (kk % 4) * 32);
    }
    for (int kt = 0; kt < c.block_M / 16; ++kt) EXPECT_EQ(p.qt_k16[kt], 2048 * kt);
    for (int kk = 0; kk < c.block_N / 16; ++kk) {
      EXPECT_EQ(p.dq_k16_a[kk], 2048 * kk);
      EXPECT_EQ(p.dq_k16_b[kk], 2048 * kk);
    }
    EXPECT_EQ(p.q_box, c.block_M * 128);
    EXPECT_EQ(p.kv_box, c.block_N * 128);
    EXPECT_EQ(p.ds_box, c.block_N * 128);
    EXPECT_EQ(p.kv_wg, 64 * 128);  // warpgroup 1's keys: 64 rows into the first box
    // dQ's parts tile the (block_M, dim) tile: one m64n64 wgmma each, its A and B at its first row and column.
    EXPECT_EQ(p.dq_m, 64);
    EXPECT_EQ(p.dq_n, 64);
    EXPECT_NE(p.dq_row_wg == 0, p.dq_col_wg == 0);  // split along exactly one side
    EXPECT_EQ((p.dq_row_wg ? 2 : 1) * p.dq_m, c.block_M);
    EXPECT_EQ((p.dq_col_wg ? 2 : 1) * p.dq_n, c.dim);
    EXPECT_EQ(p.dq_a_wg, p.byte(p.smem_dS, p.dq_row_wg, 0));
    EXPECT_EQ(p.dq_b_wg, p.byte(p.smem_Kt, p.dq_col_wg, 0));
    EXPECT_EQ(p.dq_a_wg % 1024, 0);
    EXPECT_EQ(p.dq_b_wg % 1024, 0);
  }
}

// Shared memory: tiles on the 1024-byte swizzle atom, a stage of Q, dO and O (d_pass: no O), barriers 8-byte aligned
// after the row values (one set per stage); the defaults (2 stages) fit the H100's 227 KiB at both dims, and with
// d_pass 3 stages do; dq_alt (a second dS tile and staging mbarrier) fits with 2.
TEST(AttnBwdWgmmaPlan, RegionsAndBytes) {
  for (const AttnBwdWgmmaConfig& c : configs()) {
    const AttnBwdWgmmaPlan p = make_plan(c);
    for (int off : {p.k_offset, p.v_offset, p.stage(0), p.stage(c.num_stages - 1), p.ds_offset, p.q_bytes})
      EXPECT_EQ(off % 1024, 0);
    EXPECT_EQ(p.stage_bytes, (c.d_pass ? 2 : 3) * p.q_bytes);
    EXPECT_EQ(p.ds_offset, p.stage(c.num_stages));
    EXPECT_EQ(p.dq_offset, p.ds_offset + (c.dq_alt ? 2 : 1) * p.ds_bytes);
    EXPECT_EQ(p.dq_offset % 16, 0);  // the bulk reduce's source
    EXPECT_EQ(p.dq_bytes, 4 * c.block_M * c.dim);
    EXPECT_EQ(p.rows_bytes, 2 * 4 * c.block_M);  // D and LSE, f32 per row
    EXPECT_EQ(p.defer_offset, p.rows_offset + c.num_stages * p.rows_bytes);
    EXPECT_GE(p.bar_kv_full, p.defer_offset + 4 * (1 + c.defer_tiles));  // the count, then the tiles
    for (int bar :
         {p.bar_kv_full, p.bar_full, p.bar_empty, p.bar_dq_full, p.bar_dq_empty, p.bar_dq_load, p.bar_rows_full})
      EXPECT_EQ(bar % 8, 0);
    EXPECT_GE(p.bar_dq_load, p.bar_dq_empty + 8);
    EXPECT_GE(p.bar_rows_full, p.bar_dq_load + 8);
    EXPECT_EQ(p.bar_dq_empty1, p.bar_rows_full + 8 * c.num_stages);
    EXPECT_EQ(p.bar_kv_empty, p.bar_dq_empty1 + (c.dq_alt ? 8 : 0));
    EXPECT_EQ(p.bytes, p.bar_kv_empty + (c.kv_blocks > 1 ? 8 : 0) + 1024);
    if (c.num_stages <= 2 || c.d_pass) {
      EXPECT_LE(p.bytes, 232448);
    }
  }
}

// The accumulators are the wgmma atoms, and S^T's value v is, in the same thread, A value 2 (a_reg[v] % 4) + v % 2
// of k16 step a_reg[v] / 4 (P^T and dS^T need no data movement to feed dV and dK).
TEST(AttnBwdWgmmaPlan, PAndDsInRegisters) {
  for (int dim : {64, 128}) {
    const AttnBwdWgmmaConfig c{.dim = dim, .block_M = attn_bwd_wgmma_block_m(dim)};
    const AttnBwdWgmmaPlan p = make_plan(c);
    EXPECT_TRUE(fragment_spec(p.acc_S, "wgmma.m64n" + std::to_string(c.block_M) + "k16.f32.C"));
    EXPECT_TRUE(fragment_spec(p.frag_A, "wgmma.m64k16.bf16.A"));
    EXPECT_TRUE(fragment_spec(p.acc_KV, "wgmma.m64n" + std::to_string(dim) + "k16.f32.C"));
    EXPECT_TRUE(fragment_spec(p.acc_dQ, "wgmma.m64n64k16.f32.C"));
    for (int t = 0; t < 128; ++t)
      for (int v = 0; v < c.block_M / 2; ++v) {
        const TileCoord x = p.acc_S(t, v), b = p.acc_S(t, 0);
        ASSERT_EQ(x, (TileCoord{b.row + p.s_values.at[v].row, b.col + p.s_values.at[v].col}));
        ASSERT_EQ(x.col / 16, p.a_reg[v] / 4);
        ASSERT_EQ(p.frag_A.owner(x.row, x.col % 16), (ThreadValue{t, 2 * (p.a_reg[v] % 4) + v % 2}));
      }
  }
}

// The dQ staging order covers the tile once, in 16-byte chunks, and a warp's chunk k stores are 512 contiguous bytes.
TEST(AttnBwdWgmmaPlan, DqStagingIsOneTileOfContiguousWarpStores) {
  for (int dim : {64, 128}) {
    const AttnBwdWgmmaConfig c{.dim = dim, .block_M = attn_bwd_wgmma_block_m(dim)};
    const AttnBwdWgmmaPlan p = make_plan(c);
    std::set<int> chunks;
    for (int t = 0; t < 256; ++t)
      for (int k = 0; k < p.dq_n / 2 / 4; ++k) {
        const int at = p.dq_chunk(t, k);
        ASSERT_EQ(at % 16, 0);
        ASSERT_LT(at, p.dq_bytes);
        chunks.insert(at);
        if (t % 32 != 0) {
          EXPECT_EQ(at, p.dq_chunk(t - 1, k) + 16);
        }
      }
    EXPECT_EQ(static_cast<int>(chunks.size()) * 16, p.dq_bytes);
  }
}

// A warp's 4-byte dS stores (values v, v + 1: queries q, q + 1 of one key) hit 32 different banks, each pair whole.
TEST(AttnBwdWgmmaPlan, DsStoresAreWholeAndConflictFree) {
  for (int dim : {64, 128}) {
    const AttnBwdWgmmaConfig c{.dim = dim, .block_M = attn_bwd_wgmma_block_m(dim)};
    const AttnBwdWgmmaPlan p = make_plan(c);
    for (int w = 0; w < 2; ++w)
      for (int warp = 0; warp < 4; ++warp)
        for (int v = 0; v < c.block_M / 2; v += 2) {
          std::set<int> banks;
          for (int lane = 0; lane < 32; ++lane) {
            const TileCoord x = p.acc_S(32 * warp + lane, v);
            const int at = p.byte(p.smem_dS, x.col, 64 * w + x.row);
            ASSERT_EQ(at % 4, 0);
            ASSERT_EQ(p.byte(p.smem_dS, x.col + 1, 64 * w + x.row), at + 2);
            banks.insert(at / 4 % 32);
          }
          EXPECT_EQ(banks.size(), 32u);
        }
  }
}

TEST(AttnBwdWgmmaPlan, EveryFieldChangesTheName) {
  std::set<std::string> names = {name_expression(AttnBwdWgmmaConfig{})};
  for (AttnBwdWgmmaConfig x :
       {AttnBwdWgmmaConfig{.dim = 64}, AttnBwdWgmmaConfig{.block_M = 128}, AttnBwdWgmmaConfig{.block_N = 64},
        AttnBwdWgmmaConfig{.num_stages = 3}, AttnBwdWgmmaConfig{.causal = true}, AttnBwdWgmmaConfig{.bf16 = false},
        AttnBwdWgmmaConfig{.varlen = true},
        AttnBwdWgmmaConfig{.dq_defer = false}, AttnBwdWgmmaConfig{.defer_tiles = 15},
        AttnBwdWgmmaConfig{.section = 4}, AttnBwdWgmmaConfig{.d_pass = false}, AttnBwdWgmmaConfig{.dq_alt = true},
        AttnBwdWgmmaConfig{.uniform_desc = true}, AttnBwdWgmmaConfig{.ds_stsm = true},
        AttnBwdWgmmaConfig{.rows_v4 = true}, AttnBwdWgmmaConfig{.p_mask = kAttnBwdPMaskSplit},
        AttnBwdWgmmaConfig{.dkv_stage = true}, AttnBwdWgmmaConfig{.kv_blocks = 2},
        AttnBwdWgmmaConfig{.dq_lag = true}})
    names.insert(name_expression(x));
  EXPECT_EQ(names.size(), 20u);
}

// dkv_stage: a consumer warpgroup's dK (dV) rows staged in its rows of V by the plan's dkv_chunk cover exactly those
// rows' bytes (with kv_blocks and dq_alt, dkv_in_ds: the first 64 rows x dim x 2 bytes of its own dS buffer), each warp's 4-byte accumulator stores (a value pair of every lane) hit 32 different banks, and each
// quarter-warp's 16-byte row reads (the kernel's thread order: chunk i % (dim / 8) of row i / (dim / 8)) 8 different
// 16-byte bank groups.
TEST(AttnBwdWgmmaPlan, DkvStagingCoversTheWarpgroupsRowsOfV) {
  for (const AttnBwdWgmmaConfig& c : configs()) {
    const AttnBwdWgmmaPlan p = make_plan(c);
    for (int w = 0; w < 2; ++w) {
      std::set<int> staged, rows_of_v;
      for (int r = 0; r < 64; ++r)
        for (int c8 = 0; c8 < c.dim / 8; ++c8)
          for (int b = 0; b < 16; ++b) staged.insert(p.dkv_offset + w * p.dkv_wg + p.dkv_chunk(r, c8) + b);
      for (int r = 0; r < 64; ++r)
        for (int d = 0; d < c.dim; ++d)
          for (int b = 0; b < 2; ++b) rows_of_v.insert(p.v_offset + p.byte(p.smem_K, 64 * w + r, d) + b);
      EXPECT_EQ(p.dkv_in_ds, c.kv_blocks > 1 && c.dq_alt) << name_expression(c);
      if (p.dkv_in_ds) {
        std::set<int> own_ds;
        for (int i = 0; i < 64 * c.dim * 2; ++i) own_ds.insert(p.ds_offset + w * p.ds_bytes + i);
        EXPECT_GE(p.ds_bytes, 64 * c.dim * 2);
        ASSERT_EQ(staged, own_ds) << name_expression(c);
      } else {
        ASSERT_EQ(staged, rows_of_v) << name_expression(c);
      }
    }
    for (int warp = 0; warp < 4; ++warp)
      for (int v = 0; v < c.dim / 2; v += 2) {
        std::set<int> banks;
        for (int lane = 0; lane < 32; ++lane) {
          const TileCoord x = p.acc_KV(32 * warp + lane, v);
          ASSERT_EQ(p.acc_KV(32 * warp + lane, v + 1).col, x.col + 1);
          banks.insert((p.dkv_chunk(x.row, x.col / 8) + 2 * (x.col % 8)) / 4 % 32);
        }
        EXPECT_EQ(banks.size(), 32u) << name_expression(c) << " warp " << warp << " value " << v;
      }
    for (int i0 = 0; i0 < 64 * (c.dim / 8); i0 += 8) {
      std::set<int> groups;
      for (int i = i0; i < i0 + 8; ++i) groups.insert(p.dkv_chunk(i / (c.dim / 8), i % (c.dim / 8)) / 16 % 8);
      EXPECT_EQ(groups.size(), 8u) << name_expression(c) << " chunks " << i0;
    }
  }
}

// ds_stsm: each k16 step's four dS^T A registers of a warp are stmatrix's four 8x8 matrices (keys 8 (i & 1) ..,
// queries 8 (i >> 1) .. of the warp's 16 keys, lane l holding row l / 4, columns 2 (l % 4) ..), and the kernel's one
// address per lane (row l % 8 of matrix l / 8 at step 0) reaches every step's rows by XOR 32 (kt % 4) plus kt / 4
// boxes: written here from the tile's byte map, so an address the kernel would compute wrongly fails.
TEST(AttnBwdWgmmaPlan, DsByStmatrixCoversTheTile) {
  for (const AttnBwdWgmmaConfig& c : configs()) {
    const AttnBwdWgmmaPlan p = make_plan(c);
    ASSERT_TRUE(p.ds_stsm_ok) << name_expression(c);
    for (int w = 0; w < 2; ++w) {
      std::set<int> bytes;
      for (int warp = 0; warp < 4; ++warp) {
        // The address lane L of the warp gives for step kt (the kernel's formula): row L % 8 of matrix L / 8.
        auto lane_address = [&](int L, int kt) {
          const int i = L / 8;
          return (p.byte(p.smem_dS, 8 * (i >> 1), 64 * w + 16 * warp + 8 * (i & 1) + L % 8) ^ (32 * (kt % 4))) +
                 (kt / 4) * p.ds_box;
        };
        for (int kt = 0; kt < c.block_M / 16; ++kt)
          for (int i = 0; i < 4; ++i)
            for (int l = 0; l < 32; ++l) {
              // stmatrix puts lane l's register i (row l / 4, columns 2 (l % 4), + 1 of matrix i) at the address of
              // the matrix's row l / 4, 4 (l % 4) bytes in: there must lie dS^T's A register i of step kt.
              const int at = lane_address(8 * i + l / 4, kt) + 4 * (l % 4);
              const TileCoord lo = p.frag_A(32 * warp + l, 2 * i), hi = p.frag_A(32 * warp + l, 2 * i + 1);
              ASSERT_EQ(at, p.byte(p.smem_dS, 16 * kt + lo.col, 64 * w + lo.row)) << name_expression(c);
              ASSERT_EQ(at + 2, p.byte(p.smem_dS, 16 * kt + hi.col, 64 * w + hi.row)) << name_expression(c);
              bytes.insert(at);
            }
      }
      // Every (key, query pair) of the warpgroup's 64 keys once.
      EXPECT_EQ(bytes.size(), static_cast<std::size_t>(64 * c.block_M / 2)) << name_expression(c);
    }
  }
}

// rows_v4: the row slots are a permutation of each stage's rows in which an S^T thread's queries q, q + 1, q + 8,
// q + 9 (q = 16 a + 2 t) are four consecutive slots starting at a multiple of 4.
TEST(AttnBwdWgmmaPlan, RowSlotsGroupAThreadsQueries) {
  for (int bm : {64, 128}) {
    std::set<int> slots;
    for (int r = 0; r < bm; ++r) slots.insert(attn_bwd_row_slot(r));
    EXPECT_EQ(slots.size(), static_cast<std::size_t>(bm));
    EXPECT_EQ(*slots.rbegin(), bm - 1);
    for (int q = 0; q < bm; q += 16)
      for (int t = 0; t < 4; ++t) {
        const int s = attn_bwd_row_slot(q + 2 * t);
        EXPECT_EQ(s % 4, 0);
        EXPECT_EQ(attn_bwd_row_slot(q + 2 * t + 1), s + 1);
        EXPECT_EQ(attn_bwd_row_slot(q + 2 * t + 8), s + 2);
        EXPECT_EQ(attn_bwd_row_slot(q + 2 * t + 9), s + 3);
      }
  }
  for (int dim : {64, 128}) EXPECT_TRUE(make_plan({.dim = dim, .block_M = attn_bwd_wgmma_block_m(dim)}).s_octets);
}

Status check(const KV& problem, const KV& config) {
  auto k = instantiate(spec(), problem, config, limits_for_arch("sm_90a"));
  return k ? Status::success() : k.status();
}

TEST(AttnBwdWgmmaSpec, RefusalsNameWhatToChange) {
  const Status d192 = check({{"dim", "192"}}, {});
  ASSERT_FALSE(d192.ok());
  EXPECT_NE(d192.message().find("attn.bwd.mma"), std::string::npos) << d192.message();
  const Status dv = check({{"dim", "128"}, {"dim_v", "64"}}, {});
  ASSERT_FALSE(dv.ok());
  EXPECT_NE(dv.message().find("dim_v"), std::string::npos) << dv.message();
  const Status smem = check({{"dim", "128"}}, {{"num_stages", "3"}, {"d_pass", "false"}});
  ASSERT_FALSE(smem.ok());
  EXPECT_NE(smem.message().find("num_stages"), std::string::npos) << smem.message();
  EXPECT_NE(smem.message().find("d_pass=true"), std::string::npos) << smem.message();
  EXPECT_TRUE(check({{"dim", "128"}}, {{"num_stages", "3"}}).ok());  // with the pre-pass the stages hold no O
  // A second dS tile does not fit beside 3 stages at dim 128.
  const Status alt = check({{"dim", "128"}}, {{"dq_alt", "true"}, {"num_stages", "3"}});
  ASSERT_FALSE(alt.ok());
  EXPECT_NE(alt.message().find("dq_alt=false"), std::string::npos) << alt.message();
  // A list longer than dim 128's free shared memory (~17 KB at 3 stages); the same list fits with one stage.
  const Status list = check({{"dim", "128"}}, {{"defer_tiles", "8192"}, {"num_stages", "3"}});
  ASSERT_FALSE(list.ok());
  EXPECT_NE(list.message().find("defer_tiles"), std::string::npos) << list.message();
  EXPECT_TRUE(check({{"dim", "128"}}, {{"defer_tiles", "8192"}, {"num_stages", "1"}}).ok());
  EXPECT_FALSE(check({{"heads", "6"}, {"heads_kv", "4"}}, {}).ok());
  EXPECT_TRUE(check({{"dim", "64"}, {"causal", "true"}}, {}).ok());
}

// section orders the causal walk only: set (not 0, not the default 8) without the mask it was dropped without a word.
TEST(AttnBwdWgmmaSpec, SectionWithoutTheMaskIsRefused) {
  for (const char* g : {"1", "3", "16", "64"}) {
    const Status st = check({{"dim", "64"}}, {{"section", g}});
    ASSERT_FALSE(st.ok()) << g;
    EXPECT_EQ(st.code(), ErrorCode::unsupported);
    EXPECT_NE(st.message().find(std::string("section=") + g + " orders causal key blocks"), std::string::npos) << st.message();
    EXPECT_NE(st.message().find("not causal (causal=false)"), std::string::npos) << st.message();
    EXPECT_NE(st.message().find("or set causal=true"), std::string::npos) << st.message();
    EXPECT_TRUE(check({{"dim", "64"}, {"causal", "true"}}, {{"section", g}}).ok()) << g;
  }
  for (const char* g : {"0", "8"}) EXPECT_TRUE(check({{"dim", "64"}}, {{"section", g}}).ok()) << g;
}

// Whether the kernel instantiated for (problem, config) on sm_90a has `field` in its name expression (an auto rule's
// pick); a refused instance fails the test.
bool name_has(const KV& problem, const KV& config, const std::string& field) {
  auto k = instantiate(spec(), problem, config, limits_for_arch("sm_90a"));
  EXPECT_TRUE(k.ok()) << k.status().message();
  return k.ok() && k->name_expression.find(field) != std::string::npos;
}

// dq_alt=auto: the warpgroups' turns at dQ where every query head has its own kv head, or at GQA dim 128 causal with
// dq_lag (1.10-1.19x the lockstep dQ there), and a second dS tile fits beside the stages; explicit values as given.
TEST(AttnBwdWgmmaSpec, DqAltAutoWhereHeadsEqualKvHeads) {
  auto alt = [](const KV& problem, const KV& config) { return name_has(problem, config, ".dq_alt = true"); };
  EXPECT_TRUE(alt({{"dim", "128"}, {"heads", "16"}, {"heads_kv", "16"}}, {}));
  EXPECT_TRUE(alt({{"dim", "64"}, {"causal", "true"}, {"varlen", "true"}}, {}));
  EXPECT_TRUE(alt({{"dim", "128"}, {"heads", "32"}, {"heads_kv", "8"}, {"causal", "true"}}, {}));
  EXPECT_TRUE(alt({{"dim", "128"}, {"seq_q", "4096"}, {"seq_k", "4096"}, {"heads", "32"}, {"heads_kv", "8"},
                   {"causal", "true"}},
                  {}));
  EXPECT_FALSE(alt({{"dim", "128"}, {"heads", "32"}, {"heads_kv", "8"}, {"causal", "true"}}, {{"dq_lag", "false"}}));
  EXPECT_FALSE(alt({{"dim", "128"}, {"seq_q", "4096"}, {"seq_k", "4096"}, {"heads", "32"}, {"heads_kv", "8"},
                    {"causal", "true"}},
                   {{"defer_tiles", "255"}}));  // 4 heads x 64 query tiles: dq_lag off
  EXPECT_FALSE(alt({{"dim", "128"}, {"heads", "32"}, {"heads_kv", "8"}}, {}));
  EXPECT_FALSE(alt({{"dim", "64"}, {"heads", "32"}, {"heads_kv", "8"}, {"causal", "true"}}, {}));
  EXPECT_FALSE(alt({{"dim", "128"}}, {{"num_stages", "3"}}));  // two dS tiles and 3 stages: over 227 KB
  EXPECT_FALSE(alt({{"dim", "128"}}, {{"dq_alt", "false"}}));
  EXPECT_TRUE(alt({{"dim", "128"}, {"heads", "32"}, {"heads_kv", "8"}}, {{"dq_alt", "true"}}));
}

// uniform_desc=auto: on with the warpgroups' turns at dQ, but not at dim 64 causal (its build would spill) nor with
// the lockstep dQ (GQA but at dim 128 causal, or dq_alt=false); explicit values as given.
TEST(AttnBwdWgmmaSpec, UniformDescAutoWithDqAltButDim64Causal) {
  auto on = [](const KV& problem, const KV& config) { return name_has(problem, config, ".uniform_desc = true"); };
  EXPECT_TRUE(on({{"dim", "128"}, {"heads", "16"}, {"heads_kv", "16"}}, {}));
  EXPECT_TRUE(on({{"dim", "128"}, {"causal", "true"}}, {}));
  EXPECT_TRUE(on({{"dim", "64"}}, {}));
  EXPECT_FALSE(on({{"dim", "64"}, {"causal", "true"}, {"varlen", "true"}}, {}));
  EXPECT_TRUE(on({{"dim", "128"}, {"heads", "32"}, {"heads_kv", "8"}, {"causal", "true"}}, {}));
  EXPECT_FALSE(on({{"dim", "128"}, {"heads", "32"}, {"heads_kv", "8"}}, {}));
  EXPECT_FALSE(on({{"dim", "128"}}, {{"dq_alt", "false"}}));
  EXPECT_FALSE(on({{"dim", "128"}}, {{"uniform_desc", "false"}}));
  EXPECT_TRUE(on({{"dim", "64"}, {"causal", "true"}}, {{"uniform_desc", "true"}}));
}

// ds_stsm=auto: dS by stmatrix with the warpgroups' turns at dQ at dim 64 (not causal) and at dim 128 causal, where
// it won in every timed round, and with rows_v4 at dim 128 without the mask on any walk (4k; 16k and 8k with p_mask
// split and dkv_stage: 1.03-1.06x); off with the lockstep dQ and at dim 64 causal (not timed); explicit values as
// given.
TEST(AttnBwdWgmmaSpec, DsStsmAutoAtDim64AndDim128Causal) {
  auto on = [](const KV& problem, const KV& config) { return name_has(problem, config, ".ds_stsm = true"); };
  EXPECT_TRUE(on({{"dim", "64"}}, {}));
  EXPECT_TRUE(on({{"dim", "128"}, {"causal", "true"}}, {}));
  EXPECT_TRUE(on({{"dim", "128"}, {"seq_q", "16384"}, {"seq_k", "16384"}}, {}));
  EXPECT_TRUE(on({{"dim", "128"}, {"seq_q", "4096"}, {"seq_k", "4096"}}, {}));
  EXPECT_FALSE(on({{"dim", "128"}, {"seq_q", "16384"}, {"seq_k", "16384"}, {"heads", "32"}, {"heads_kv", "8"}}, {}));
  EXPECT_FALSE(on({{"dim", "64"}, {"causal", "true"}}, {}));
  EXPECT_TRUE(on({{"dim", "128"}, {"heads", "32"}, {"heads_kv", "8"}, {"causal", "true"}}, {}));  // GQA's turns
  EXPECT_FALSE(on({{"dim", "64"}}, {{"dq_alt", "false"}}));
  EXPECT_FALSE(on({{"dim", "64"}}, {{"ds_stsm", "false"}}));
  EXPECT_TRUE(on({{"dim", "128"}}, {{"ds_stsm", "true"}}));
  EXPECT_TRUE(on({{"dim", "128"}, {"heads", "32"}, {"heads_kv", "8"}}, {{"ds_stsm", "true"}}));
  auto v4 = [](const KV& problem, const KV& config) { return name_has(problem, config, ".rows_v4 = true"); };
  EXPECT_TRUE(v4({{"dim", "128"}, {"seq_q", "4096"}, {"seq_k", "4096"}}, {}));
  EXPECT_TRUE(v4({{"dim", "128"}, {"seq_q", "16384"}, {"seq_k", "16384"}}, {}));
  EXPECT_FALSE(v4({{"dim", "128"}, {"seq_q", "16384"}, {"seq_k", "16384"}}, {{"dq_alt", "false"}}));
  EXPECT_FALSE(v4({{"dim", "128"}, {"seq_q", "4096"}, {"seq_k", "4096"}, {"causal", "true"}}, {}));
  EXPECT_FALSE(v4({{"dim", "64"}, {"seq_q", "2048"}, {"seq_k", "2048"}}, {}));
  EXPECT_FALSE(v4({{"dim", "128"}, {"seq_q", "4096"}, {"seq_k", "4096"}}, {{"dq_alt", "false"}}));
  EXPECT_FALSE(v4({{"dim", "128"}, {"seq_q", "4096"}, {"seq_k", "4096"}}, {{"rows_v4", "false"}}));
  EXPECT_FALSE(v4({{"dim", "128"}, {"seq_q", "16384"}, {"seq_k", "16384"}}, {{"rows_v4", "false"}}));
}

// p_mask=auto: the mask only in the tiles it can cut with the warpgroups' turns at dQ at dim 128 causal, where it won
// (with dkv_stage 1.04-1.05x), and at dim 128 without the mask beside dq_lag on any walk (4k: 1.02-1.08x; 16k and 8k
// with ds_stsm, rows_v4 and dkv_stage: 1.03-1.06x); per value in every tile with the lockstep dQ (GQA causal then:
// 0.97-0.98x), at dim 64 (causal: its build spills) and without dq_lag (a walk past the deferred list).
// dkv_stage=auto: dK, dV staged where a CTA's walk (the GQA group's heads x query tiles) is at most 64 tiles (won at 2k
// and 4k, causal or not) and with the turns at dim 128 without the mask on any walk (16k, 8k), not at GQA causal 4k
// (walks of 256 tiles: not shown). Explicit values as given.
TEST(AttnBwdWgmmaSpec, PMaskSplitAtDim128CausalAndDkvStageOnShortWalks) {
  auto split = [](const KV& problem, const KV& config) {
    return name_has(problem, config, ".p_mask = " + std::to_string(kAttnBwdPMaskSplit));
  };
  EXPECT_TRUE(split({{"dim", "128"}, {"causal", "true"}}, {}));
  EXPECT_TRUE(split({{"dim", "128"}, {"seq_q", "4096"}, {"seq_k", "4096"}}, {}));
  EXPECT_FALSE(split({{"dim", "128"}, {"seq_q", "4096"}, {"seq_k", "4096"}}, {{"dq_lag", "false"}}));
  EXPECT_TRUE(split({{"dim", "128"}, {"seq_q", "16384"}, {"seq_k", "16384"}}, {}));
  EXPECT_FALSE(split({{"dim", "128"}, {"seq_q", "16384"}, {"seq_k", "16384"}}, {{"dq_lag", "false"}}));
  EXPECT_FALSE(split({{"dim", "128"}, {"seq_q", "163840"}, {"seq_k", "163840"}}, {}));  // 2560 tiles: no dq_lag
  EXPECT_FALSE(split({{"dim", "64"}, {"seq_q", "2048"}, {"seq_k", "2048"}}, {}));
  EXPECT_FALSE(split({{"dim", "128"}, {"seq_q", "4096"}, {"seq_k", "4096"}, {"heads", "32"}, {"heads_kv", "8"}}, {}));
  EXPECT_FALSE(split({{"dim", "64"}, {"causal", "true"}}, {}));
  EXPECT_TRUE(split({{"dim", "128"}, {"causal", "true"}, {"heads", "32"}, {"heads_kv", "8"}}, {}));  // GQA's turns
  EXPECT_FALSE(split({{"dim", "128"}, {"causal", "true"}, {"heads", "32"}, {"heads_kv", "8"}}, {{"dq_alt", "false"}}));
  EXPECT_FALSE(split({{"dim", "128"}, {"causal", "true"}}, {{"dq_alt", "false"}}));
  EXPECT_FALSE(split({{"dim", "128"}, {"causal", "true"}}, {{"p_mask", "branch"}}));
  EXPECT_TRUE(split({{"dim", "64"}}, {{"p_mask", "split"}}));
  auto staged = [](const KV& problem, const KV& config) { return name_has(problem, config, ".dkv_stage = true"); };
  EXPECT_TRUE(staged({{"dim", "128"}, {"seq_q", "4096"}, {"seq_k", "4096"}}, {}));
  EXPECT_TRUE(staged({{"dim", "128"}, {"seq_q", "4096"}, {"seq_k", "4096"}, {"causal", "true"}}, {}));
  EXPECT_TRUE(staged({{"dim", "64"}, {"seq_q", "8192"}, {"seq_k", "8192"}}, {}));  // 64 tiles of 128 rows
  EXPECT_TRUE(staged({{"dim", "128"}, {"seq_q", "8192"}, {"seq_k", "8192"}}, {}));
  EXPECT_TRUE(staged({{"dim", "128"}, {"seq_q", "16384"}, {"seq_k", "16384"}}, {}));
  EXPECT_FALSE(staged({{"dim", "128"}, {"seq_q", "16384"}, {"seq_k", "16384"}}, {{"dq_alt", "false"}}));
  EXPECT_FALSE(staged({{"dim", "128"}, {"seq_q", "16384"}, {"seq_k", "16384"}, {"causal", "true"}}, {}));
  EXPECT_FALSE(staged({{"dim", "128"}, {"seq_q", "4096"}, {"seq_k", "4096"}, {"heads", "32"}, {"heads_kv", "8"},
                       {"causal", "true"}},
                      {}));
  EXPECT_FALSE(staged({{"dim", "128"}, {"seq_q", "4096"}, {"seq_k", "4096"}}, {{"dkv_stage", "false"}}));
  EXPECT_FALSE(staged({{"dim", "128"}, {"seq_q", "16384"}, {"seq_k", "16384"}}, {{"dkv_stage", "false"}}));
}

// The tensor maps: 3-D (dim, heads, rows) views of the packed rows, a box of 64 columns x a tile's rows, placed
// after O and dO (d_pass's pre-pass reads them) in the kernel's signature; Q, K and V themselves are no kernel
// parameters. d_rows holds a float per query row and head, after dq_counters.
// kv_blocks=auto: two key blocks a CTA with the warpgroups' turns at dim 64 without the mask where a walk is at most
// 32 query tiles (won at 2k and 4k, d 64 in every round); one at dim 128 (4k mixed, 16k and 4k causal lost), at dim 64
// causal (its build spills), on longer walks and with the lockstep dQ (not timed); its grid as wide as the pairs.
TEST(AttnBwdWgmmaSpec, KvBlocksAutoAtDim64ShortWalks) {
  auto pairs = [](const KV& problem, const KV& config) { return name_has(problem, config, ".kv_blocks = 2"); };
  const KV d64_2k = {{"dim", "64"}, {"seq_q", "2048"}, {"seq_k", "2048"}};
  EXPECT_TRUE(pairs(d64_2k, {}));
  KV x = d64_2k;
  x["causal"] = "true";
  EXPECT_FALSE(pairs(x, {}));
  EXPECT_TRUE(pairs({{"dim", "64"}, {"seq_q", "4096"}, {"seq_k", "4096"}}, {}));  // 32 tiles of 128 rows
  EXPECT_FALSE(pairs({{"dim", "64"}, {"seq_q", "8192"}, {"seq_k", "8192"}}, {}));
  EXPECT_FALSE(pairs({{"dim", "64"}, {"seq_q", "2048"}, {"seq_k", "2048"}, {"heads", "16"}, {"heads_kv", "4"}}, {}));
  EXPECT_FALSE(pairs({{"dim", "128"}, {"seq_q", "1024"}, {"seq_k", "1024"}}, {}));
  EXPECT_FALSE(pairs({{"dim", "128"}, {"seq_q", "4096"}, {"seq_k", "4096"}}, {}));
  EXPECT_FALSE(pairs(d64_2k, {{"dq_alt", "false"}}));
  EXPECT_FALSE(pairs(d64_2k, {{"kv_blocks", "1"}}));
  EXPECT_TRUE(pairs({{"dim", "128"}, {"seq_q", "4096"}, {"seq_k", "4096"}}, {{"kv_blocks", "2"}}));
  // The grid: ceil(key blocks / kv_blocks) wide.
  for (const auto& [seq, kvb, width] : std::vector<std::tuple<std::string, std::string, unsigned>>{
           {"2048", "1", 16u}, {"2048", "2", 8u}, {"2100", "2", 9u}, {"2100", "4", 5u}, {"300", "3", 1u}}) {
    auto inst = instantiate(spec(), {{"dim", "64"}, {"seq_q", seq}, {"seq_k", seq}}, {{"kv_blocks", kvb}},
                            limits_for_arch("sm_90a"));
    ASSERT_TRUE(inst.ok()) << inst.status().message();
    EXPECT_EQ(inst->launch.grid.x, width) << seq << " " << kvb;
  }
}

TEST(AttnBwdWgmmaSpec, TensorMapsOverThePackedRows) {
  auto k = instantiate(spec(), {{"batch", "3"}, {"seq_q", "100"}, {"seq_k", "200"}, {"heads", "8"}, {"heads_kv", "2"},
                                {"dim", "64"}},
                       {}, limits_for_arch("sm_90a"))
               .value();
  std::vector<std::string> params;
  for (const ArgSpec& a : k.args)
    if (a.is_param) params.push_back(a.name);
  ASSERT_GE(params.size(), 14u);
  EXPECT_EQ((std::vector<std::string>(params.begin(), params.begin() + 14)),
            (std::vector<std::string>{"O", "dO", "tma_Q", "tma_K", "tma_V", "tma_O", "tma_dO", "LSE", "dQ", "dK", "dV",
                                      "dq_accum", "dq_counters", "d_rows"}));
  for (const ArgSpec& a : k.args)
    if (a.name == "d_rows") {
      EXPECT_EQ(a.numel(), 300 * 8);
      EXPECT_EQ(a.role, ArgRole::scratch);
    }
  for (const ArgSpec& a : k.args) {
    if (a.kind != ArgSpec::Kind::tensor_map) continue;
    const bool q_like = a.tensor_of != "K" && a.tensor_of != "V";
    EXPECT_EQ(a.map_shape, (std::vector<std::int64_t>{q_like ? 300 : 600, q_like ? 8 : 2, 64})) << a.name;
    EXPECT_EQ(a.box, (std::vector<std::int64_t>{64, 1, 128})) << a.name;
    EXPECT_EQ(a.swizzle_bytes, 128);
  }
}

// Under setmaxnreg 40/232 the defaults compile without spills at both dims (dq_alt auto; GQA's lockstep dQ too);
// the lockstep dQ at dim 64 (S^T and dP^T of 128 queries) spills a few words (12 bytes causal varlen; 92 before the
// row values were read in pairs). The probe build (-DTL_TIMELINE=1: setmaxnreg 56/224 and the marks' registers in
// every warp) spills where the consumers hold dK, dV and two accumulators at once, the known gap its timelines carry:
// 92-144 bytes with dq_alt at dim 128, 32-72 at dim 64, none with GQA's lockstep dQ at dim 128 (moving descriptors or
// marks around only moved the spills, docs/perf.md). With the uniform descriptors (uniform_desc, auto with dq_alt
// but at dim 64 causal) the probe build spills 4 bytes at dim 128, 28 causal, 48 at dim 64 (which spilled 32 without);
// at dim 64 causal their plain build would spill 144 bytes, so auto leaves them off there. dS by stmatrix (ds_stsm,
// auto at dim 64 and dim 128 causal) lowers the probe build's spills to 32 and 16 bytes there; with rows_v4 too the
// plain builds stay spill-free (rows_v4 alone spills 20 bytes at dim 64, 48 at GQA causal). The mask only in the
// tiles it can cut (p_mask split) and dK, dV staged through shared memory (dkv_stage), auto at dim 128 (causal, and
// without the mask with the turns) and where walks are short, keep every plain build spill-free; the staging adds 4
// bytes to the dim 64 probe builds. The walk over a CTA's key blocks (kv_blocks; one block by default) adds 4-12
// bytes to the producer warpgroup's probe
// builds at GQA causal, dim 64 causal varlen and dim 128 causal with p_mask=branch. The dQ writer's count a tile behind
// (dq_lag, auto with dq_alt) keeps the plain builds spill-free and adds 8 bytes to the dim 64 causal varlen probe build.
// Both measured here (NVRTC 13), so a change that makes either worse shows.
TEST(AttnBwdWgmmaSpec, CompilesForHopperWithinTheRegisterBudget) {
  // problem, config, spill bytes at most: plain build, probe build
  const std::vector<std::tuple<KV, KV, int, int>> cases = {
      {{{"dim", "128"}}, {}, 0, 4},
      {{{"dim", "128"}}, {{"uniform_desc", "false"}}, 0, 92},
      {{{"dim", "128"}, {"causal", "true"}}, {}, 0, 16},
      {{{"dim", "128"}, {"causal", "true"}, {"heads_kv", "4"}}, {}, 0, 12},
      {{{"dim", "64"}, {"causal", "true"}, {"varlen", "true"}}, {}, 0, 76},  // dq_lag auto: 68 without
      {{{"dim", "64"}}, {}, 0, 128},  // kv_blocks auto: 2 (2k: walks of 16)
      {{{"dim", "64"}}, {{"kv_blocks", "1"}}, 0, 36},
      {{{"dim", "64"}}, {{"uniform_desc", "false"}, {"kv_blocks", "1"}}, 0, 32},
      {{{"dim", "128"}, {"causal", "true"}, {"heads_kv", "4"}}, {{"uniform_desc", "true"}}, 0, 0},
      {{{"dim", "128"}, {"causal", "true"}, {"heads_kv", "4"}}, {{"d_pass", "false"}}, 0, 0},
      {{{"dim", "128"}, {"causal", "true"}, {"heads_kv", "4"}}, {{"num_stages", "3"}}, 0, 12},
      {{{"dim", "128"}, {"causal", "true"}, {"heads_kv", "4"}}, {{"dq_alt", "true"}}, 0, 28},
      {{{"dim", "64"}, {"causal", "true"}, {"varlen", "true"}}, {{"dq_alt", "false"}}, 16, 76},
      {{{"dim", "128"}, {"causal", "true"}}, {{"p_mask", "branch"}, {"dkv_stage", "false"}}, 0, 20},
      {{{"dim", "128"}, {"seq_q", "16384"}, {"seq_k", "16384"}}, {}, 0, 4},  // 4k's build (split, stsm, v4, staged)
      {{{"dim", "128"}, {"seq_q", "16384"}, {"seq_k", "16384"}}, {{"p_mask", "branch"}, {"ds_stsm", "false"},
                                                                  {"rows_v4", "false"}, {"dkv_stage", "false"}}, 0, 4},
      {{{"dim", "128"}}, {{"ds_stsm", "true"}, {"rows_v4", "true"}}, 0, 4},
      {{{"dim", "64"}, {"causal", "true"}, {"varlen", "true"}}, {{"ds_stsm", "true"}, {"rows_v4", "true"}}, 0, 36},
      // kv_blocks: spill-free without the mask at both dims (auto at dim 64 on short walks); at dim 128 causal (opt-in)
      // the dQ writer spills (the blocks' walk state in its 40 registers). Their probe builds spill 68-128 bytes.
      {{{"dim", "128"}}, {{"kv_blocks", "2"}}, 0, 100},
      {{{"dim", "128"}, {"seq_q", "16384"}, {"seq_k", "16384"}}, {{"kv_blocks", "2"}}, 0, 124},
      {{{"dim", "128"}, {"causal", "true"}}, {{"kv_blocks", "2"}}, 40, 68},
      // dq_lag (the writer's count one tile behind, in a loop of its own without the conversion path): spill-free.
      {{{"dim", "128"}}, {{"dq_lag", "true"}}, 0, 4},
      {{{"dim", "128"}, {"causal", "true"}}, {{"dq_lag", "true"}}, 0, 16},
      {{{"dim", "64"}}, {{"dq_lag", "true"}}, 0, 128},
      // dq_release (the count's release add): spill-free with either writer loop.
      {{{"dim", "128"}}, {{"dq_release", "true"}}, 0, 4},
      {{{"dim", "128"}, {"causal", "true"}, {"heads_kv", "4"}}, {{"dq_release", "true"}}, 0, 12},
      {{{"dim", "128"}, {"causal", "true"}, {"heads_kv", "4"}}, {{"dq_release", "true"}, {"dq_alt", "false"}}, 0, 12},
      // wait_sleep (try_wait with a suspend-time hint): spill-free in the side warps alone and everywhere.
      {{{"dim", "128"}, {"seq_q", "16384"}, {"seq_k", "16384"}}, {{"wait_sleep", "side"}}, 0, 4},
      {{{"dim", "128"}, {"seq_q", "16384"}, {"seq_k", "16384"}}, {{"wait_sleep", "all"}}, 0, 4},
      {{{"dim", "64"}, {"causal", "true"}, {"varlen", "true"}}, {{"wait_sleep", "all"}}, 0, 76}};
  for (const auto& [problem, config, max_spill, max_probe_spill] : cases) {
    auto inst = instantiate(spec(), problem, config, limits_for_arch("sm_90a"));
    ASSERT_TRUE(inst.ok()) << inst.status().message();
    for (bool probes : {false, true}) {
      SCOPED_TRACE(inst->name_expression + (probes ? " +probes" : ""));
      JitOptions opt;
      opt.arch = "sm_90a";
      if (probes) opt.defines.push_back("TL_TIMELINE=1");
      auto k = test::scratch_jit().compile(compile_request(*inst, opt));
      ASSERT_TRUE(k.ok()) << k.status().message();
      EXPECT_LE(k->resources.spill_store_bytes, probes ? max_probe_spill : max_spill);
    }
  }
}

// dq_lag=auto: the writer's count one tile behind with the warpgroups' turns at dQ wherever the deferred list holds a
// CTA's walk (won at issue 20's four anchors in both rounds: 1.01-1.07x by medians); off with the lockstep dQ (GQA: not
// timed) and where the list is too short (dq_lag=true is refused there).
TEST(AttnBwdWgmmaSpec, DqLagAutoWithDqAltWhereTheListHoldsTheWalk) {
  auto lag = [](const KV& problem, const KV& config) { return name_has(problem, config, ".dq_lag = true"); };
  const KV k4 = {{"dim", "128"}, {"seq_q", "4096"}, {"seq_k", "4096"}};
  EXPECT_TRUE(lag(k4, {}));
  EXPECT_TRUE(lag({{"dim", "128"}, {"seq_q", "4096"}, {"seq_k", "4096"}, {"causal", "true"}}, {}));
  EXPECT_TRUE(lag({{"dim", "128"}, {"seq_q", "16384"}, {"seq_k", "16384"}}, {}));
  EXPECT_TRUE(lag({{"dim", "64"}, {"seq_q", "2048"}, {"seq_k", "2048"}}, {}));
  EXPECT_FALSE(lag({{"dim", "128"}, {"seq_q", "4096"}, {"seq_k", "4096"}, {"heads", "32"}, {"heads_kv", "8"}}, {}));
  EXPECT_FALSE(lag(k4, {{"dq_alt", "false"}}));
  EXPECT_FALSE(lag(k4, {{"defer_tiles", "63"}}));  // 64 query tiles
  EXPECT_FALSE(lag(k4, {{"dq_defer", "false"}}));
  EXPECT_FALSE(lag(k4, {{"dq_lag", "false"}}));
}

// dq_lag leaves every completed tile to dq_defer's list: refused without it or where the list is shorter than the tiles
// a CTA's walk can complete (key blocks x the group's heads x query tiles).
TEST(AttnBwdWgmmaSpec, DqLagNeedsTheDeferredListForTheWholeWalk) {
  const KV problem = {{"dim", "128"}, {"seq_q", "4096"}, {"seq_k", "4096"}, {"heads", "4"}, {"heads_kv", "2"}};
  auto ok = [&](const KV& config) {
    return instantiate(spec(), problem, config, limits_for_arch("sm_90a")).ok();
  };
  EXPECT_TRUE(ok({{"dq_lag", "true"}}));
  EXPECT_TRUE(ok({{"dq_lag", "true"}, {"defer_tiles", "128"}}));  // 2 heads x 64 query tiles
  EXPECT_FALSE(ok({{"dq_lag", "true"}, {"defer_tiles", "127"}}));
  EXPECT_FALSE(ok({{"dq_lag", "true"}, {"dq_defer", "false"}}));
  EXPECT_TRUE(ok({{"defer_tiles", "127"}}));
}

// dq_release (the writer's count by a release-ordered add): off by auto (won only at 4k causal), with either writer
// loop when asked.
TEST(AttnBwdWgmmaSpec, DqReleaseOptIn) {
  const KV problem = {{"dim", "128"}, {"seq_q", "4096"}, {"seq_k", "4096"}, {"causal", "true"}};
  EXPECT_FALSE(name_has(problem, {}, ".dq_release = true"));
  EXPECT_TRUE(name_has(problem, {{"dq_release", "true"}}, ".dq_release = true"));
  EXPECT_TRUE(name_has(problem, {{"dq_release", "true"}, {"dq_lag", "false"}}, ".dq_release = true"));
}

// wait_sleep (the mbarrier waits with try_wait's suspend-time hint): off by auto; side and all as asked.
TEST(AttnBwdWgmmaSpec, WaitSleepOptIn) {
  const KV problem = {{"dim", "128"}, {"seq_q", "16384"}, {"seq_k", "16384"}};
  EXPECT_TRUE(name_has(problem, {}, ".wait_sleep = 0"));
  EXPECT_TRUE(name_has(problem, {{"wait_sleep", "false"}}, ".wait_sleep = 0"));
  EXPECT_TRUE(name_has(problem, {{"wait_sleep", "side"}}, ".wait_sleep = 1"));
  EXPECT_TRUE(name_has(problem, {{"wait_sleep", "all"}}, ".wait_sleep = 2"));
}

}  // namespace
}  // namespace tl
