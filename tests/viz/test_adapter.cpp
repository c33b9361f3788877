// Tests of the adapters from kernels/tile to viz: SPECs to grids, and bank analyses to bank maps.
#include <gtest/gtest.h>

#include <set>

#include "viz/layout_adapter.hpp"
#include "viz/layout_scene.hpp"

namespace tl::viz {
namespace {

TEST(Adapter, MmaAccumulatorGridFollowsThePtxTable) {
  auto g = grid_from_spec("mma.m16n8k16.f32.C");
  ASSERT_TRUE(g.ok()) << g.status().message();
  ASSERT_EQ(g->rows, 16);
  ASSERT_EQ(g->cols, 8);
  EXPECT_EQ(g->elem_bytes, 4);
  // PTX ISA: c_i of lane l sits at row groupID (+8 for i >= 2), col 2 * threadID_in_group + (i & 1).
  for (int lane = 0; lane < 32; ++lane) {
    for (int i = 0; i < 4; ++i) {
      const Cell& c = g->at(lane / 4 + (i >= 2 ? 8 : 0), (lane % 4) * 2 + (i & 1));
      EXPECT_EQ(c.thread, lane);
      EXPECT_EQ(c.value, i);
    }
  }
}

// A replicated fragment lists every holder of each element, as TileLang's plots do ("T5/69"), in the grid, its
// JSON (which reads back), its text table, the hover text and the inverse view (all 128 threads).
TEST(Adapter, ReplicatedFragmentListsEveryHolder) {
  auto g = grid_from_spec("mma.m16n8k16.f16.A.repeat(2,1,thread).replicate(2)");
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(g->replication, 2);
  EXPECT_EQ(g->num_threads(), 128);
  ASSERT_TRUE(g->validate().ok());
  for (std::int64_t i = 0; i < static_cast<std::int64_t>(g->cells.size()); ++i) {
    const Cell& c = g->cells[static_cast<std::size_t>(i)];
    EXPECT_EQ(g->threads_of(i), (std::vector<int>{c.thread, c.thread + 64}));
  }
  EXPECT_EQ(thread_label(*g, 0), "T0/64");
  EXPECT_NE(describe_cell(*g, 0).find("held by threads 0/64"), std::string::npos) << describe_cell(*g, 0);
  EXPECT_NE(to_text(*g).find("T0/64V0"), std::string::npos);
  const nlohmann::json j = to_json(*g);
  EXPECT_EQ(j.at("replication"), 2);
  EXPECT_EQ(j.at("cells").at(0).at("threads"), nlohmann::json::array({0, 64}));
  auto back = layout_grid_from_json(j);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->holders, g->holders);
  nlohmann::json broken = j;
  broken["cells"][0]["threads"] = nlohmann::json::array({0});
  EXPECT_FALSE(layout_grid_from_json(broken).ok());
  auto inverse = build_inverse_scene(*g);
  ASSERT_TRUE(inverse.ok()) << inverse.status().message();
  std::size_t slots = 0;
  for (const auto& r : inverse->rects) slots += r.id >= 0;
  EXPECT_EQ(slots, 128u * 8u);  // every (thread, value), replicas too
  auto scene = build_layout_scene(*g);
  ASSERT_TRUE(scene.ok()) << scene.status().message();
  std::size_t labelled = 0;
  for (const auto& t : scene->texts) labelled += t.text == "T0/64";
  EXPECT_EQ(labelled, 8u);  // the 8 values thread 0 (and 64) holds
}

TEST(Adapter, SwizzledTileIsAPermutationWithBanks) {
  auto g = grid_from_spec("swizzle<3,3,3> o (8,64):(64,1)", "f16");
  ASSERT_TRUE(g.ok()) << g.status().message();
  ASSERT_EQ(g->rows, 8);
  ASSERT_EQ(g->cols, 64);
  std::set<std::int64_t> offsets;
  for (const Cell& c : g->cells) {
    offsets.insert(c.offset);
    EXPECT_EQ(c.bank, (c.offset * 2 / 4) % 32);
    // Swizzle<3,3,3>: bits [3,6) of the offset flip with bits [6,9) (the row here); row 0 is untouched.
    std::int64_t plain = c.row * 64 + c.col;
    EXPECT_EQ(c.offset, plain ^ (((plain >> 6) & 7) << 3));
  }
  EXPECT_EQ(offsets.size(), 8u * 64u);
  EXPECT_EQ(*offsets.rbegin(), 8 * 64 - 1);
}

TEST(Adapter, SpecErrorsNameTheColumnWithACaret) {
  auto g = grid_from_spec("(8,(4,2):(4,(1,32))");
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), ErrorCode::parse);
  const std::string& m = g.status().message();
  EXPECT_NE(m.find("column 9"), std::string::npos) << m;
  EXPECT_NE(m.find("\n          ^"), std::string::npos) << m;  // two spaces of indent + 8 columns
  EXPECT_FALSE(grid_from_spec("(8,8)", "f13").ok());
  EXPECT_FALSE(smem_from_spec("mma.m16n8k16.f16.A").ok());  // a fragment is not shared memory
}

TEST(Adapter, BankMapKeepsTheAnalysisTotals) {
  auto smem = smem_from_spec("(32,32):(32,1)", 4);
  ASSERT_TRUE(smem.ok());
  auto pattern = access_from_spec("col.scalar", *smem);
  ASSERT_TRUE(pattern.ok()) << pattern.status().message();
  BankReport report = analyze_banks(smem->layout, smem->elem_bytes, *pattern);
  ASSERT_TRUE(report.ok) << report.message;
  BankMap map = bank_map_from_report(report, "column");
  EXPECT_EQ(map.total_wavefronts(), report.wavefronts);
  EXPECT_EQ(map.total_ideal_wavefronts(), report.ideal_wavefronts);
  EXPECT_EQ(map.total_wavefronts(), 32);
  ASSERT_EQ(map.requests.size(), 1u);
  // Each thread hit bank 0 in its own wavefront.
  std::set<int> wavefronts;
  for (const auto& a : map.requests[0].accesses) {
    EXPECT_EQ(a.bank, 0);
    wavefronts.insert(a.wavefront);
  }
  EXPECT_EQ(wavefronts.size(), 32u);
  EXPECT_FALSE(access_from_spec("diagonal", *smem).ok());
  EXPECT_FALSE(access_from_spec("v16:(0,0),(99,0)", *smem).ok());  // outside the tile
}

TEST(Adapter, EveryAtomPlots) {
  auto atoms = list_layout_atoms();
  ASSERT_GT(atoms.size(), 20u);
  for (const auto& a : atoms) {
    auto g = grid_from_spec(a.name);
    ASSERT_TRUE(g.ok()) << a.name << ": " << g.status().message();
    ASSERT_TRUE(build_layout_scene(*g).ok()) << a.name;
  }
}

}  // namespace
}  // namespace tl::viz
