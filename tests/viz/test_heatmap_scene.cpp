// The sweep heat map scene: one cell per (x, y) pair, colour ordered by the metric, best marked, gaps explained.
#include <gtest/gtest.h>

#include "viz/heatmap_scene.hpp"

namespace tl::viz {
namespace {

nlohmann::json row(int bm, int bn, double tflops, const std::string& status = "passed", int stages = 3) {
  return {{"kernel", "gemm.wgmma"},
          {"config", {{"block_M", std::to_string(bm)}, {"block_N", std::to_string(bn)}, {"num_stages", std::to_string(stages)}}},
          {"tflops", tflops},
          {"median_ms", 1000.0 / tflops},
          {"status", status}};
}

HeatmapOptions opts(const std::string& x, const std::string& y, const std::string& metric) {
  HeatmapOptions o;
  o.x = x;
  o.y = y;
  o.metric = metric;
  return o;
}

// The cell rects are the ones with an id (the colour bar and the best marker have none).
std::vector<const Rect*> cell_rects(const Scene& s) {
  std::vector<const Rect*> out;
  for (const auto& r : s.rects)
    if (r.id >= 0) out.push_back(&r);
  return out;
}

TEST(HeatmapScene, OneCellPerPairWithNumericAxesAndTheBestMarked) {
  std::vector<nlohmann::json> rows = {row(128, 256, 700), row(64, 128, 300), row(128, 128, 600), row(64, 256, 450),
                                      row(256, 128, 0, "skipped")};
  auto h = build_heatmap_scene(rows, opts("block_N", "block_M", "tflops"));
  ASSERT_TRUE(h) << h.status().message();
  EXPECT_EQ(h->x_values, (std::vector<std::string>{"128", "256"}));
  EXPECT_EQ(h->y_values, (std::vector<std::string>{"64", "128", "256"}));  // numeric order, not first-seen
  ASSERT_EQ(h->cells.size(), 6u);
  ASSERT_EQ(cell_rects(h->scene).size(), 6u);
  ASSERT_TRUE(h->best);
  EXPECT_EQ(h->cells[*h->best].x, "256");
  EXPECT_EQ(h->cells[*h->best].y, "128");
  EXPECT_DOUBLE_EQ(*h->cells[*h->best].value, 700);
  EXPECT_DOUBLE_EQ(h->min, 300);
  EXPECT_DOUBLE_EQ(h->max, 700);
  // Skipped and never-run cells have no value and say why.
  const HeatmapCell& skipped = h->cells[2 * 2 + 0];  // y=256, x=128
  EXPECT_FALSE(skipped.value);
  EXPECT_EQ(skipped.status, "skipped");
  EXPECT_EQ(h->cells[2 * 2 + 1].status, "no run");
  // Brighter is better: the best cell is lighter than the worst.
  auto rects = cell_rects(h->scene);
  const Rect* best = rects[*h->best];
  const Rect* worst = rects[0];  // y=64, x=128: 300
  EXPECT_GT(best->fill.luma(), worst->fill.luma());
  // A best marker outlines the best cell; every cell's value is written on it.
  bool marker = false;
  for (const auto& r : h->scene.rects)
    if (r.id < 0 && r.stroke.a > 0 && std::abs(r.x - best->x) < 3 && std::abs(r.y - best->y) < 3) marker = true;
  EXPECT_TRUE(marker);
  bool label = false;
  for (const auto& t : h->scene.texts) label = label || (t.text == "700" && t.bold);
  EXPECT_TRUE(label);
  // Rows go up with y: the smallest block_M is drawn lowest.
  EXPECT_GT(rects[0]->y, rects[2]->y);
}

TEST(HeatmapScene, LowerIsBetterForTimesAndCellsKeepTheBestOfSeveralRecords) {
  std::vector<nlohmann::json> rows = {row(64, 128, 300, "passed", 3), row(64, 128, 500, "passed", 4), row(128, 128, 400),
                                      row(128, 128, 100, "fault", 4)};
  auto h = build_heatmap_scene(rows, opts("block_N", "block_M", "median_ms"));
  ASSERT_TRUE(h) << h.status().message();
  EXPECT_FALSE(h->higher_is_better);
  ASSERT_EQ(h->cells.size(), 2u);
  EXPECT_EQ(h->cells[0].records, 2u);
  EXPECT_DOUBLE_EQ(*h->cells[0].value, 2.0);   // 1000/500: the faster of the two stage counts
  EXPECT_DOUBLE_EQ(*h->cells[1].value, 2.5);   // the faulting run does not count
  ASSERT_TRUE(h->best);
  EXPECT_EQ(*h->best, 0u);
}

TEST(HeatmapScene, RecordsOfTwoGpusAreNotMixedInOneCell) {
  nlohmann::json a = row(128, 256, 700), b = row(128, 256, 900);
  a["device"] = "GPU A";
  b["device"] = "GPU B";
  auto mixed = build_heatmap_scene({a, b}, opts("block_N", "block_M", "tflops"));
  ASSERT_FALSE(mixed);
  EXPECT_NE(mixed.status().message().find("2 devices (GPU A; GPU B): pick one with device="), std::string::npos)
      << mixed.status().message();
  HeatmapOptions o = opts("block_N", "block_M", "tflops");
  o.device = "GPU A";
  auto one = build_heatmap_scene({a, b, row(64, 256, 300)}, o);  // a record without a device (compile-only) counts
  ASSERT_TRUE(one) << one.status().message();
  ASSERT_TRUE(one->best);
  EXPECT_DOUBLE_EQ(*one->cells[*one->best].value, 700);
}

TEST(HeatmapScene, ReadsRunRecordsToo) {
  nlohmann::json rec = {{"kernel", "copy"},
                        {"config", {{"vec", "4"}, {"threads", "256"}}},
                        {"time_ms", {{"median", 0.25}}},
                        {"efficiency", {{"value", 0.8}}},
                        {"passed", true}};
  auto h = build_heatmap_scene({rec}, opts("vec", "threads", "efficiency"));
  ASSERT_TRUE(h) << h.status().message();
  EXPECT_DOUBLE_EQ(*h->cells[0].value, 0.8);
  auto t = build_heatmap_scene({rec}, opts("vec", "threads", "median_ms"));
  ASSERT_TRUE(t);
  EXPECT_DOUBLE_EQ(*t->cells[0].value, 0.25);
}

TEST(HeatmapScene, ErrorsNameWhatIsMissing) {
  std::vector<nlohmann::json> rows = {row(64, 128, 300)};
  auto a = build_heatmap_scene(rows, opts("block_K", "block_M", "tflops"));
  ASSERT_FALSE(a);
  EXPECT_NE(a.status().message().find("'block_K'"), std::string::npos) << a.status().message();
  EXPECT_NE(a.status().message().find("block_N"), std::string::npos) << a.status().message();
  auto m = build_heatmap_scene(rows, opts("block_N", "block_M", "watts"));
  ASSERT_FALSE(m);
  EXPECT_NE(m.status().message().find("'watts'"), std::string::npos) << m.status().message();
}

}  // namespace
}  // namespace tl::viz
