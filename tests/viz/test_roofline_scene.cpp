// Tests of the roofline scene: log-scale mapping, ceiling and ridge geometry, point placement, colouring, export.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "viz/cairo_painter.hpp"
#include "viz/roofline_scene.hpp"
#include "viz/text_check.hpp"

namespace tl::viz {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

Ceilings synthetic() {
  Ceilings c;
  c.device_name = "Synthetic GPU";
  c.hbm_bytes_per_s = 2e12;
  c.l2_bytes_per_s = 8e12;
  c.smem_bytes_per_s = 20e12;
  c.fp32_flops = 50e12;
  c.bf16_tc_flops = 500e12;
  c.fp16_tc_flops = 400e12;
  return c;
}

// A bf16 GEMM run with the given flops, minimum bytes and median time.
json run(double flops, double bytes, double ms, int block_m = 128, const std::string& kernel = "gemm.wgmma") {
  return {{"kernel", kernel}, {"family", "gemm"}, {"tensor_cores", true}, {"input_dtype", "bf16"},
          {"config", {{"block_M", std::to_string(block_m)}, {"block_N", "256"}}},
          {"problem", {{"M", "4096"}, {"dtype", "bf16"}}},
          {"flops", flops}, {"min_bytes", bytes}, {"time_ms", {{"median", ms}}}};
}

double log_map(double v, double lo, double hi, double start, double extent) {
  return start + (std::log10(v) - std::log10(lo)) / (std::log10(hi) - std::log10(lo)) * extent;
}

bool has_text(const Scene& s, const std::string& needle) {
  for (const auto& t : s.texts)
    if (t.text.find(needle) != std::string::npos) return true;
  return false;
}

const Rect* rect_with_id(const Scene& s, std::int64_t id, bool filled = true) {
  for (const auto& r : s.rects)
    if (r.id == id && (r.fill.a > 0) == filled) return &r;
  return nullptr;
}

TEST(RooflineScene, LogAxesMapDecadesToEqualSteps) {
  LogAxes a;
  a.x_min = 0.1;
  a.x_max = 1000;
  a.y_min = 1e9;
  a.y_max = 1e15;
  a.left = 100;
  a.top = 50;
  a.width = 400;
  a.height = 600;
  EXPECT_DOUBLE_EQ(a.x_of(0.1), 100);
  EXPECT_DOUBLE_EQ(a.x_of(1), 200);
  EXPECT_DOUBLE_EQ(a.x_of(1000), 500);
  EXPECT_DOUBLE_EQ(a.y_of(1e15), 50);   // up is larger
  EXPECT_DOUBLE_EQ(a.y_of(1e9), 650);
  EXPECT_DOUBLE_EQ(a.y_of(1e12), 350);
  EXPECT_NEAR(a.x_of(std::sqrt(10.0)), 250, 1e-9);  // half a decade is half the step
  EXPECT_NEAR(a.intensity_at(a.x_of(37.5)), 37.5, 1e-9);
  EXPECT_NEAR(a.flops_at(a.y_of(3.3e13)), 3.3e13, 1e3);
}

TEST(RooflineScene, CeilingsLieOnTheirLinesAndMeetAtTheRidges) {
  Roofline m = *Roofline::from_ceilings(synthetic());
  auto r = build_roofline_scene(m, {});
  ASSERT_TRUE(r.ok()) << r.status().message();
  const LogAxes& a = r->axes;
  ASSERT_EQ(r->ceilings.size(), 6u);
  for (const auto& d : r->ceilings) {
    const RooflineCeiling* c = m.find(d.name);
    ASSERT_NE(c, nullptr) << d.name;
    // The segment is a line of the scene, and its label is written.
    bool drawn = false;
    for (const auto& l : r->scene.lines) drawn |= l.x0 == d.x0 && l.y0 == d.y0 && l.x1 == d.x1 && l.y1 == d.y1;
    EXPECT_TRUE(drawn) << d.name;
    EXPECT_TRUE(has_text(r->scene, d.label)) << d.label;
    if (c->kind == CeilingKind::memory) {
      // Both ends on flops = bandwidth * intensity; the roof rises until the top compute roof (bf16, 500 T).
      for (auto [x, y] : {std::pair{d.x0, d.y0}, {d.x1, d.y1}})
        EXPECT_NEAR(a.flops_at(y) / (c->value * a.intensity_at(x)), 1.0, 1e-9) << d.name;
      EXPECT_NEAR(a.flops_at(d.y1), 500e12, 500e12 * 1e-9) << d.name;
      // Slope one decade per decade: in scene units, rise/run = (height per decade) / (width per decade).
      double per_x = a.width / std::log10(a.x_max / a.x_min), per_y = a.height / std::log10(a.y_max / a.y_min);
      EXPECT_NEAR((d.y0 - d.y1) / (d.x1 - d.x0), per_y / per_x, 1e-9);
    } else {
      EXPECT_DOUBLE_EQ(d.y0, d.y1);
      EXPECT_NEAR(a.flops_at(d.y0), c->value, c->value * 1e-9);
      EXPECT_NEAR(a.intensity_at(d.x0), c->value / 20e12, 1e-9);  // from the shared-memory roof
      EXPECT_DOUBLE_EQ(d.x1, a.left + a.width);
    }
  }
  EXPECT_TRUE(has_text(r->scene, "HBM 2 TB/s"));
  EXPECT_TRUE(has_text(r->scene, "bf16 tensor 500 TFLOP/s"));
  // Ridge x = compute / bandwidth: the HBM x bf16 ridge at 250 FLOP/byte.
  bool ridge = false;
  for (std::size_t id = 0; id < r->hover.size(); ++id) {
    if (r->hover[id].rfind("ridge HBM x bf16 tensor: 250 FLOP/byte", 0) != 0) continue;
    const Rect* rect = rect_with_id(r->scene, static_cast<std::int64_t>(id));
    ASSERT_NE(rect, nullptr);
    EXPECT_NEAR(rect->x + rect->w / 2, log_map(250, a.x_min, a.x_max, a.left, a.width), 1e-9);
    EXPECT_NEAR(rect->y + rect->h / 2, a.top + a.height - log_map(500e12, a.y_min, a.y_max, 0, a.height), 1e-9);
    EXPECT_EQ(r->scene.hit_test(rect->x + rect->w / 2, rect->y + rect->h / 2), static_cast<std::int64_t>(id));
    ridge = true;
  }
  EXPECT_TRUE(ridge);
  // 3 memory x 3 compute ridges, all inside the axes.
  EXPECT_EQ(std::count_if(r->hover.begin(), r->hover.end(), [](const auto& h) { return h.rfind("ridge", 0) == 0; }), 9);
}

TEST(RooflineScene, DecadeTicksAreLabelled) {
  auto r = build_roofline_scene(synthetic(), {});
  ASSERT_TRUE(r.ok());
  const LogAxes& a = r->axes;
  // Every decade inside the axes carries its label: intensities as plain numbers, rates with an SI prefix.
  const std::map<int, std::string> x_labels = {{-1, "0.1"}, {0, "1"}, {1, "10"}, {2, "100"}, {3, "1000"}};
  const std::map<int, std::string> y_labels = {{10, "10 G"}, {11, "100 G"}, {12, "1 T"},
                                               {13, "10 T"},  {14, "100 T"}, {15, "1 P"}};
  int x_decades = 0, y_decades = 0;
  for (int k = -3; k <= 18; ++k) {
    const double v = std::pow(10.0, k);
    auto labelled = [&](const std::string& text) {
      for (const auto& t : r->scene.texts)
        if (t.text == text) return true;
      return false;
    };
    if (v >= a.x_min && v <= a.x_max) {
      ++x_decades;
      ASSERT_TRUE(x_labels.count(k)) << k;
      EXPECT_TRUE(labelled(x_labels.at(k))) << x_labels.at(k);
    }
    if (v >= a.y_min && v <= a.y_max) {
      ++y_decades;
      ASSERT_TRUE(y_labels.count(k)) << k;
      EXPECT_TRUE(labelled(y_labels.at(k))) << y_labels.at(k);
    }
  }
  EXPECT_GE(x_decades, 2);
  EXPECT_GE(y_decades, 2);
  // The "10" tick label sits under x = 10.
  for (const auto& t : r->scene.texts)
    if (t.text == "10" && t.align == Align::center) {
      EXPECT_NEAR(t.x, a.x_of(10), 1e-9);
    }
  EXPECT_LT(a.x_min, 2.5);    // the lowest ridge (FP32 over shared memory) is inside
  EXPECT_GT(a.x_max, 250);    // and the highest (bf16 over HBM)
  EXPECT_GT(a.y_max, 500e12);
}

TEST(RooflineScene, PointsSitAtIntensityAndAchievedRate) {
  // 2 TFLOP over 10 GB in 10 ms: intensity 200 (below the bf16 ridge at 250), 200 TFLOP/s achieved; the roof
  // there is HBM x 200 = 400 TFLOP/s, the bound 5 ms: 50%.
  auto r = build_roofline_scene(synthetic(), {run(2e12, 1e10, 10), run(1e12, 1e9, 4, 64)});
  ASSERT_TRUE(r.ok()) << r.status().message();
  const LogAxes& a = r->axes;
  ASSERT_EQ(r->points.size(), 2u);
  const DrawnPoint& p = r->points[0];
  EXPECT_NEAR(p.x, log_map(200, a.x_min, a.x_max, a.left, a.width), 1e-9);
  EXPECT_NEAR(p.y, a.top + a.height - log_map(2e14, a.y_min, a.y_max, 0, a.height), 1e-9);
  EXPECT_NEAR(p.roof_y, a.y_of(4e14), 1e-9);
  std::int64_t id = r->scene.hit_test(p.x, p.y);
  ASSERT_GE(id, 0);
  EXPECT_NE(r->hover[static_cast<std::size_t>(id)].find("gemm.wgmma block_M=128,block_N=256"), std::string::npos);
  EXPECT_NE(r->hover[static_cast<std::size_t>(id)].find("50% of hbm_copy (memory-bound)"), std::string::npos);
  EXPECT_TRUE(has_text(r->scene, "50% (5 ms / 10 ms)"));
  // The predicted-bound stem runs from the point up to the roof.
  bool stem = false;
  for (const auto& l : r->scene.lines) stem |= l.x0 == p.x && l.x1 == p.x && l.y1 == p.roof_y && l.y0 > l.y1;
  EXPECT_TRUE(stem);
  // Second: 1 TFLOP over 1 GB in 4 ms, intensity 1000 (compute-bound, bf16 500 T): 250 T achieved, 50%.
  EXPECT_NEAR(r->points[1].y, a.y_of(2.5e14), 1e-9);
  EXPECT_NEAR(r->points[1].roof_y, a.y_of(500e12), 1e-9);
}

TEST(RooflineScene, SweepsAreColouredByAParameter) {
  std::vector<json> records;
  for (int i = 0; i < 6; ++i) records.push_back(run(2e12, 1e10, 10 + i, i % 2 ? 64 : 128));
  RooflineOptions o;
  o.color_by = "block_M";
  auto r = build_roofline_scene(synthetic(), records, o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->points.size(), 6u);
  for (std::size_t i = 2; i < 6; ++i) EXPECT_EQ(r->points[i].color, r->points[i - 2].color);
  EXPECT_NE(r->points[0].color, r->points[1].color);
  // Legend in numeric order: 64 before 128.
  double y64 = -1, y128 = -1;
  for (const auto& t : r->scene.texts) {
    if (t.text == "block_M=64") y64 = t.y;
    if (t.text == "block_M=128") y128 = t.y;
  }
  ASSERT_GT(y64, 0);
  EXPECT_LT(y64, y128);
  o.color_by = "blockM";
  auto bad = build_roofline_scene(synthetic(), records, o);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("no run has a parameter 'blockM'; they have: M, block_M, block_N, dtype"),
            std::string::npos) << bad.status().message();
}

