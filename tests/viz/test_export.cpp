// Tests of the exported files: PNG/SVG/PDF from the cairo painter (structure and magic bytes, not pixels),
// the JSON contract of a LayoutGrid and its ASCII table.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tests/viz/viz_fixtures.hpp"
#include "viz/cairo_painter.hpp"
#include "viz/layout_scene.hpp"

namespace tl::viz {
namespace {

namespace fs = std::filesystem;
using testing::four_warp_fragment;
using testing::mma_c_16x8;
using testing::row_major_smem;

class Export : public ::testing::Test {
 protected:
  void SetUp() override {
    m_dir = fs::temp_directory_path() / ("tl_viz_" + std::to_string(::getpid()) + "_" +
                                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(m_dir);
  }
  void TearDown() override { fs::remove_all(m_dir); }
  std::string path(const std::string& name) const { return (m_dir / name).string(); }
  fs::path m_dir;
};

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Filled axis-aligned squares of side `side` in cairo's SVG ("M x0 y0 L x1 y0 L x1 y1 L x0 y1 Z"), with
// their fill colours.
struct SvgSquares {
  size_t count = 0;
  std::set<std::string> fills;
};

SvgSquares svg_squares(const std::string& svg, double side) {
  static const std::regex path(R"(<path style="[^"]*fill:(rgb\([^)]*\))[^"]*" d="M ([-0-9.]+) ([-0-9.]+) L ([-0-9.]+) ([-0-9.]+) L ([-0-9.]+) ([-0-9.]+) L ([-0-9.]+) ([-0-9.]+) Z)");
  SvgSquares out;
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), path); it != std::sregex_iterator(); ++it) {
    const auto& m = *it;
    double x0 = std::stod(m[2]), y0 = std::stod(m[3]), x1 = std::stod(m[4]), y2 = std::stod(m[7]);
    if (std::abs((x1 - x0) - side) < 1e-3 && std::abs((y2 - y0) - side) < 1e-3) {
      ++out.count;
      out.fills.insert(m[1]);
    }
  }
  return out;
}

size_t count_of(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t p = text.find(needle); p != std::string::npos; p = text.find(needle, p + 1)) ++n;
  return n;
}

TEST_F(Export, SvgHasOneSquarePerCellAndGlyphsForLabels) {
  GridStyle style;
  style.cell_size = 30;  // legend swatches are 12: only cells match
  auto scene = build_layout_scene(mma_c_16x8(), style);
  ASSERT_TRUE(scene.ok());
  ASSERT_TRUE(write_scene(*scene, path("mma.svg")).ok());
  std::string svg = slurp(path("mma.svg"));
  ASSERT_EQ(svg.rfind("<?xml", 0), 0u);
  ASSERT_NE(svg.find("<svg"), std::string::npos);
  SvgSquares squares = svg_squares(svg, 30);
  EXPECT_EQ(squares.count, 16u * 8u);
  EXPECT_EQ(squares.fills.size(), 32u);  // by thread: 32 lanes
  // Cairo writes text as glyph references; every cell label ("T12", "V3") is at least two of them.
  EXPECT_GE(count_of(svg, "<use xlink:href=\"#glyph"), 2u * 2u * 16u * 8u);

  style.color = ColorBy::value;
  ASSERT_TRUE(write_scene(*build_layout_scene(mma_c_16x8(), style), path("mma_value.svg")).ok());
  EXPECT_EQ(svg_squares(slurp(path("mma_value.svg")), 30).fills.size(), 4u);
}

TEST_F(Export, SvgOfTinyCellsHasNoCellLabels) {
  GridStyle style;
  style.cell_size = 3;
  auto scene = build_layout_scene(four_warp_fragment(128), style);
  ASSERT_TRUE(scene.ok());
  ASSERT_TRUE(write_scene(*scene, path("tiny.svg")).ok());
  std::string svg = slurp(path("tiny.svg"));
  EXPECT_EQ(svg_squares(svg, 3).count, 64u * 128u);
  // Only the title, axes and legend remain: far fewer glyphs than cells.
  EXPECT_LT(count_of(svg, "<use xlink:href=\"#glyph"), 64u * 128u / 10);
}

