// mla.decode's plan against the PTX ISA and CUDA facts it relies on: the tiles are what TMA SWIZZLE_128B boxes write,
// the wgmma descriptors' strides are the layouts', the fragments are the registered wgmma atoms, the split
// evaluations the kernel uses equal the layouts, the shared memory fits, and the typed config names every field.
#include <gtest/gtest.h>

#include <set>

#include "library/library.hpp"
#include "mla/mla_decode_plan.hpp"
#include "tests/support/scratch_jit.hpp"
#include "tile/atom_registry.hpp"
#include "tile/layout_spec.hpp"

namespace tl {
namespace {

const KernelSpec& mla() { return *library_registry().find("mla.decode").value(); }

std::vector<MlaDecodeConfig> all_configs() {
  std::vector<MlaDecodeConfig> out;
  for (bool causal : {false, true})
    for (bool bf16 : {false, true})
      for (int qk : {1, 2})
        for (bool vec : {false, true}) out.push_back({.causal = causal, .bf16 = bf16, .qk_warpgroups = qk, .vec_store = vec});
  return out;
}

// Where TMA puts element (r, c) of a box whose rows are 128 bytes, with CU_TENSOR_MAP_SWIZZLE_128B (CUDA driver API,
// "tensor map" swizzle modes): the 16-byte chunk index inside the row XOR the row index mod 8, the pattern
// repeating every 8 rows (1024 bytes, so the box must start 1024-aligned).
int tma_sw128_byte(int r, int c, int elem_bytes) {
  const int byte = c * elem_bytes;
  return r * 128 + (((byte / 16) ^ (r % 8)) * 16) + byte % 16;
}

TEST(MlaDecodePlan, TilesAreWhatTheTmaBoxesWrite) {
  const MlaDecodePlan p = make_plan({});
  ASSERT_TRUE(p.tile.ok() && p.p.ok());
  EXPECT_EQ(swizzle_bytes(p.swizzle), 128);
  EXPECT_EQ(p.panel_cols * 2, 128);  // a box row is the 128-byte swizzle span
  // The kernel issues box `panel` (columns [64 panel, 64 panel + 64)) at 2 * tile(0, 64 panel).
  for (int panel = 0; panel < p.panels; ++panel) {
    const int box = 2 * p.tile(0, panel * p.panel_cols);
    EXPECT_EQ(box % 1024, 0) << panel;
    for (int r = 0; r < p.rows; ++r)
      for (int c = 0; c < p.panel_cols; ++c)
        ASSERT_EQ(2 * p.tile(r, panel * p.panel_cols + c), box + tma_sw128_byte(r, c, 2)) << r << "," << c;
  }
  for (int r = 0; r < p.rows; ++r)
    for (int c = 0; c < kMlaBlock; ++c) ASSERT_EQ(2 * p.p(r, c), tma_sw128_byte(r, c, 2));
}

// A bijection onto [0, size): every element has its own place and none is left over.
void expect_bijection(const SwizzledLayout& l, int rows, int cols) {
  std::set<int> seen;
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) seen.insert(l(r, c));
  EXPECT_EQ(static_cast<int>(seen.size()), rows * cols);
  EXPECT_EQ(*seen.begin(), 0);
  EXPECT_EQ(*seen.rbegin(), rows * cols - 1);
  EXPECT_EQ(l.cosize(), rows * cols);
}

TEST(MlaDecodePlan, LayoutsAreBijectionsAndChunksStayInOneRow) {
  const MlaDecodePlan p = make_plan({});
  expect_bijection(p.tile, p.rows, kMlaDimQK);
  expect_bijection(p.p, p.rows, kMlaBlock);
  expect_bijection(p.row_max, p.rows, 2);
  EXPECT_EQ(p.row_sum.size(), p.row_sum.cosize());
  // Every 16-byte chunk a TMA box row, a P store pair or a 16-byte vector touches is contiguous inside one 128-byte row.
  for (const SwizzledLayout* l : {&p.tile, &p.p})
    for (int r = 0; r < p.rows; ++r)
      for (int c = 0; c < l->shape().child(1).product(); c += 8)
        for (int e = 1; e < 8; ++e) {
          ASSERT_EQ((*l)(r, c + e), (*l)(r, c) + e);
          ASSERT_EQ((*l)(r, c + e) / 64, (*l)(r, c) / 64);
        }
}

TEST(MlaDecodePlan, DescriptorStridesAreTheLayouts) {
  const MlaDecodePlan p = make_plan({});
  // PTX ISA, matrix descriptor, 128-byte swizzle: K-major, the stride byte offset is the distance between 8-row groups
  // (one 1024-byte swizzle atom); a k16 step of bf16 inside the 128-byte row is +32 bytes of the start address.
  EXPECT_EQ(p.desc_sbo, 1024u);
  for (const SwizzledLayout* l : {&p.tile, &p.p})
    for (int r = 0; r + 8 < p.rows; ++r)
      for (int c = 0; c < l->shape().child(1).product(); ++c) ASSERT_EQ(2 * ((*l)(r + 8, c) - (*l)(r, c)), static_cast<int>(p.desc_sbo));
  for (int k = 16; k < kMlaDimQK; k += 16) {
    if (k % p.panel_cols != 0) {
      EXPECT_EQ(2 * (p.tile(0, k) - p.tile(0, k - 16)), 32);
    }
  }
  // V read N-major (MN-major, SW128): the leading byte offset is the distance between 64-column groups of a row.
  EXPECT_EQ(p.desc_v_lbo, 8192u);
  for (int r = 0; r < p.rows; ++r)
    for (int c = 0; c + p.panel_cols < kMlaDimV; ++c)
      ASSERT_EQ(2 * (p.tile(r, c + p.panel_cols) - p.tile(r, c)), static_cast<int>(p.desc_v_lbo));
}

TEST(MlaDecodePlan, SharedMemoryMapFitsAndRegionsDoNotOverlap) {
  const DeviceLimits h100 = limits_for_arch("sm_90a");
  for (const MlaDecodeConfig& c : all_configs()) {
    const MlaDecodePlan p = make_plan(c);
    EXPECT_LE(static_cast<int>(p.smem_bytes), h100.smem_per_block_optin);
    EXPECT_EQ(p.smem_bytes, p.smem_used + 1024u);  // the base is aligned up to 1024 inside the allocation
    // [begin, end) of each region in order; tiles 1024-aligned (the SW128 atom), barriers 8-aligned.
    const std::vector<std::pair<unsigned, unsigned>> regions = {
        {p.off_q, p.off_q + p.tile_bytes},
        {p.kv_stage(0), p.kv_stage(0) + p.tile_bytes},
        {p.kv_stage(1), p.kv_stage(1) + p.tile_bytes},
        {p.off_p, p.off_p + 2u * static_cast<unsigned>(p.p.cosize())},
        {p.off_max, p.off_max + 4u * static_cast<unsigned>(p.row_max.cosize())},
        {p.off_sum, p.off_sum + 4u * static_cast<unsigned>(p.row_sum.cosize())},
        {p.off_bar, p.q_empty_bar() + 8u},
        {p.off_flag, p.off_flag + 4u}};
    for (std::size_t i = 0; i + 1 < regions.size(); ++i) EXPECT_LE(regions[i].second, regions[i + 1].first) << i;
    EXPECT_LE(regions.back().second, p.smem_used);
    for (unsigned off : {p.off_q, p.kv_stage(0), p.kv_stage(1), p.off_p}) EXPECT_EQ(off % 1024, 0u);
    std::set<unsigned> bars;
    for (int s = 0; s < 2; ++s) bars.insert({p.full_bar(s), p.empty_bar(s)});
    bars.insert({p.q_full_bar(), p.q_empty_bar()});
    EXPECT_EQ(bars.size(), 6u);
    for (unsigned b : bars) EXPECT_EQ(b % 8, 0u);
    EXPECT_EQ(p.tile_bytes, static_cast<unsigned>(p.panels * p.rows * 128));  // what the 9 boxes deliver
  }
}

TEST(MlaDecodePlan, FragmentsAreTheWgmmaAccumulators) {
  for (int qk : {1, 2}) {
    const MlaDecodePlan p = make_plan({.qk_warpgroups = qk});
    EXPECT_EQ(p.s_cols, qk == 1 ? 64 : 32);
    const std::string s_atom = "wgmma.m64n" + std::to_string(p.s_cols) + "k16.f32.C";
    EXPECT_EQ(fragment_spec(p.acc_s, s_atom), s_atom);
    EXPECT_EQ(fragment_spec(p.acc_o, "wgmma.m64n256k16.f32.C"), "wgmma.m64n256k16.f32.C");
    // The kernel's per-thread rows and columns: the PTX ISA's D fragment, row 16w + l/4 + 8h, col 8j + 2(l%4) + e
    // for thread 32w + l and value 4j + 2h + e.
    for (int t = 0; t < 128; ++t)
      for (int v = 0; v < p.acc_o.num_values(); ++v) {
        const int w = t / 32, l = t % 32, j = v / 4, h = (v / 2) % 2, e = v % 2;
        ASSERT_EQ(p.acc_o(t, v), (TileCoord{16 * w + l / 4 + 8 * h, 8 * j + 2 * (l % 4) + e}));
      }
  }
}

// The kernel adds a thread's coordinate (run-time) and a value's (a table): exact for a linear fragment, and every
// fragment it indexes is one.
TEST(MlaDecodePlan, FragmentsSplitIntoThreadAndValueParts) {
  for (int qk : {1, 2}) {
    const MlaDecodePlan p = make_plan({.qk_warpgroups = qk});
    for (const Fragment* f : {&p.acc_s, &p.acc_o, &p.out_vec}) {
      ASSERT_TRUE(f->linear());
      for (int t = 0; t < f->num_threads(); ++t)
        for (int v = 0; v < f->num_values(); ++v) {
          const int x = f->index(t, v);
          ASSERT_EQ((*f)(t, 0) + (*f)(0, v), (TileCoord{x % f->rows(), x / f->rows()}));
        }
    }
  }
}

// vec_store's quad transpose moves data only among a quad's four lanes and leaves each lane 16-byte vectors.
TEST(MlaDecodePlan, VectorStoreFragmentIsAQuadTransposeOfTheAccumulator) {
  const MlaDecodePlan p = make_plan({});
  ASSERT_TRUE(p.out_vec.covers_tile());
  for (int quad = 0; quad < 32; ++quad) {
    std::set<std::pair<int, int>> held, stored;
    for (int q = 0; q < 4; ++q)
      for (int v = 0; v < 128; ++v) {
        const TileCoord a = p.acc_o(4 * quad + q, v), b = p.out_vec(4 * quad + q, v);
        held.insert({a.row, a.col});
        stored.insert({b.row, b.col});
      }
    EXPECT_EQ(held, stored) << quad;
  }
  for (int t = 0; t < 128; ++t)
    for (int v = 0; v < 128; v += 8) {
      EXPECT_EQ(p.out_vec(t, v).col % 8, 0);
      for (int e = 1; e < 8; ++e) ASSERT_EQ(p.out_vec(t, v + e), (p.out_vec(t, v) + TileCoord{0, e}));
    }
}

// The P tile store: the thread's offset with one swizzle term, plus each value's constant offset, is the swizzled
// layout at the value's (row, tok0 + column), for every thread, value and consumer.
TEST(MlaDecodePlan, PTileStoreSplitEqualsTheSwizzledLayout) {
  for (int qk : {1, 2}) {
    const MlaDecodePlan p = make_plan({.qk_warpgroups = qk});
    for (int consumer = 0; consumer < qk; ++consumer) {
      const int tok0 = qk == 2 ? p.s_cols * consumer : 0;
      for (int t = 0; t < 128; ++t) {
        const TileCoord at = p.acc_s(t, 0);
        const int p_at = p.p.layout()(at.row, at.col);
        const int term = p.p.swizzle().term(p_at);
        for (int v = 0; v < p.acc_s.num_values(); ++v) {
          const TileCoord x = p.acc_s(t, v), val = p.acc_s(0, v);
          ASSERT_EQ(p_at + (p.p.layout()(val.row, tok0 + val.col) ^ term), p.p(x.row, tok0 + x.col)) << t << "," << v;
        }
      }
    }
  }
}

// The V tail is cleared through the unswizzled layout: the same chunks as the swizzled one, row by row.
TEST(MlaDecodePlan, UnswizzledRowsHoldTheSameChunks) {
  const MlaDecodePlan p = make_plan({});
  for (int c = 0; c < 2; ++c)
    for (int r = 0; r < p.rows; ++r) {
      std::set<int> plain, swizzled;
      for (int k = 0; k < 32; ++k) {
        plain.insert(p.tile.layout()(r, 256 * c + 8 * k));
        swizzled.insert(p.tile(r, 256 * c + 8 * k));
      }
      EXPECT_EQ(plain, swizzled);
    }
}

TEST(MlaDecodePlan, ConfigNamesEveryFieldAndEachChangesTheCacheKey) {
  EXPECT_EQ(name_expression(MlaDecodeConfig{.causal = true, .bf16 = false, .qk_warpgroups = 2, .vec_store = false,
                                            .evict_first = true, .uniform_desc = true}),
            "tl::mla_decode<tl::MlaDecodeConfig{.causal = true, .bf16 = false, .qk_warpgroups = 2, .vec_store = false, "
            ".evict_first = true, .uniform_desc = true}>");
  EXPECT_EQ(name_expression(MlaDecodeConfig{.uniform_desc = true, .chain = true, .rope_regs = true}),
            "tl::mla_decode<tl::MlaDecodeConfig{.causal = false, .bf16 = true, .qk_warpgroups = 1, .vec_store = true, "
            ".evict_first = false, .uniform_desc = true, .chain = true, .rope_regs = true}>");
  auto key = [](const std::map<std::string, std::string>& problem, const std::map<std::string, std::string>& config) {
    auto inst = instantiate(mla(), problem, config, limits_for_arch("sm_90a"));
    EXPECT_TRUE(inst.ok()) << inst.status().message();
    JitOptions opt;
    opt.arch = "sm_90a";
    return test::scratch_jit().cache_key(compile_request(*inst, opt)).value();
  };
  const std::string base = key({}, {});
  std::set<std::string> keys = {base};
  keys.insert(key({{"causal", "true"}}, {}));
  keys.insert(key({{"dtype", "f16"}}, {}));
  keys.insert(key({}, {{"qk_warpgroups", "2"}}));
  keys.insert(key({}, {{"vec_store", "false"}}));
  keys.insert(key({}, {{"evict_first", "off"}}));  // auto is on at the default problem (one row tile)
  keys.insert(key({}, {{"uniform_desc", "true"}}));  // auto is off at the default problem (one row tile)
  keys.insert(key({}, {{"rope_regs", "true"}, {"uniform_desc", "true"}}));  // auto is off there too
  keys.insert(key({}, {{"chain", "true"}}));
  EXPECT_EQ(keys.size(), 9u);
  EXPECT_EQ(key({{"batch", "7"}}, {{"sms", "9"}}), base);  // the run-time arguments and the schedule are not the code
}

TEST(MlaDecodePlan, SpecReadsThePlan) {
  const std::vector<std::string> probes = mla_decode_probe_names();
  EXPECT_EQ(mla().probes, probes);
  ASSERT_EQ(probes.size(), 7u);
  EXPECT_EQ(probes[mla_probe::load_wait], "load_wait");
  EXPECT_EQ(probes[mla_probe::qk], "qk");
  EXPECT_EQ(probes[mla_probe::combine], "combine");
  auto inst = instantiate(mla(), {}, {{"qk_warpgroups", "2"}}, limits_for_arch("sm_90a"));
  ASSERT_TRUE(inst.ok()) << inst.status().message();
  const MlaDecodePlan p = make_plan({.qk_warpgroups = 2});
  EXPECT_EQ(inst->launch.dynamic_smem, p.smem_bytes);
  EXPECT_EQ(inst->launch.block.x, static_cast<unsigned>(p.threads));
  for (const ArgSpec& a : inst->args)
    if (a.kind == ArgSpec::Kind::tensor_map) {
      EXPECT_EQ(a.box, (std::vector<std::int64_t>{p.panel_cols, p.rows}));
      EXPECT_EQ(a.swizzle_bytes, 128);
    }
  // Every SPEC of `layouts` parses back to the plan's object.
  std::map<std::string, std::string> specs;
  for (const LayoutInfo& l : mla().layouts(inst->problem, inst->config)) specs[l.name] = l.spec;
  ASSERT_EQ(specs.count("smem_Q"), 1u);
  for (const auto& [name, l] : {std::pair{"smem_Q", p.tile}, std::pair{"smem_KV", p.tile}, std::pair{"smem_P", p.p}}) {
    const LayoutSpec s = parse_spec(specs[name]);
    EXPECT_TRUE(s.memory.layout() == l.layout() && s.memory.swizzle() == l.swizzle()) << name << ": " << specs[name];
  }
  EXPECT_EQ(parse_spec(specs["acc_S"]).fragment.tv(), p.acc_s.tv());
  EXPECT_EQ(parse_spec(specs["acc_O"]).fragment.tv(), p.acc_o.tv());
}

}  // namespace
}  // namespace tl