TEST(RooflineScene, LargeCloudsAnnotateTheBestOfEachKernel) {
  std::vector<json> records;
  for (int i = 0; i < 20; ++i) records.push_back(run(2e12, 1e10, 10 + i, 128, i < 10 ? "gemm.wgmma" : "gemm.mma"));
  auto r = build_roofline_scene(synthetic(), records);
  ASSERT_TRUE(r.ok());
  int annotated = 0;
  for (const auto& p : r->points) annotated += p.annotated;
  EXPECT_EQ(annotated, 2);
  EXPECT_TRUE(r->points[0].annotated);   // 10 ms: the fastest of gemm.wgmma
  EXPECT_TRUE(r->points[10].annotated);  // 20 ms: the fastest of gemm.mma
}

TEST(RooflineScene, MeasuredBytesAddAHollowActualPoint) {
  json rec = run(2e12, 1e10, 10);
  rec["dram"] = {{"measured", true}, {"read_bytes", 3e10}, {"write_bytes", 1e10}};  // 4x the minimum: intensity 50
  auto r = build_roofline_scene(synthetic(), {rec});
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->points.size(), 1u);
  EXPECT_NEAR(r->points[0].actual_x, r->axes.x_of(50), 1e-9);
  std::int64_t id = r->scene.hit_test(r->points[0].x, r->points[0].y);
  const Rect* hollow = rect_with_id(r->scene, id, false);
  ASSERT_NE(hollow, nullptr);
  EXPECT_NEAR(hollow->x + hollow->w / 2, r->axes.x_of(50), 1e-9);
  EXPECT_NE(r->hover[static_cast<std::size_t>(id)].find("4x the minimum"), std::string::npos);
  // Without a measurement only the ideal point is drawn.
  auto ideal = build_roofline_scene(synthetic(), {run(2e12, 1e10, 10)});
  EXPECT_EQ(ideal->points[0].actual_x, -1);
  EXPECT_TRUE(has_text(ideal->scene, "ideal intensity only"));
}