TEST_F(Export, PngAndPdfCarryTheirMagicBytes) {
  auto scene = build_layout_scene(mma_c_16x8());
  ASSERT_TRUE(scene.ok());
  ASSERT_TRUE(write_scene(*scene, path("a.png")).ok());
  ASSERT_TRUE(write_scene(*scene, path("a.PDF")).ok());  // extension case does not matter
  ASSERT_TRUE(write_scene(*scene, path("no_extension"), ImageFormat::png).ok());
  std::string png = slurp(path("a.png")), pdf = slurp(path("a.PDF")), png2 = slurp(path("no_extension"));
  EXPECT_EQ(png.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  EXPECT_EQ(png2.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  EXPECT_EQ(pdf.substr(0, 5), "%PDF-");
  EXPECT_GT(png.size(), 1000u);
  EXPECT_GT(pdf.size(), 1000u);
  // The PNG's IHDR holds the scene size in pixels (big-endian width, height).
  auto be32 = [&](size_t at) {
    return (static_cast<unsigned char>(png[at]) << 24) | (static_cast<unsigned char>(png[at + 1]) << 16) |
           (static_cast<unsigned char>(png[at + 2]) << 8) | static_cast<unsigned char>(png[at + 3]);
  };
  EXPECT_EQ(be32(16), static_cast<unsigned>(std::ceil(scene->width)));
  EXPECT_EQ(be32(20), static_cast<unsigned>(std::ceil(scene->height)));
}

TEST_F(Export, ErrorsNameTheProblem) {
  auto scene = build_layout_scene(mma_c_16x8());
  Status st = write_scene(*scene, path("plot.bmp"));
  EXPECT_EQ(st.code(), ErrorCode::invalid_argument);
  EXPECT_NE(st.message().find(".bmp"), std::string::npos);
  EXPECT_NE(st.message().find(".png"), std::string::npos);
  st = write_scene(*scene, path("missing/dir/plot.png"));
  EXPECT_EQ(st.code(), ErrorCode::io);
  EXPECT_NE(st.message().find("does not exist"), std::string::npos);
  fs::create_directories(path("a_directory.svg"));
  st = write_scene(*scene, path("a_directory.svg"));
  EXPECT_FALSE(st.ok());
  EXPECT_FALSE(write_scene(Scene{}, path("empty.png")).ok());
}

TEST_F(Export, AFileIsReplacedWholeOrLeftAsItWas) {
  auto scene = build_layout_scene(mma_c_16x8());
  ASSERT_TRUE(scene.ok());
  std::ofstream(path("plot.svg")) << "old";
  ASSERT_TRUE(write_scene(*scene, path("plot.svg")).ok());
  EXPECT_EQ(slurp(path("plot.svg")).substr(0, 5), "<?xml");
  // Refused (a PNG past 400 Mpixel): the old file stays as it was.
  std::ofstream(path("plot.png")) << "old";
  Scene huge = *scene;
  huge.width = huge.height = 30000;
  EXPECT_FALSE(write_scene(huge, path("plot.png")).ok());
  EXPECT_EQ(slurp(path("plot.png")), "old");
  // No temporary file is left behind either way.
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(m_dir)) names.insert(e.path().filename().string());
  EXPECT_EQ(names, (std::set<std::string>{"plot.png", "plot.svg"}));
}

TEST(LayoutJson, FragmentContractRoundTrips) {
  LayoutGrid g = mma_c_16x8();
  std::string text = to_json(g).dump();
  auto j = nlohmann::json::parse(text);
  ASSERT_EQ(j["shape"], nlohmann::json::array({16, 8}));
  ASSERT_EQ(j["cells"].size(), 128u);
  std::set<std::pair<int, int>> coords, thread_values;
  for (const auto& c : j["cells"]) {
    ASSERT_TRUE(c.contains("row") && c.contains("col") && c.contains("thread") && c.contains("value")) << c;
    EXPECT_FALSE(c.contains("offset"));
    coords.insert({c["row"].get<int>(), c["col"].get<int>()});
    thread_values.insert({c["thread"].get<int>(), c["value"].get<int>()});
  }
  EXPECT_EQ(coords.size(), 128u);         // one object per coordinate
  EXPECT_EQ(thread_values.size(), 128u);  // and mma C is a bijection onto (thread, value)
  EXPECT_EQ(j["cells"][9]["row"], 1);    // row-major
  EXPECT_EQ(j["cells"][9]["col"], 1);
  EXPECT_EQ(j["cells"][9]["thread"], 4);  // lane 4 = groupID 1, threadID_in_group 0

  auto back = layout_grid_from_json(j);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->title, g.title);
  for (size_t i = 0; i < g.cells.size(); ++i) {
    EXPECT_EQ(back->cells[i].thread, g.cells[i].thread);
    EXPECT_EQ(back->cells[i].value, g.cells[i].value);
  }
}

TEST(LayoutJson, MemoryContractHasOffsetsAndBanks) {
  auto j = nlohmann::json::parse(to_json(row_major_smem(4, 64, 2)).dump());
  EXPECT_EQ(j["shape"], nlohmann::json::array({4, 64}));
  EXPECT_EQ(j["elem_bytes"], 2);
  for (const auto& c : j["cells"]) {
    ASSERT_TRUE(c.contains("offset") && c.contains("bank")) << c;
    EXPECT_FALSE(c.contains("thread"));
    int offset = c["offset"], bank = c["bank"];
    EXPECT_EQ(bank, (offset * 2 / 4) % 32);  // 2-byte elements: two per 4-byte bank
  }
}

TEST(LayoutJson, ImportRejectsBrokenDocuments) {
  EXPECT_FALSE(layout_grid_from_json(nlohmann::json::object()).ok());
  EXPECT_FALSE(layout_grid_from_json(nlohmann::json{{"shape", {2, 2}}, {"cells", nlohmann::json::array()}}).ok());
  auto j = to_json(mma_c_16x8());
  j["cells"][3]["col"] = 99;
  auto r = layout_grid_from_json(j);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("outside"), std::string::npos);
}

TEST(LayoutText, AsciiTableHasAHeaderAndALinePerRow) {
  std::string t = to_text(mma_c_16x8());
  std::istringstream in(t);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  ASSERT_EQ(lines.size(), 2u + 2u + 16u);  // title, shape, header, rule, rows
  EXPECT_NE(lines[4].find("T0V0"), std::string::npos);
  EXPECT_NE(lines[4].find("T3V1"), std::string::npos);
  EXPECT_NE(lines.back().find("T31V3"), std::string::npos);
  std::string m = to_text(row_major_smem(2, 4, 4));
  EXPECT_NE(m.find("banks (4-byte elements)"), std::string::npos);
}

}  // namespace
}  // namespace tl::viz
