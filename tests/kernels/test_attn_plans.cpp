// The attention kernels' plans against PTX-ISA and TMA facts: smem tiles, ldmatrix/mma/wgmma fragments, the address
// steps and register tables the kernels index with, barriers and bytes, names.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "attention/attn_fwd_mma_plan.hpp"
#include "attention/attn_fwd_wgmma_plan.hpp"
#include "tile/layout_spec.hpp"

namespace tl {
namespace {

constexpr int kH100OptIn = 232448;  // cudaDevAttrMaxSharedMemoryPerBlockOptin on sm_90

// Every element has its own 2-byte slot in [0, bytes), and each 16-byte chunk (8 elements from a multiple of 8
// columns) is contiguous and stays inside one 128-byte line, as cp.async / ldmatrix / TMA move it.
void expect_chunked_bijection(const SwizzledLayout& t, int rows, int cols, const std::string& what) {
  SCOPED_TRACE(what);
  std::set<int> seen;
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; c += 8) {
      const int b = 2 * t(r, c);
      ASSERT_EQ(b % 16, 0);
      for (int e = 0; e < 8; ++e) {
        ASSERT_EQ(2 * t(r, c + e), b + 2 * e);
        seen.insert(t(r, c + e));
      }
    }
  ASSERT_EQ(static_cast<int>(seen.size()), rows * cols);
  EXPECT_EQ(*seen.begin(), 0);
  EXPECT_EQ(*seen.rbegin(), rows * cols - 1);
}

std::vector<AttnFwdMmaConfig> mma_configs() {
  std::vector<AttnFwdMmaConfig> v;
  for (int dim : {64, 128})
    for (int bm : {64, 128})
      for (int bn : {32, 64, 128}) v.push_back({.dim = dim, .block_M = bm, .block_N = bn, .warps = 4, .num_stages = 3});
  return v;
}

TEST(AttnMmaPlan, SmemTilesAreSwizzledRowsOfChunks) {
  for (const AttnFwdMmaConfig& c : mma_configs()) {
    const AttnFwdMmaPlan p = make_plan(c);
    expect_chunked_bijection(p.smem_Q, c.block_M, c.dim, "Q");
    expect_chunked_bijection(p.smem_K, c.block_N, c.dim, "K");
    // Rows are dim * 2 bytes; the 8 rows of one ldmatrix matrix (or of one cp.async phase) at one chunk land on 8
    // different 16-byte bank groups.
    for (int r0 = 0; r0 < c.block_N; r0 += 8)
      for (int ch = 0; ch < c.dim / 8; ++ch) {
        std::set<int> groups;
        for (int r = r0; r < r0 + 8; ++r) {
          EXPECT_EQ(2 * p.smem_K(r, 8 * ch) / (2 * c.dim), r);
          groups.insert(2 * p.smem_K(r, 8 * ch) % 128 / 16);
        }
        EXPECT_EQ(groups.size(), 8u);
      }
    EXPECT_EQ(p.bytes, 2 * c.dim * (c.block_M + 2 * c.num_stages * c.block_N));
    EXPECT_EQ(p.stage_bytes, 4 * c.dim * c.block_N);
  }
  EXPECT_LE(make_plan(AttnFwdMmaConfig{}).bytes, kH100OptIn);
}

TEST(AttnMmaPlan, FragmentsAreTheAtoms) {
  const AttnFwdMmaPlan p = make_plan(AttnFwdMmaConfig{});
  EXPECT_TRUE(fragment_spec(p.mma_A, "mma.m16n8k16.bf16.A"));
  EXPECT_TRUE(fragment_spec(p.mma_B, "mma.m16n8k16.bf16.B"));
  EXPECT_TRUE(fragment_spec(p.mma_C, "mma.m16n8k16.f32.C"));
  EXPECT_TRUE(fragment_spec(p.ldmatrix_A, "ldmatrix.x4"));
  EXPECT_TRUE(fragment_spec(p.ldmatrix_trans, "ldmatrix.x4.trans"));
  EXPECT_TRUE(fragment_spec(p.rows_A, "ldmatrix.x4.rows"));
  ASSERT_TRUE(shifted_alike(p.mma_C));
  ASSERT_TRUE(p.c_values.ok);
  EXPECT_EQ(p.c_values.num_rows, 2);
  for (int l = 0; l < 32; ++l)
    for (int h = 0; h < 2; ++h)
      for (int k = 0; k < 2; ++k) {
        const int v = p.c_values.row_value[h][k];
        const TileCoord x = p.mma_C(l, v), b = p.mma_C(l, 0);
        EXPECT_EQ(x.row, b.row + p.c_values.at[v].row);
        EXPECT_EQ(x.col, b.col + p.c_values.at[v].col);
        EXPECT_EQ(x.row, p.mma_C(l, p.c_values.row_value[h][0]).row);  // one row per h
        if (k == 1) {
          EXPECT_EQ(x.col, p.mma_C(l, p.c_values.row_value[h][0]).col + 1);  // a column pair
        }
      }
}

// What ldmatrix.x4 gives each lane, from the rows the plan has it address, is the mma operand it feeds: Q -> A,
// K (not transposed) -> the B fragments of two n8 tiles, V (.trans) -> likewise. Per matrix m (register m) lane l
// receives (row l/4, col 2(l%4) + e) of the 8x8 block whose rows lanes 8m..8m+7 address (.trans: the transpose).
TEST(AttnMmaPlan, LdmatrixRowsFeedTheMmaFragments) {
  const AttnFwdMmaPlan p = make_plan(AttnFwdMmaConfig{});
  const Fragment one = ldmatrix(1, false), one_t = ldmatrix(1, true);
  for (int l = 0; l < 32; ++l)
    for (int m = 0; m < 4; ++m)
      for (int e = 0; e < 2; ++e) {
        // Q: register m of the A fragment.
        const TileCoord q = one(l, e);
        const TileCoord qa = p.rows_A(8 * m + q.row, 0);
        EXPECT_EQ(p.mma_A(l, 2 * m + e), (TileCoord{qa.row, 8 * qa.col + q.col})) << l << " " << m;
        // K stored [key][dim]: register m % 2 of n8 tile m / 2's B (k = dim, n = key).
        const TileCoord ka = p.rows_K(8 * m + q.row, 0);
        EXPECT_EQ(p.mma_B(l, 2 * (m % 2) + e), (TileCoord{8 * ka.col + q.col, ka.row - 8 * (m / 2)})) << l << " " << m;
        // V stored [key][dim], through .trans: register m % 2 of n8 tile m / 2's B (k = key, n = dim).
        const TileCoord t = one_t(l, e);
        const TileCoord va = p.rows_A(8 * m + t.row, 0);
        EXPECT_EQ(p.mma_B(l, 2 * (m % 2) + e), (TileCoord{va.row, 8 * va.col + t.col - 8 * (m / 2)})) << l << " " << m;
      }
}

// The kernel's address arithmetic: a lane's offset at step 0, XORed with a later column step and plus whole 8-row
// groups, is the layout at the stepped coordinate (Q's k16 steps and m16 tiles, K's k16 steps and n8 tiles, V's
// column pairs and k16 steps), and load_rows' whole-8-row steps add.
TEST(AttnMmaPlan, AddressStepsAreTheLayout) {
  for (const AttnFwdMmaConfig& c : mma_configs()) {
    const AttnFwdMmaPlan p = make_plan(c);
    auto byte = [](const SwizzledLayout& t, int r, int col) { return AttnFwdMmaPlan::byte(t, r, col); };
    for (int l = 0; l < 32; ++l) {
      const TileCoord qa = p.rows_A(l, 0), ka = p.rows_K(l, 0);
      const int q_off = byte(p.smem_Q, qa.row, 8 * qa.col), k_off = byte(p.smem_K, ka.row, 8 * ka.col);
      for (int kk = 0; kk < c.dim / 16; ++kk) {
        for (int i = 0; 16 * i + 16 <= c.block_M; ++i)
          ASSERT_EQ((q_off ^ (kk * byte(p.smem_Q, 0, 16))) + i * byte(p.smem_Q, 16, 0),
                    byte(p.smem_Q, qa.row + 16 * i, 8 * qa.col + 16 * kk));
        for (int j = 0; 8 * j + 16 <= c.block_N; j += 2)
          ASSERT_EQ((k_off ^ (kk * byte(p.smem_K, 0, 16))) + j * byte(p.smem_K, 8, 0),
                    byte(p.smem_K, ka.row + 8 * j, 8 * ka.col + 16 * kk));
      }
      const int v_off = byte(p.smem_V, qa.row, 8 * qa.col);
      for (int dn = 0; dn < c.dim / 8; dn += 2)
        for (int kt = 0; kt < c.block_N / 16; ++kt)
          ASSERT_EQ((v_off ^ (dn / 2 * byte(p.smem_V, 0, 16))) + kt * byte(p.smem_V, 16, 0),
                    byte(p.smem_V, qa.row + 16 * kt, 8 * qa.col + 8 * dn));
    }
    for (int step = 8; step < c.block_N; step += 8)
      for (int r = 0; r + step < c.block_N; ++r)
        for (int ch = 0; ch < c.dim / 8; ++ch)
          ASSERT_EQ(byte(p.smem_K, r, 8 * ch) + byte(p.smem_K, step, 0), byte(p.smem_K, r + step, 8 * ch));
  }
}

// P = S in registers: S's value r of n8 tile h of a k16 step is, in the same lane, A value 2 p_reg[h][r] + r % 2.
TEST(AttnMmaPlan, PIsSInRegisters) {
  const AttnFwdMmaPlan p = make_plan(AttnFwdMmaConfig{});
  for (int l = 0; l < 32; ++l)
    for (int h = 0; h < 2; ++h)
      for (int r = 0; r < 4; ++r) {
        const TileCoord x = p.mma_C(l, r);
        EXPECT_EQ(p.mma_A.owner(x.row, x.col + 8 * h), (ThreadValue{l, 2 * p.p_reg[h][r] + r % 2}));
      }
}

std::vector<AttnFwdWgmmaConfig> wgmma_configs() {
  std::vector<AttnFwdWgmmaConfig> v;
  for (const auto& [dim, dim_v] : {std::pair{64, 64}, std::pair{128, 128}, std::pair{192, 128}, std::pair{128, 64}})
    for (int bm : {64, 128, 192})
      for (int bn : {64, 112, 128, 176})
        for (AttnEpilogue e : {AttnEpilogue::direct, AttnEpilogue::tma})
          v.push_back({.dim = dim, .dim_v = dim_v, .block_M = bm, .block_N = bn, .num_stages = 2, .q_stages = 2, .epilogue = e});
  return v;
}

// TMA's SWIZZLE_128B box of 64 columns (128 bytes) x rows: 16-byte chunk j of row r at r * 128 + (j ^ (r % 8)) * 16,
// boxes of the row one after another.
int tma_sw128_byte(int rows, int r, int c) { return (c / 64) * rows * 128 + r * 128 + (((c % 64) / 8) ^ (r % 8)) * 16 + (c % 8) * 2; }

TEST(AttnWgmmaPlan, SmemTilesAreWhatTmaWrites) {
  for (const AttnFwdWgmmaConfig& c : wgmma_configs()) {
    const AttnFwdWgmmaPlan p = make_plan(c);
    for (int r = 0; r < c.block_M; ++r)
      for (int col = 0; col < c.dim; ++col) ASSERT_EQ(p.byte(p.smem_Q, r, col), tma_sw128_byte(c.block_M, r, col));
    for (int r = 0; r < c.block_N; ++r) {
      for (int col = 0; col < c.dim; ++col) ASSERT_EQ(p.byte(p.smem_K, r, col), tma_sw128_byte(c.block_N, r, col));
      for (int col = 0; col < c.dim_v; ++col)
        ASSERT_EQ(p.byte(p.smem_V, col, r), tma_sw128_byte(c.block_N, r, col));  // V's (dim_v, key) view
    }
    for (int r = 0; r < 64; ++r)
      for (int col = 0; col < c.dim_v; ++col) ASSERT_EQ(p.byte(p.smem_O, r, col), tma_sw128_byte(64, r, col));
    // wgmma descriptors: a k16 step inside a 128-byte row is +32 bytes, the next box +rows * 128; V's k16 step is
    // 16 rows of 128 bytes and its leading byte offset one box.
    for (int kk = 0; kk < c.dim / 16; ++kk) {
      EXPECT_EQ(p.q_k16[kk], (kk / 4) * c.block_M * 128 + (kk % 4) * 32);
      EXPECT_EQ(p.k_k16[kk], (kk / 4) * c.block_N * 128 + (kk % 4) * 32);
    }
    for (int kt = 0; kt < c.block_N / 16; ++kt) EXPECT_EQ(p.v_k16[kt], kt * 2048);
    EXPECT_EQ(p.v_lbo, c.block_N * 128);
    EXPECT_EQ(p.q_box, c.block_M * 128);
    EXPECT_EQ(p.kv_box, c.block_N * 128);
    EXPECT_EQ(p.o_box, 64 * 128);
  }
}

TEST(AttnWgmmaPlan, RegionsBarriersAndBytes) {
  for (AttnFwdWgmmaConfig c : wgmma_configs())
    for (int qs : {1, 2})
      for (int st : {2, 3}) {
        c.q_stages = qs, c.num_stages = st;
        const AttnFwdWgmmaPlan p = make_plan(c);
        const bool staged = c.epilogue != AttnEpilogue::direct;
        EXPECT_EQ(p.q_bytes, 2 * c.block_M * c.dim);
        EXPECT_EQ(p.k_bytes, 2 * c.block_N * c.dim);
        EXPECT_EQ(p.v_bytes, 2 * c.block_N * c.dim_v);
        EXPECT_EQ(p.k_offset, qs * p.q_bytes);
        EXPECT_EQ(p.v_offset, p.k_offset + st * p.k_bytes);
        EXPECT_EQ(p.o_offset, p.v_offset + st * p.v_bytes);
        EXPECT_EQ(p.bar_q_full, p.o_offset + (staged ? 2 * c.block_M * c.dim_v : 0));
        // Tiles start on the 1024-byte swizzle atom; barriers 8-byte aligned, one after another, then the slack.
        for (int off : {p.q_offset, p.k_offset, p.v_offset, p.o_offset, p.q_bytes, p.k_bytes, p.v_bytes}) EXPECT_EQ(off % 1024, 0);
        const int bars[] = {p.bar_q_full, p.bar_q_empty, p.bar_k_full, p.bar_k_empty, p.bar_v_full, p.bar_v_empty};
        const int counts[] = {qs, qs, st, st, st, st};
        for (int i = 0; i < 6; ++i) {
          EXPECT_EQ(bars[i] % 8, 0);
          if (i > 0) {
            EXPECT_EQ(bars[i], bars[i - 1] + 8 * counts[i - 1]);
          }
        }
        EXPECT_EQ(p.bytes, p.bar_v_empty + 8 * st + 1024);
        // schedule=dynamic: the tile-number ring (two full and two empty barriers, two int slots) after them.
        c.dynamic = true;
        const AttnFwdWgmmaPlan d = make_plan(c);
        c.dynamic = false;
        EXPECT_EQ(d.bar_tile_full, p.bar_v_empty + 8 * st);
        EXPECT_EQ(d.bar_tile_empty, d.bar_tile_full + 16);
        EXPECT_EQ(d.tile_slots, d.bar_tile_empty + 16);
        EXPECT_EQ(d.bytes, p.bytes + 2 * 16 + 8);
      }
  EXPECT_LE(make_plan(AttnFwdWgmmaConfig{}).bytes, kH100OptIn);
}

// The accumulators are the wgmma atoms, every thread's values its value 0's shifted, and P = S in registers: S's
// value v is, in the same thread, A value 2 (p_reg[v] % 4) + v % 2 of k16 step p_reg[v] / 4.
TEST(AttnWgmmaPlan, FragmentsAndPInRegisters) {
  for (int bn : {64, 128, 176}) {
    const AttnFwdWgmmaPlan p = make_plan(AttnFwdWgmmaConfig{.block_N = bn});
    EXPECT_TRUE(fragment_spec(p.acc_S, "wgmma.m64n" + std::to_string(bn) + "k16.f32.C"));
    EXPECT_TRUE(fragment_spec(p.frag_P, "wgmma.m64k16.bf16.A"));
    EXPECT_TRUE(fragment_spec(p.acc_O, "wgmma.m64n128k16.f32.C"));
    ASSERT_TRUE(shifted_alike(p.acc_S));
    ASSERT_TRUE(shifted_alike(p.acc_O));
    ASSERT_TRUE(p.s_values.ok && p.o_values.ok);
    EXPECT_EQ(p.s_values.per_row, bn / 4);
    for (int t = 0; t < 128; ++t)
      for (int v = 0; v < bn / 2; ++v) {
        const TileCoord x = p.acc_S(t, v), b = p.acc_S(t, 0);
        ASSERT_EQ(x, (TileCoord{b.row + p.s_values.at[v].row, b.col + p.s_values.at[v].col}));
        ASSERT_EQ(x.col / 16, p.p_reg[v] / 4);
        ASSERT_EQ(p.frag_P.owner(x.row, x.col % 16), (ThreadValue{t, 2 * (p.p_reg[v] % 4) + v % 2}));
      }
    for (int h = 0; h < 2; ++h)
      for (int k = 1; k < bn / 4; ++k) {
        const TileCoord a = p.s_values.at[p.s_values.row_value[h][k - 1]], b = p.s_values.at[p.s_values.row_value[h][k]];
        EXPECT_EQ(a.row, b.row);
        EXPECT_LT(a.col, b.col);
      }
  }
}

// The epilogue's staging addresses: a thread's pair at column 8 j of its row is the row's offset XOR the chunk plus the
// box; the smem epilogue's steps of rpp rows add exactly where the kernel takes them (rpp whole 8-row swizzle groups:
// dim_v 64 and 128, not 256's 4 rows nor 192, whose 24 chunks do not divide 128 threads).
TEST(AttnWgmmaPlan, EpilogueAddressesAreTheLayout) {
  for (int dim : {64, 128, 192, 256}) {
    const AttnFwdWgmmaPlan p = make_plan(AttnFwdWgmmaConfig{.dim = dim, .dim_v = dim});
    for (int t = 0; t < 128; ++t)
      for (int h = 0; h < 2; ++h) {
        const TileCoord lc = p.acc_O(t, 0), x = p.o_values.at[p.o_values.row_value[h][0]];
        const int o_row = p.byte(p.smem_O, lc.row + x.row, lc.col + x.col);
        for (int j = 0; j < dim / 8; ++j)
          ASSERT_EQ((o_row ^ p.o_chunk8[j]) + p.o_box8[j], p.byte(p.smem_O, lc.row + x.row, lc.col + x.col + 8 * j));
      }
    const int ch = dim / 8, rpp = 128 / ch;
    if (128 % ch != 0) continue;  // dim_v 192: the kernel takes each chunk's address from the layout
    bool steps_add = true;
    for (int t = 0; t < 128; ++t)
      for (int k = 0; k < 64 / rpp; ++k)
        steps_add = steps_add && p.byte(p.smem_O, t / ch, 8 * (t % ch)) + k * p.byte(p.smem_O, rpp, 0) ==
                                     p.byte(p.smem_O, k * rpp + t / ch, 8 * (t % ch));
    EXPECT_EQ(steps_add, rpp % 8 == 0) << dim;
  }
}

// Every config field reaches the name expression (and so the cache key, which hashes it).
TEST(AttnPlans, EveryFieldChangesTheName) {
  const AttnFwdMmaConfig m{};
  std::set<std::string> names = {name_expression(m)};
  for (AttnFwdMmaConfig x : {AttnFwdMmaConfig{.dim = 64}, AttnFwdMmaConfig{.block_M = 128}, AttnFwdMmaConfig{.block_N = 32},
                             AttnFwdMmaConfig{.warps = 8}, AttnFwdMmaConfig{.num_stages = 3}, AttnFwdMmaConfig{.causal = true},
                             AttnFwdMmaConfig{.bf16 = false}, AttnFwdMmaConfig{.varlen = true}})
    names.insert(name_expression(x));
  EXPECT_EQ(names.size(), 9u);
  EXPECT_EQ(name_expression(m), "tl::attn_fwd_mma<tl::AttnFwdMmaConfig{.dim = 128, .block_M = 64, .block_N = 64, "
                                ".warps = 4, .num_stages = 2, .causal = false, .bf16 = true, .varlen = false}>");
  names = {name_expression(AttnFwdWgmmaConfig{})};
  for (AttnFwdWgmmaConfig x :
       {AttnFwdWgmmaConfig{.dim = 64}, AttnFwdWgmmaConfig{.dim_v = 64}, AttnFwdWgmmaConfig{.block_M = 64}, AttnFwdWgmmaConfig{.block_N = 64},
        AttnFwdWgmmaConfig{.num_stages = 3}, AttnFwdWgmmaConfig{.q_stages = 1}, AttnFwdWgmmaConfig{.ping_pong = false},
        AttnFwdWgmmaConfig{.epilogue = AttnEpilogue::smem}, AttnFwdWgmmaConfig{.epilogue = AttnEpilogue::direct},
        AttnFwdWgmmaConfig{.causal = true}, AttnFwdWgmmaConfig{.bf16 = false}, AttnFwdWgmmaConfig{.varlen = true},
        AttnFwdWgmmaConfig{.dynamic = true}, AttnFwdWgmmaConfig{.uniform_desc = true}, AttnFwdWgmmaConfig{.pv_fence = true},
        AttnFwdWgmmaConfig{.softmax = AttnSoftmax::tree}, AttnFwdWgmmaConfig{.softmax = AttnSoftmax::lazy}})
    names.insert(name_expression(x));
  EXPECT_EQ(names.size(), 18u);
}

}  // namespace
}  // namespace tl
