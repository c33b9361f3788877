// attn.bwd.mma without a GPU: its plan against PTX facts (ldmatrix feeding the mma operands, the 128-byte swizzle,
// bank-conflict-free reads), the kernel's address splits, the key-block walk, configs compiling for sm_80 and sm_90a
// without spills, can_implement's reasons, and the float64 reference against finite differences of the forward.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <set>

#include "attention/attn_bwd_mma_plan.hpp"
#include "library/library.hpp"
#include "tests/support/scratch_jit.hpp"
#include "tile/atom_registry.hpp"
#include "tile/layout_spec.hpp"

namespace tl {
namespace {

using KV = std::map<std::string, std::string>;

const KernelSpec& bwd() { return *library_registry().find("attn.bwd.mma").value(); }

// Configs the tests walk: the defaults at both head dims, and the other tile shapes and warp counts.
std::vector<AttnBwdMmaConfig> plan_configs() {
  std::vector<AttnBwdMmaConfig> out;
  for (int dim : {64, 128})
    for (int bm : {64, 128})
      for (int bn : {64, 128})
        for (int warps : {4, 8}) {
          AttnBwdMmaConfig c;
          c.dim_qk = c.dim_v = dim;
          c.block_M = bm;
          c.block_N = bn;
          c.warps = warps;
          if (make_plan(c).ok()) out.push_back(c);
        }
  for (int bm : {64, 128}) {  // dim_qk 192, dim_v 128: warp tiles of 48 columns straddle the 64-column panels
    AttnBwdMmaConfig c;
    c.dim_qk = 192;
    c.block_M = bm;
    c.block_N = 64;
    out.push_back(c);
  }
  return out;
}

std::string describe(const AttnBwdMmaConfig& c) { return name_expression(c); }

// [SECTION] the plan against PTX facts

// ldmatrix.x4 as the PTX ISA defines it, on a shared-memory image whose element at offset L(r, c) is (r, c): lane
// 8 j + i supplies the address of row i of matrix j (8 contiguous 16-bit elements); lane l receives in register j
// the elements (row l / 4, columns 2 (l % 4), +1) of matrix j, or with .trans (rows 2 (l % 4), +1, column l / 4).
struct Smem {
  std::vector<TileCoord> at;  // offset -> (row, col)
  explicit Smem(const SwizzledLayout& L) {
    const int rows = L.layout().mode(0).size(), cols = L.layout().mode(1).size();
    at.assign(static_cast<std::size_t>(rows * cols), TileCoord{-1, -1});
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < cols; ++c) at[static_cast<std::size_t>(L(r, c))] = {r, c};
  }
};

// The (row, col) register j, element e of lane `lane` receives, given each lane's element offset.
TileCoord ldmatrix_x4(const Smem& m, const std::vector<int>& addr, bool trans, int lane, int j, int e) {
  const int row = trans ? 2 * (lane % 4) + e : lane / 4, col = trans ? lane / 4 : 2 * (lane % 4) + e;
  const int start = addr[static_cast<std::size_t>(8 * j + row)];
  return m.at[static_cast<std::size_t>(start + col)];
}

// The element offset the kernel's ldmatrix reads for `lane` in GEMM g: operand A (x = its m16 tile) or B (x = its
// 16-column pair) of the warp tile at `origin`, k step kk — the lane part joined with the block part, as the kernel
// splits them.
int kernel_ldm_offset(const AttnBwdMmaConfig& c, AttnBwdGemm g, bool operand_a, TileCoord origin, int x, int kk, int lane) {
  const AttnBwdOperands op = attn_bwd_operands(c, g);
  const bool trans = operand_a ? op.a_trans : op.b_trans;
  const SwizzledLayout L = attn_bwd_tile(c, operand_a ? op.a : op.b);
  const bool per_pair = !operand_a && attn_bwd_b_lane_per_pair(c, g);
  const int mn0 = (operand_a ? origin.row : origin.col) + (per_pair ? 16 * x : 0);
  int lane_part = 0;
  if (operand_a)
    lane_part = trans ? attn_bwd_ldm_lane_offset<true, true>(L, mn0, lane) : attn_bwd_ldm_lane_offset<true, false>(L, mn0, lane);
  else
    lane_part = trans ? attn_bwd_ldm_lane_offset<false, true>(L, mn0, lane) : attn_bwd_ldm_lane_offset<false, false>(L, mn0, lane);
  return L.join_disjoint(lane_part, attn_bwd_ldm_block_offset(L, trans, per_pair ? 0 : 16 * x, 16 * kk));
}

TEST(AttnBwdPlan, LdmatrixFeedsEveryMmaOperandOfEveryGemm) {
  for (const AttnBwdMmaConfig& c : plan_configs()) {
    SCOPED_TRACE(describe(c));
    for (AttnBwdGemm g : {AttnBwdGemm::s, AttnBwdGemm::dp, AttnBwdGemm::dv, AttnBwdGemm::dk, AttnBwdGemm::dq}) {
      SCOPED_TRACE("gemm " + std::to_string(static_cast<int>(g)));
      const AttnBwdOperands op = attn_bwd_operands(c, g);
      const AttnBwdWarpTiling t = attn_bwd_tiling(c, g);
      const SwizzledLayout la = attn_bwd_tile(c, op.a), lb = attn_bwd_tile(c, op.b);
      const Smem ma(la), mb(lb);
      const Fragment fa = mma_m16n8k16_a_f16(), fb = mma_m16n8k16_b_f16();
      // the stored (row, col) of an operand element (mn, k)
      for (int w = 0; w < c.warps; ++w) {
        const TileCoord origin = t.acc(32 * w, 0);
        for (int kk = 0; kk < op.k16; ++kk) {
          for (int i = 0; i < 2; ++i) {
            std::vector<int> addr(32);
            for (int l = 0; l < 32; ++l) addr[static_cast<std::size_t>(l)] = kernel_ldm_offset(c, g, true, origin, i, kk, l);
            for (int l = 0; l < 32; ++l)
              for (int v = 0; v < 8; ++v) {
                const TileCoord want = fa(l, v);  // (m, k) in the 16x16 A tile
                const TileCoord got = ldmatrix_x4(ma, addr, op.a_trans, l, v / 2, v % 2);
                const TileCoord s = attn_bwd_stored(op.a_trans, origin.row + 16 * i + want.row, 16 * kk + want.col);
                ASSERT_EQ(got, s) << "A: warp " << w << " lane " << l << " value " << v << " kk " << kk << " i " << i;
              }
          }
          for (int jj = 0; jj < t.n8 / 2; ++jj) {
            std::vector<int> addr(32);
            for (int l = 0; l < 32; ++l) addr[static_cast<std::size_t>(l)] = kernel_ldm_offset(c, g, false, origin, jj, kk, l);
            for (int l = 0; l < 32; ++l)
              for (int j = 0; j < 4; ++j)  // register j: b register j % 2 of n8 tile j / 2
                for (int e = 0; e < 2; ++e) {
                  const TileCoord want = fb(l, 2 * (j % 2) + e);  // (k, n) in the 16x8 B tile
                  const TileCoord got = ldmatrix_x4(mb, addr, op.b_trans, l, j, e);
                  const TileCoord s =
                      attn_bwd_stored(op.b_trans, origin.col + 16 * jj + 8 * (j / 2) + want.col, 16 * kk + want.row);
                  ASSERT_EQ(got, s) << "B: warp " << w << " lane " << l << " reg " << j << " kk " << kk;
                }
          }
        }
      }
    }
  }
}

// Every ldmatrix row the GEMMs read is 16 contiguous bytes, and a matrix's 8 rows fall in 8 different 16-byte bank
// groups (one wavefront per matrix: the point of the swizzle).
// The one-lane-part split breaks where a warp's columns straddle a panel: the per-pair split is needed, not a habit.
TEST(AttnBwdPlan, PerPairLanePartsOnlyWhereTheSingleSplitBreaks) {
  for (const AttnBwdMmaConfig& c : plan_configs())
    for (AttnBwdGemm g : {AttnBwdGemm::s, AttnBwdGemm::dp, AttnBwdGemm::dv, AttnBwdGemm::dk, AttnBwdGemm::dq}) {
      const AttnBwdOperands op = attn_bwd_operands(c, g);
      const AttnBwdWarpTiling t = attn_bwd_tiling(c, g);
      const SwizzledLayout L = attn_bwd_tile(c, op.b);
      bool single_ok = true;
      for (int w = 0; w < c.warps; ++w)
        for (int l = 0; l < 32; ++l)
          for (int jj = 0; jj < t.n8 / 2; ++jj) {
            const int o = t.acc(32 * w, 0).col;
            auto lane = [&](int mn) {
              return op.b_trans ? attn_bwd_ldm_lane_offset<false, true>(L, mn, l) : attn_bwd_ldm_lane_offset<false, false>(L, mn, l);
            };
            single_ok &= L.join_disjoint(lane(o), attn_bwd_ldm_block_offset(L, op.b_trans, 16 * jj, 0)) == lane(o + 16 * jj);
          }
      EXPECT_EQ(attn_bwd_b_lane_per_pair(c, g), !single_ok) << describe(c) << " gemm " << static_cast<int>(g);
    }
}

TEST(AttnBwdPlan, LdmatrixRowsAreWholeAndConflictFree) {
  for (const AttnBwdMmaConfig& c : plan_configs()) {
    SCOPED_TRACE(describe(c));
    for (AttnBwdGemm g : {AttnBwdGemm::s, AttnBwdGemm::dp, AttnBwdGemm::dv, AttnBwdGemm::dk, AttnBwdGemm::dq}) {
      const AttnBwdOperands op = attn_bwd_operands(c, g);
      const AttnBwdWarpTiling t = attn_bwd_tiling(c, g);
      for (int side = 0; side < 2; ++side) {
        const Smem m(attn_bwd_tile(c, side == 0 ? op.a : op.b));
        for (int w = 0; w < c.warps; ++w) {
          const TileCoord o = t.acc(32 * w, 0);
          for (int x = 0; x < (side == 0 ? 2 : t.n8 / 2); ++x)
            for (int kk = 0; kk < op.k16; ++kk) {
              std::set<int> banks[4];
              for (int l = 0; l < 32; ++l) {
                const int a = kernel_ldm_offset(c, g, side == 0, o, x, kk, l);
                ASSERT_EQ(a % 8, 0) << "a row address is a 16-byte chunk";
                const TileCoord first = m.at[static_cast<std::size_t>(a)];
                for (int e = 1; e < 8; ++e)
                  ASSERT_EQ(m.at[static_cast<std::size_t>(a + e)], (TileCoord{first.row, first.col + e}));
                banks[l / 8].insert((a * 2 / 16) % 8);
              }
              for (const auto& b : banks) EXPECT_EQ(b.size(), 8u) << "gemm " << static_cast<int>(g) << " side " << side;
            }
        }
      }
    }
  }
}

// Each tile is the (rows, cols) image TMA's SWIZZLE_128B writes with 64-column boxes (CUDA driver API: within each
// 1024-byte atom of 8 rows x 128 bytes, 16-byte chunk c of row r lands at chunk c ^ (r % 8); boxes one after the
// other), written here from that rule rather than from smem_layout; and a bijection onto the tile's bytes.
TEST(AttnBwdPlan, TilesAreTheSwizzle128Image) {
  for (const AttnBwdMmaConfig& c : plan_configs()) {
    SCOPED_TRACE(describe(c));
    for (AttnBwdTile t : {AttnBwdTile::q, AttnBwdTile::k, AttnBwdTile::v, AttnBwdTile::dout, AttnBwdTile::p}) {
      const SwizzledLayout L = attn_bwd_tile(c, t);
      const int rows = L.layout().mode(0).size(), cols = L.layout().mode(1).size();
      std::vector<bool> seen(static_cast<std::size_t>(2 * rows * cols), false);
      for (int r = 0; r < rows; ++r)
        for (int col = 0; col < cols; ++col) {
          const int box = col / 64, byte = 2 * (col % 64);
          const int want = box * rows * 128 + r * 128 + (((byte / 16) ^ (r % 8)) * 16) + byte % 16;
          ASSERT_EQ(2 * L(r, col), want) << r << "," << col;
          seen[static_cast<std::size_t>(want)] = true;
        }
      for (std::size_t i = 0; i < seen.size(); i += 2) EXPECT_TRUE(seen[i]);
    }
  }
}

// The kernel evaluates each fragment at its thread's first value and adds the value's offset from thread 0, and each
// tile layout at the thread's first coordinate and XORs the rest in: both must equal the objects themselves.
TEST(AttnBwdPlan, ThreadSplitsEqualTheObjects) {
  for (const AttnBwdMmaConfig& c : plan_configs()) {
    SCOPED_TRACE(describe(c));
    auto additive = [&](const Fragment& f, const char* what) {
      ASSERT_TRUE(f.ok()) << what;
      for (int t = 0; t < f.num_threads(); ++t)
        for (int v = 0; v < f.num_values(); ++v) {
          const TileCoord a = f(t, 0), b = f(0, v);
          ASSERT_EQ(f(t, v), (TileCoord{a.row + b.row, a.col + b.col})) << what << " thread " << t << " value " << v;
        }
    };
    auto xor_split = [&](const SwizzledLayout& L, const Fragment& f, int col_scale, const char* what) {
      for (int t = 0; t < f.num_threads(); ++t)
        for (int v = 0; v < f.num_values(); ++v) {
          const TileCoord a = f(t, 0), b = f(0, v);
          ASSERT_EQ(L(a.row + b.row, col_scale * (a.col + b.col)), L.join_disjoint(L(a.row, col_scale * a.col), L(b.row, col_scale * b.col)))
              << what << " thread " << t << " value " << v;
        }
    };
    for (AttnBwdGemm g : {AttnBwdGemm::s, AttnBwdGemm::dv, AttnBwdGemm::dk, AttnBwdGemm::dq})
      additive(attn_bwd_tiling(c, g).acc, "accumulator");
    for (AttnBwdTile t : {AttnBwdTile::q, AttnBwdTile::k, AttnBwdTile::v, AttnBwdTile::dout}) {
      additive(attn_bwd_copy(c, t), "copy");
      xor_split(attn_bwd_tile(c, t), attn_bwd_copy(c, t), 8, "copy address");
    }
    additive(attn_bwd_copy_dq(c), "dQ store");
    additive(attn_bwd_dot(c), "D");
    xor_split(attn_bwd_tile(c, AttnBwdTile::o), attn_bwd_dot(c), 8, "D address");
    xor_split(attn_bwd_tile(c, AttnBwdTile::p), attn_bwd_tiling(c, AttnBwdGemm::s).acc, 1, "P/dS address");
  }
}

// Copies cover their tile once, 8 consecutive threads moving one row's 128 contiguous bytes; the accumulators cover
// their GEMM tiles once; the registered atoms are the fragments the plan names.
TEST(AttnBwdPlan, FragmentsCoverTheirTilesAndAreTheAtoms) {
  for (const AttnBwdMmaConfig& c : plan_configs()) {
    SCOPED_TRACE(describe(c));
    const AttnBwdMmaPlan p = make_plan(c);
    for (const Fragment* f : {&p.copy_q, &p.copy_k, &p.copy_v, &p.copy_do, &p.copy_dq, &p.dot, &p.s.acc, &p.dk.acc,
                              &p.dv.acc, &p.dq.acc})
      EXPECT_TRUE(f->covers_tile());
    for (int t = 0; t < p.threads; t += 8)
      for (int e = 0; e < 8; ++e) EXPECT_EQ(p.copy_q(t + e, 0), (TileCoord{p.copy_q(t, 0).row, p.copy_q(t, 0).col + e}));
    EXPECT_EQ(fragment_spec(p.mma_a, "mma.m16n8k16.bf16.A"), "mma.m16n8k16.bf16.A");
    EXPECT_EQ(fragment_spec(p.mma_b, "mma.m16n8k16.f16.B"), "mma.m16n8k16.f16.B");
    EXPECT_EQ(fragment_spec(p.mma_c, "mma.m16n8k16.f32.C"), "mma.m16n8k16.f32.C");
    EXPECT_EQ(fragment_spec(p.ldm_rows, "ldmatrix.x4.rows"), "ldmatrix.x4.rows");
  }
}

// Shared memory: regions in order, 128-byte aligned, not overlapping, and the total what the host asks for.
TEST(AttnBwdPlan, SharedMemoryRegions) {
  for (const AttnBwdMmaConfig& c0 : plan_configs())
    for (int stages : {1, 2}) {
      AttnBwdMmaConfig c = c0;
      c.num_stages = stages;
      const AttnBwdMmaPlan p = make_plan(c);
      const unsigned k = 2u * c.block_N * c.dim_qk, v = 2u * c.block_N * c.dim_v, q = 2u * c.block_M * c.dim_qk,
                     d = 2u * c.block_M * c.dim_v, pp = 2u * c.block_M * c.block_N;
      EXPECT_EQ(p.off_v, p.off_k + k);
      EXPECT_EQ(p.off_q(0), p.off_v + v);
      EXPECT_EQ(p.off_do(stages - 1) + d, p.off_o);
      EXPECT_EQ(p.off_p, p.off_o + d);
      EXPECT_EQ(p.off_ds, p.off_p + pp);
      EXPECT_EQ(p.off_d, p.off_ds + pp);
      EXPECT_EQ(p.off_flag, p.off_d + 4u * c.block_M);
      for (unsigned off : {p.off_k, p.off_v, p.off_q(0), p.off_do(0), p.off_o, p.off_p, p.off_ds, p.off_d})
        EXPECT_EQ(off % 128, 0u);
      EXPECT_EQ(p.smem_bytes, p.smem_used + kAttnBwdSmemAlign - 16);
      EXPECT_EQ(p.smem_used, k + v + stages * (q + d) + d + 2 * pp + 4u * c.block_M + 16);
    }
}

// [SECTION] the walk over key blocks and query tiles

// Against every (row, key) pair: a key block visits exactly the query tiles where some row sees one of its keys, and
// a query tile's dQ gets its parts from exactly the key blocks 0 .. tile_key_blocks - 1.
TEST(AttnBwdPlan, WalkVisitsExactlyTheTilesWithVisiblePairs) {
  for (bool causal : {false, true})
    for (int bm : {64, 128})
      for (int bn : {64, 128}) {
        AttnBwdMmaConfig c;
        c.causal = causal;
        c.block_M = bm;
        c.block_N = bn;
        for (const auto& [lq, lk] : std::vector<std::pair<int, int>>{{1, 1}, {77, 300}, {300, 300}, {129, 640}, {64, 128}, {200, 201}}) {
          if (causal && lq > lk) continue;
          const int tiles_m = (lq + bm - 1) / bm, blocks = (lk + bn - 1) / bn;
          for (int m = 0; m < tiles_m; ++m) {
            int n_seen = 0;
            for (int kb = 0; kb < blocks; ++kb) {
              bool any = false;
              for (int r = m * bm; r < std::min(lq, (m + 1) * bm) && !any; ++r)
                for (int j = kb * bn; j < std::min(lk, (kb + 1) * bn) && !any; ++j) any = !causal || j <= r + lk - lq;
              EXPECT_EQ(any, m >= attn_bwd_first_tile(c, kb, lq, lk)) << lq << "x" << lk << " m " << m << " kb " << kb;
              EXPECT_EQ(any, kb < attn_bwd_tile_key_blocks(c, m, lq, lk)) << lq << "x" << lk << " m " << m << " kb " << kb;
              n_seen += any;
            }
            EXPECT_GE(n_seen, 1);  // every tile completes: some key block adds to it
          }
        }
      }
}

// [SECTION] the spec

TEST(AttnBwd, ConfigsCompileForAmpereAndHopperWithoutSpilling) {
  const std::vector<std::pair<KV, KV>> cases = {
      {{}, {}},
      {{{"dim", "64"}, {"causal", "true"}, {"varlen", "true"}, {"dtype", "f16"}},
       {{"deterministic", "true"}, {"num_stages", "1"}}},
  };
  for (const std::string arch : {"sm_90a", "sm_80"})
    for (const auto& [problem, config] : cases) {
      auto inst = instantiate(bwd(), problem, config, limits_for_arch(arch));
      ASSERT_TRUE(inst.ok()) << inst.status().message();
      SCOPED_TRACE(arch + " " + inst->name_expression);
      JitOptions opt;
      opt.arch = arch;
      auto k = test::scratch_jit().compile(compile_request(*inst, opt));
      ASSERT_TRUE(k.ok()) << k.status().message();
      EXPECT_EQ(k->resources.spill_store_bytes, 0);
      EXPECT_EQ(k->resources.stack_frame_bytes, 0);
    }
  // dim 192 / dim_v 128 sits at the accumulator limit (80 + 16): it compiles, with spills (about 220 bytes).
  for (const std::string arch : {"sm_90a", "sm_80"}) {
    auto inst = instantiate(bwd(), {{"dim", "192"}, {"dim_v", "128"}, {"causal", "true"}}, {}, limits_for_arch(arch));
    ASSERT_TRUE(inst.ok()) << inst.status().message();
    JitOptions opt;
    opt.arch = arch;
    auto k = test::scratch_jit().compile(compile_request(*inst, opt));
    ASSERT_TRUE(k.ok()) << k.status().message();
  }
}

void expect_refused(const KV& problem, const KV& config, const std::string& arch, const std::vector<std::string>& words) {
  auto inst = instantiate(bwd(), problem, config, limits_for_arch(arch));
  ASSERT_FALSE(inst.ok());
  EXPECT_EQ(inst.status().code(), ErrorCode::unsupported) << inst.status().message();
  for (const auto& w : words) EXPECT_NE(inst.status().message().find(w), std::string::npos) << inst.status().message();
}

TEST(AttnBwd, CanImplementRefusesWithReasons) {
  expect_refused({{"heads", "16"}, {"heads_kv", "3"}}, {}, "sm_90a", {"heads_kv=3", "heads=16", "divisor"});
  expect_refused({{"causal", "true"}, {"seq_q", "300"}, {"seq_k", "200"}}, {}, "sm_90a", {"seq_q=300", "seq_k=200"});
  // (128 * 256 + 128 * 128) / 128 = 384 accumulators per thread; (128 * 256 + 64 * 128) / 256 = 160
  expect_refused({}, {{"block_M", "128"}, {"block_N", "128"}, {"warps", "4"}}, "sm_90a", {"384", "spills"});
  expect_refused({}, {{"block_N", "128"}}, "sm_90a", {"160", "block_N=128", "dim=128"});
  // dim 192 takes dim_v 128 unless told (192 / 192 would hold (64 * 384 + 64 * 64) / 256 = 112 accumulators)
  auto mla = instantiate(bwd(), {{"dim", "192"}}, {}, limits_for_arch("sm_80"));
  ASSERT_TRUE(mla.ok()) << mla.status().message();
  EXPECT_NE(mla->name_expression.find(".dim_qk = 192, .dim_v = 128"), std::string::npos);
  expect_refused({{"dim", "192"}, {"dim_v", "128"}}, {{"block_N", "128"}}, "sm_90a", {"dim=192, dim_v=128"});
  EXPECT_TRUE(instantiate(bwd(), {{"dim", "64"}}, {{"block_N", "128"}}, limits_for_arch("sm_90a")).ok());
  // 128 query rows at dim 128 with two Q/dO stages: 230016 bytes fit sm_90a's 232448, not sm_80's 166912
  const KV big = {{"block_M", "128"}};
  EXPECT_TRUE(instantiate(bwd(), {}, big, limits_for_arch("sm_90a")).ok());
  expect_refused({}, big, "sm_80", {"230016", "shared memory", "num_stages=1"});
  EXPECT_TRUE(instantiate(bwd(), {}, {{"block_M", "128"}, {"num_stages", "1"}}, limits_for_arch("sm_80")).ok());
}

TEST(AttnBwd, NameExpressionCacheKeysFlopsAndArgs) {
  const auto lim = limits_for_arch("sm_90a");
  auto a = instantiate(bwd(), {}, {}, lim).value();
  EXPECT_NE(a.name_expression.find("tl::attn_bwd_mma<tl::AttnBwdMmaConfig{.dim_qk = 128, .dim_v = 128, .causal = false"),
            std::string::npos)
      << a.name_expression;
  auto b = instantiate(bwd(), {}, {{"deterministic", "true"}}, lim).value();
  EXPECT_NE(a.name_expression, b.name_expression);
  JitOptions opt;
  EXPECT_NE(test::scratch_jit().cache_key(compile_request(a, opt)).value(),
            test::scratch_jit().cache_key(compile_request(b, opt)).value());
  // 2.5 x the forward's two GEMMs; causal half.
  const KV p = {{"batch", "2"}, {"seq_q", "1000"}, {"seq_k", "1500"}, {"heads", "8"}, {"heads_kv", "2"}, {"dim", "64"}};
  auto k = instantiate(bwd(), p, {}, lim).value();
  EXPECT_DOUBLE_EQ(k.flops, 2.5 * 4.0 * 2 * 8 * 1000.0 * 1500.0 * 64);
  KV pc = p;
  pc["seq_q"] = "1500";
  pc["causal"] = "true";
  EXPECT_DOUBLE_EQ(instantiate(bwd(), pc, {}, lim).value().flops, 2.5 * 2.0 * 2 * 8 * 1500.0 * 1500.0 * 64);
  EXPECT_EQ(k.launch.grid.x, 24u);  // ceil(1500 / 64)
  EXPECT_EQ(k.launch.grid.y, 2u);
  EXPECT_EQ(k.launch.grid.z, 2u);
  EXPECT_EQ(bwd().probes, attn_bwd_mma_probes());
  std::map<std::string, const ArgSpec*> args;
  for (const auto& x : k.args) args[x.name] = &x;
  EXPECT_EQ(args.at("dQ")->shape, (std::vector<std::int64_t>{2, 1000, 8, 64}));
  EXPECT_EQ(args.at("dK")->shape, (std::vector<std::int64_t>{2, 1500, 2, 64}));
  EXPECT_EQ(args.at("dq_accum")->role, ArgRole::scratch);
  EXPECT_EQ(args.at("dq_counters")->shape, (std::vector<std::int64_t>{2 * 8 * 16}));  // ceil(1000 / 64) tiles
  EXPECT_EQ(args.at("LSE")->fill.kind, Fill::Kind::constant);
  EXPECT_GT(args.at("LSE")->fill.value, std::log(1500.0));
  for (const auto& l : bwd().layouts(k.problem, k.config)) EXPECT_TRUE(parse_spec(l.spec).ok) << l.name << ": " << l.spec;
}

// [SECTION] the reference

// A tiny consistent problem in float64: O and LSE are the forward's, so the reference's gradients must be those of
// the loss L = sum(dO * O(Q, K, V)), taken here by central finite differences of a forward written from the definition.
struct Tiny {
  Values p;
  std::int64_t b, sq, sk, h, hkv, d, dv;
  bool causal;
};

HostTensor f64_tensor(const std::string& name, std::vector<std::int64_t> shape, std::uint64_t seed, double lo, double hi) {
  HostTensor t{name, DType::f64, shape, {}};
  std::int64_t n = 1;
  for (auto s : shape) n *= s;
  t.data.resize(static_cast<std::size_t>(n) * 8);
  for (std::int64_t i = 0; i < n; ++i)
    store_element(t.data.data(), DType::f64, static_cast<std::uint64_t>(i),
                  lo + (hi - lo) * (static_cast<double>((seed * 2654435761u + static_cast<std::uint64_t>(i) * 40503u) % 1000) / 1000.0));
  return t;
}

// O and LSE of the forward from the definition (dense layouts), per (b, h, s).
void forward(const Tiny& x, const HostTensor& Q, const HostTensor& K, const HostTensor& V, HostTensor& O, HostTensor& LSE) {
  const double scale = 1.0 / std::sqrt(static_cast<double>(x.d));
  for (std::int64_t b = 0; b < x.b; ++b)
    for (std::int64_t h = 0; h < x.h; ++h)
      for (std::int64_t s = 0; s < x.sq; ++s) {
        std::vector<double> w;
        double mx = -std::numeric_limits<double>::infinity();
        const std::int64_t hk = h / (x.h / x.hkv);
        for (std::int64_t j = 0; j < x.sk; ++j) {
          if (x.causal && j > s + x.sk - x.sq) break;
          double dot = 0;
          for (std::int64_t c = 0; c < x.d; ++c)
            dot += Q.at(((b * x.sq + s) * x.h + h) * x.d + c) * K.at(((b * x.sk + j) * x.hkv + hk) * x.d + c);
          w.push_back(dot * scale);
          mx = std::max(mx, dot * scale);
        }
        double sum = 0;
        for (double& v : w) sum += (v = std::exp(v - mx));
        store_element(LSE.data.data(), DType::f64, static_cast<std::uint64_t>((b * x.h + h) * x.sq + s), mx + std::log(sum));
        for (std::int64_t c = 0; c < x.dv; ++c) {
          double acc = 0;
          for (std::size_t j = 0; j < w.size(); ++j)
            acc += w[j] / sum * V.at(((b * x.sk + static_cast<std::int64_t>(j)) * x.hkv + hk) * x.dv + c);
          store_element(O.data.data(), DType::f64, static_cast<std::uint64_t>(((b * x.sq + s) * x.h + h) * x.dv + c), acc);
        }
      }
}

double loss(const Tiny& x, const HostTensor& Q, const HostTensor& K, const HostTensor& V, const HostTensor& dO) {
  HostTensor O = f64_tensor("O", dO.shape, 0, 0, 0), L = f64_tensor("LSE", {x.b, x.h, x.sq}, 0, 0, 0);
  forward(x, Q, K, V, O, L);
  double s = 0;
  for (std::int64_t i = 0; i < O.numel(); ++i) s += O.at(i) * dO.at(i);
  return s;
}

TEST(AttnBwd, ReferenceIsTheGradientOfTheForward) {
  for (bool causal : {false, true})
    for (int dims : {64, 192}) {
      SCOPED_TRACE((causal ? "causal, dim " : "not causal, dim ") + std::to_string(dims));
      Tiny x;
      x.b = 2, x.sq = 5, x.sk = 7, x.h = 4, x.hkv = 2, x.d = dims, x.dv = dims == 192 ? 128 : dims, x.causal = causal;
      const KV given = {{"batch", "2"}, {"seq_q", "5"}, {"seq_k", "7"}, {"heads", "4"}, {"heads_kv", "2"},
                        {"dim", std::to_string(x.d)}, {"dim_v", std::to_string(x.dv)}, {"causal", causal ? "true" : "false"}};
      x.p = bwd().problem.resolve(given, "problem").value();
      HostTensor Q = f64_tensor("Q", {x.b, x.sq, x.h, x.d}, 1, -1, 1), K = f64_tensor("K", {x.b, x.sk, x.hkv, x.d}, 2, -1, 1),
                 V = f64_tensor("V", {x.b, x.sk, x.hkv, x.dv}, 3, -1, 1), dO = f64_tensor("dO", {x.b, x.sq, x.h, x.dv}, 4, -1, 1);
      HostTensor O = f64_tensor("O", {x.b, x.sq, x.h, x.dv}, 0, 0, 0), LSE = f64_tensor("LSE", {x.b, x.h, x.sq}, 0, 0, 0);
      forward(x, Q, K, V, O, LSE);
      ReferenceInputs in;
      for (HostTensor* t : {&Q, &K, &V, &O, &dO, &LSE}) in.tensors[t->name] = *t;
      for (const auto& [out, tensor] : std::vector<std::pair<std::string, HostTensor*>>{{"dQ", &Q}, {"dK", &K}, {"dV", &V}}) {
        std::vector<std::int64_t> idx(static_cast<std::size_t>(tensor->numel()));
        for (std::size_t i = 0; i < idx.size(); ++i) idx[i] = static_cast<std::int64_t>(i);
        const std::vector<double> ref = bwd().reference(x.p, in, out, idx).value();
        double worst = 0, scale = 0;
        for (std::int64_t i = 0; i < tensor->numel(); i += 13) {  // every 13th element: finite differences are slow
          const double h = 1e-5, v0 = tensor->at(i);
          store_element(tensor->data.data(), DType::f64, static_cast<std::uint64_t>(i), v0 + h);
          const double up = loss(x, Q, K, V, dO);
          store_element(tensor->data.data(), DType::f64, static_cast<std::uint64_t>(i), v0 - h);
          const double down = loss(x, Q, K, V, dO);
          store_element(tensor->data.data(), DType::f64, static_cast<std::uint64_t>(i), v0);
          const double fd = (up - down) / (2 * h);
          worst = std::max(worst, std::abs(fd - ref[static_cast<std::size_t>(i)]));
          scale = std::max(scale, std::abs(fd));
        }
        EXPECT_GT(scale, 1e-3) << out;
        EXPECT_LT(worst, 1e-6 * std::max(1.0, scale)) << out;
      }
    }
}

// Varlen: the reference of a packed sequence equals the dense reference of that sequence alone (same rows, same
// LSE entries), and a sequence without keys has zero dQ.
TEST(AttnBwd, VarlenReferenceIsPerSequence) {
  const KV packed_problem = {{"batch", "3"}, {"seq_q", "40"}, {"seq_k", "50"}, {"heads", "2"}, {"heads_kv", "1"},
                             {"dim", "64"}, {"varlen", "true"}};
  auto k = instantiate(bwd(), packed_problem, {}, limits_for_arch("sm_90a")).value();
  ReferenceInputs in;
  const ArgSpec* cu_q = nullptr;
  for (const auto& a : k.args) {
    if (a.kind == ArgSpec::Kind::scalar) continue;
    if (a.role == ArgRole::in) in.tensors[a.name] = make_host_tensor(a);
    if (a.name == "cu_seqlens_q") cu_q = &a;
  }
  ASSERT_NE(cu_q, nullptr);
  auto cu = [&](const std::string& name) {
    for (const auto& a : k.args)
      if (a.name == name) {
        std::vector<std::int32_t> v(a.data.size() / 4);
        std::memcpy(v.data(), a.data.data(), a.data.size());
        return v;
      }
    return std::vector<std::int32_t>{};
  };
  const auto q_off = cu("cu_seqlens_q"), k_off = cu("cu_seqlens_k");
  ASSERT_EQ(q_off.size(), 4u);
  EXPECT_EQ(k_off[2] - k_off[1], 0) << "the second sequence has no key";
  // Sequence 1 (no key): dQ rows all zero.
  std::vector<std::int64_t> idx;
  for (std::int64_t i = q_off[1] * 2 * 64; i < q_off[2] * 2 * 64; ++i) idx.push_back(i);
  const std::vector<double> empty = bwd().reference(k.problem, in, "dQ", idx).value();
  EXPECT_EQ(empty.size(), idx.size());
  for (double v : empty) EXPECT_EQ(v, 0.0);
  // Sequence 2 (the last: seq_q x seq_k) against a dense problem of batch 1 built from its rows.
  const std::int64_t lq = q_off[3] - q_off[2], lk = k_off[3] - k_off[2];
  EXPECT_EQ(lq, 40);
  EXPECT_EQ(lk, 50);
  const Values dense = bwd().problem.resolve({{"batch", "1"}, {"seq_q", "40"}, {"seq_k", "50"}, {"heads", "2"},
                                              {"heads_kv", "1"}, {"dim", "64"}}, "problem").value();
  ReferenceInputs one;
  auto slice = [&](const std::string& name, std::int64_t row0, std::int64_t rows, std::int64_t width) {
    const HostTensor& t = in.tensor(name);
    HostTensor s{name, t.dtype, {rows * width}, {}};
    const std::size_t e = dtype_size(t.dtype);
    s.data.assign(t.data.begin() + static_cast<std::ptrdiff_t>(row0 * width * static_cast<std::int64_t>(e)),
                  t.data.begin() + static_cast<std::ptrdiff_t>((row0 + rows) * width * static_cast<std::int64_t>(e)));
    one.tensors[name] = s;
  };
  slice("Q", q_off[2], lq, 2 * 64);
  slice("O", q_off[2], lq, 2 * 64);
  slice("dO", q_off[2], lq, 2 * 64);
  slice("K", k_off[2], lk, 64);
  slice("V", k_off[2], lk, 64);
  {  // LSE [heads, total_q] -> [1, heads, 40]
    const HostTensor& t = in.tensor("LSE");
    HostTensor s{"LSE", DType::f32, {2 * lq}, std::vector<unsigned char>(static_cast<std::size_t>(2 * lq * 4))};
    for (std::int64_t h = 0; h < 2; ++h)
      for (std::int64_t r = 0; r < lq; ++r)
        store_element(s.data.data(), DType::f32, static_cast<std::uint64_t>(h * lq + r), t.at(h * q_off[3] + q_off[2] + r));
    one.tensors["LSE"] = s;
  }
  for (const std::string out : {"dQ", "dK", "dV"}) {
    const std::int64_t rows = out == "dQ" ? lq * 2 : lk;
    const std::int64_t row0 = out == "dQ" ? q_off[2] * 2 : k_off[2];
    std::vector<std::int64_t> a, b;
    for (std::int64_t i = 0; i < rows * 64; i += 5) {
      a.push_back(row0 * 64 + i);
      b.push_back(i);
    }
    const auto va = bwd().reference(k.problem, in, out, a).value(), vb = bwd().reference(dense, one, out, b).value();
    ASSERT_EQ(va.size(), vb.size());
    for (std::size_t i = 0; i < va.size(); ++i) EXPECT_DOUBLE_EQ(va[i], vb[i]) << out << " " << i;
  }
}

}  // namespace
}  // namespace tl