TEST(RooflineScene, RunsThatCannotBeDrawnBecomeNotes) {
  json copy = {{"kernel", "copy"}, {"family", "memory"}, {"flops", 0}, {"min_bytes", 1e9}, {"time_ms", {{"median", 1}}}};
  json failed = {{"kernel", "gemm.simt"}, {"failure", {{"code", "fault"}, {"message", "illegal address"}}}};
  auto r = build_roofline_scene(synthetic(), {run(2e12, 1e10, 10), copy, failed});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->points.size(), 1u);
  ASSERT_EQ(r->notes.size(), 2u);
  EXPECT_NE(r->notes[0].find("gemm.simt: failed: fault: illegal address"), std::string::npos);
  EXPECT_NE(r->notes[1].find("copy"), std::string::npos);
  EXPECT_FALSE(build_roofline_scene(Ceilings{}, {}).ok());
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(RooflineScene, ExportsToPngSvgAndPdf) {
  fs::path dir = fs::temp_directory_path() / ("tl_roofline_scene_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::vector<json> records;
  for (int i = 0; i < 8; ++i) records.push_back(run(2e12 * (i + 1), 1e10, 10 + i, 64 << (i % 3)));
  RooflineOptions o;
  o.color_by = "block_M";
  auto r = build_roofline_scene(synthetic(), records, o);
  ASSERT_TRUE(r.ok());
  for (const char* ext : {"png", "svg", "pdf"}) {
    std::string path = (dir / (std::string("roof.") + ext)).string();
    ASSERT_TRUE(write_scene(r->scene, path).ok()) << ext;
    std::string bytes = slurp(path);
    ASSERT_GT(bytes.size(), 100u) << ext;
    if (std::string(ext) == "png") {
      EXPECT_EQ(bytes.substr(1, 3), "PNG");
    }
    if (std::string(ext) == "pdf") {
      EXPECT_EQ(bytes.substr(0, 5), "%PDF-");
    }
    if (std::string(ext) == "svg") {
      EXPECT_NE(bytes.find("<svg"), std::string::npos);
      // Every point and every ceiling is a path of its own (cairo does not merge fills of different colours).
      std::size_t paths = 0;
      for (auto at = bytes.find("<path"); at != std::string::npos; at = bytes.find("<path", at + 1)) ++paths;
      EXPECT_GE(paths, r->points.size() + r->ceilings.size());
    }
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tl::viz

namespace tl::viz {
namespace {

// Four runs of one problem at one intensity (a sweep's configs: issue 25's "four points carry three labels", the
// best one struck through by the fp16 roof), one far below them, at the sizes the app and the CLI draw, in both
// themes: every label lies inside the scene, apart from the others and clear of every roof, and every annotated
// point and every roof says its number on the plot or in the legend.
TEST(RooflineScene, EveryLabelHasRoomOrALegendLine) {
  std::vector<json> records;
  for (double ms : {0.3298534883328, 0.38482906972159997, 0.4398046511104, 0.4947802324992})
    records.push_back(run(137438953472.0, 100663296.0, ms));
  records.push_back(run(2.7e9, 4.5e9, 0.0033, 128, "softmax_like"));
  for (auto [w, h] : {std::pair{960.0, 620.0}, {700.0, 430.0}, {1300.0, 820.0}, {1010.0, 700.0}}) {
    for (const Theme* theme : {&light_theme(), &dark_theme()}) {
      RooflineOptions o;
      o.width = w;
      o.height = h;
      o.theme = *theme;
      auto r = build_roofline_scene(synthetic(), records, o);
      ASSERT_TRUE(r.ok()) << r.status().message();
      const std::string where = std::to_string(int(w)) + "x" + std::to_string(int(h)) + (theme->dark ? " dark" : " light");
      EXPECT_EQ(r->scene.background, theme->background) << where;
      EXPECT_EQ(check_text_layout(r->scene, estimated_text_measure()), std::vector<std::string>{}) << where;
      for (const auto& d : r->ceilings) EXPECT_TRUE(has_text(r->scene, d.label)) << where << ": " << d.label;
      int annotated = 0;
      for (const auto& p : r->points) {
        if (!p.annotated) continue;
        ++annotated;
        const RooflinePoint point = *roofline_point(*Roofline::from_ceilings(synthetic()), records[p.point]);
        char pct[16];
        std::snprintf(pct, sizeof pct, "%.3g%% (", point.efficiency * 100);
        EXPECT_TRUE(has_text(r->scene, pct)) << where << ": no label " << pct;
      }
      EXPECT_EQ(annotated, 5) << where;
    }
  }
}

}  // namespace
}  // namespace tl::viz
