// Tests of viz scenes: hit-testing, the layout/inverse/bank builders, colour modes and palettes.
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <tuple>

#include "tests/viz/viz_fixtures.hpp"
#include "viz/layout_scene.hpp"
#include "viz/palette.hpp"
#include "viz/text_check.hpp"

namespace tl::viz {
namespace {

using testing::four_warp_fragment;
using testing::mma_c_16x8;
using testing::row_major_smem;

std::tuple<float, float, float> key(const Color& c) { return {c.r, c.g, c.b}; }

double distance(const Color& a, const Color& b) {
  return std::sqrt((a.r - b.r) * (a.r - b.r) + (a.g - b.g) * (a.g - b.g) + (a.b - b.b) * (a.b - b.b));
}

// Cell rects of a layout scene: those with an id (legend swatches have none).
std::vector<const Rect*> cell_rects(const Scene& s) {
  std::vector<const Rect*> out;
  for (const auto& r : s.rects) {
    if (r.id >= 0) out.push_back(&r);
  }
  return out;
}

TEST(Scene, HitTestFindsTopmostRectWithId) {
  Scene s;
  s.rects.push_back({0, 0, 10, 10, {}, {}, 1, 1});
  s.rects.push_back({5, 5, 10, 10, {}, {}, 1, 2});
  s.rects.push_back({0, 0, 100, 100, {}, {}, 1, -1});  // on top, but not hoverable
  EXPECT_EQ(s.hit_test(2, 2), 1);
  EXPECT_EQ(s.hit_test(7, 7), 2);   // overlap: the later rect wins
  EXPECT_EQ(s.hit_test(12, 12), 2);
  EXPECT_EQ(s.hit_test(50, 50), -1);
  EXPECT_EQ(s.hit_test(10, 2), -1);  // right edge is exclusive
}

TEST(LayoutScene, OneHoverableCellPerCoordinateAndHitTestFindsIt) {
  LayoutGrid g = mma_c_16x8();
  auto scene = build_layout_scene(g);
  ASSERT_TRUE(scene.ok()) << scene.status().message();
  auto cells = cell_rects(*scene);
  ASSERT_EQ(cells.size(), 16u * 8u);
  std::set<std::int64_t> ids;
  for (const Rect* r : cells) {
    ids.insert(r->id);
    const Cell& c = g.cells[static_cast<size_t>(r->id)];
    EXPECT_EQ(scene->hit_test(r->x + r->w / 2, r->y + r->h / 2), r->id);
    // Row-major placement: a cell to the right has a larger x, a cell below a larger y.
    if (c.col > 0) {
      EXPECT_GT(r->x, cells[static_cast<size_t>(r->id - 1)]->x);
    }
  }
  EXPECT_EQ(ids.size(), cells.size());
  EXPECT_EQ(scene->hit_test(-5, -5), -1);
  EXPECT_LE(cells.back()->x + cells.back()->w, scene->width);
  EXPECT_LE(cells.back()->y + cells.back()->h, scene->height);
}

bool has_text(const Scene& s, const std::string& text) {
  for (const auto& t : s.texts) {
    if (t.text == text) return true;
  }
  return false;
}

// Texts whose anchor lies inside the cell area (labels), as opposed to axes, title and legend.
size_t labels_inside_cells(const Scene& s) {
  auto cells = cell_rects(s);
  double x0 = 1e300, y0 = 1e300, x1 = -1e300, y1 = -1e300;
  for (const Rect* r : cells) {
    x0 = std::min(x0, r->x), y0 = std::min(y0, r->y);
    x1 = std::max(x1, r->x + r->w), y1 = std::max(y1, r->y + r->h);
  }
  size_t n = 0;
  for (const auto& t : s.texts) n += t.x > x0 && t.x < x1 && t.y > y0 && t.y < y1;
  return n;
}

TEST(LayoutScene, LargeCellsCarryThreadAndValueLabels) {
  auto scene = build_layout_scene(mma_c_16x8());
  ASSERT_TRUE(scene.ok());
  EXPECT_TRUE(has_text(*scene, "T31"));
  EXPECT_TRUE(has_text(*scene, "V3"));
  EXPECT_EQ(labels_inside_cells(*scene), 2u * 16 * 8);  // two lines per cell
}

TEST(LayoutScene, LabelsThenBordersGiveWayAsCellsShrink) {
  LayoutGrid g = row_major_smem(256, 256, 2);
  GridStyle style;
  style.color = ColorBy::index;
  auto big = build_layout_scene(g, style);
  ASSERT_TRUE(big.ok());
  EXPECT_EQ(cell_rects(*big).size(), 256u * 256u);
  EXPECT_EQ(labels_inside_cells(*big), 0u);      // 8-unit cells cannot hold "65535"
  EXPECT_LT(big->texts.size(), 200u);            // axis ticks thinned out, not one per row
  EXPECT_GT(big->lines.size(), 2u * 255u);       // cells still get borders at 8 units

  style.max_extent = 512;                          // 2-unit cells: no borders either
  auto tiny = build_layout_scene(g, style);
  ASSERT_TRUE(tiny.ok());
  EXPECT_LT(tiny->lines.size(), 200u);

  style.cell_size = 30;
  auto small_grid = build_layout_scene(row_major_smem(8, 8, 2), style);
  ASSERT_TRUE(small_grid.ok());
  EXPECT_EQ(labels_inside_cells(*small_grid), 64u);
  EXPECT_TRUE(has_text(*small_grid, "63"));
}

TEST(LayoutScene, AxisTicksNeverOverlap) {
  GridStyle style;
  style.max_extent = 600;
  auto scene = build_layout_scene(row_major_smem(200, 300, 4), style);
  ASSERT_TRUE(scene.ok());
  std::vector<const Text*> top;  // column tick labels share one y
  double y = -1;
  for (const auto& t : scene->texts) {
    if (t.text == "0" && t.align == Align::center) y = t.y;
  }
  for (const auto& t : scene->texts) {
    if (t.align == Align::center && t.y == y) top.push_back(&t);
  }
  ASSERT_GT(top.size(), 3u);
  for (size_t i = 1; i < top.size(); ++i) {
    double gap = top[i]->x - top[i - 1]->x;
    double half_widths = (estimate_text_width(top[i]->text, top[i]->size) +
                          estimate_text_width(top[i - 1]->text, top[i - 1]->size)) / 2;
    EXPECT_GT(gap, half_widths) << top[i - 1]->text << " and " << top[i]->text << " overlap";
  }
}

std::set<std::tuple<float, float, float>> distinct_cell_colours(const Scene& s) {
  std::set<std::tuple<float, float, float>> out;
  for (const Rect* r : cell_rects(s)) out.insert(key(r->fill));
  return out;
}

TEST(LayoutScene, ColourModesColourByWhatTheySay) {
  LayoutGrid g = four_warp_fragment(32);  // 128 threads in 4 warps, 64 * 32 / 128 = 16 values each
  GridStyle style;
  style.color = ColorBy::thread;
  EXPECT_EQ(distinct_cell_colours(*build_layout_scene(g, style)).size(), 128u);
  style.color = ColorBy::warp;
  EXPECT_EQ(distinct_cell_colours(*build_layout_scene(g, style)).size(), 4u);
  style.color = ColorBy::value;
  EXPECT_EQ(distinct_cell_colours(*build_layout_scene(g, style)).size(), 16u);

  // Same colour <=> same thread, cell by cell.
  style.color = ColorBy::thread;
  auto scene = build_layout_scene(g, style);
  auto cells = cell_rects(*scene);
  for (size_t i = 0; i < cells.size(); i += 37) {
    for (size_t j = 0; j < cells.size(); j += 41) {
      bool same_thread = g.cells[static_cast<size_t>(cells[i]->id)].thread == g.cells[static_cast<size_t>(cells[j]->id)].thread;
      EXPECT_EQ(same_thread, cells[i]->fill == cells[j]->fill);
    }
  }

  LayoutGrid m = row_major_smem(8, 64, 2);
  style.color = ColorBy::bank;
  EXPECT_EQ(distinct_cell_colours(*build_layout_scene(m, style)).size(), 32u);
  style.color = ColorBy::index;
  EXPECT_EQ(distinct_cell_colours(*build_layout_scene(m, style)).size(), 8u * 64u);
  // A fragment has no banks: everything falls back to the unset grey.
  style.color = ColorBy::bank;
  EXPECT_EQ(distinct_cell_colours(*build_layout_scene(g, style)).size(), 1u);
}

TEST(LayoutScene, LegendListsEntriesOfTheMode) {
  GridStyle style;
  style.color = ColorBy::value;
  auto scene = build_layout_scene(mma_c_16x8(), style);
  EXPECT_TRUE(has_text(*scene, "V3"));
  EXPECT_TRUE(has_text(*scene, "value"));
  style.color = ColorBy::bank;
  auto banks = build_layout_scene(row_major_smem(4, 64, 4), style);
  EXPECT_TRUE(has_text(*banks, "B31"));
}

// Issue 25: the app drew wgmma and 64x64 tiles at cells too small for any label. At readable_cell_size every cell
// shows its whole label (T and V, or offset and bank), and every text of the page and of the app's plot (no title, no
// legend) fits, in both themes.
TEST(LayoutScene, ReadableCellsShowEveryLabel) {
  struct Case {
    LayoutGrid grid;
    ColorBy color;
  };
  for (const Case& c : {Case{mma_c_16x8(), ColorBy::thread}, Case{four_warp_fragment(128), ColorBy::thread},
                        Case{row_major_smem(64, 64, 2), ColorBy::bank}}) {
    const double cell = readable_cell_size(c.grid, c.color);
    for (const Theme* theme : {&light_theme(), &dark_theme()}) {
      for (bool app : {false, true}) {
        GridStyle style;
        style.color = c.color;
        style.cell_size = cell;
        style.theme = *theme;
        style.legend = style.show_title = !app;
        auto scene = build_layout_scene(c.grid, style);
        ASSERT_TRUE(scene.ok()) << scene.status().message();
        std::size_t labels = 0;
        for (const auto& t : scene->texts) labels += t.size >= 9 - 1e-9 && t.align == Align::center && t.y > 20;
        EXPECT_GE(labels, 2 * c.grid.cells.size()) << c.grid.title << " at cell " << cell;
        EXPECT_EQ(check_text_layout(*scene, estimated_text_measure()), std::vector<std::string>{}) << c.grid.title;
        EXPECT_EQ(scene->background, theme->background);
      }
    }
    // A little smaller and the second line gives way.
    GridStyle small;
    small.color = c.color;
    small.cell_size = cell * 0.6;
    const Scene smaller = *build_layout_scene(c.grid, small);
    std::size_t lines = 0;
    for (const auto& t : smaller.texts) lines += t.text[0] == 'V' || t.text[0] == 'B';
    EXPECT_LT(lines, c.grid.cells.size()) << c.grid.title;
  }
}

// The app's legend beside the plot: every entry labelled (B0..B31 for a bank map, not a column of bare swatches), in
// columns when one would be taller than the room.
TEST(LayoutScene, LegendSceneLabelsEveryEntryWithinItsHeight) {
  const LayoutGrid g = row_major_smem(64, 64, 2);
  for (double room : {0.0, 300.0, 160.0}) {
    Scene legend = build_legend_scene(g, ColorBy::bank, false, dark_theme(), room);
    for (int b = 0; b < 32; ++b) EXPECT_TRUE(has_text(legend, tagged("B", b))) << b;
    if (room > 0) {
      EXPECT_LE(legend.height, room + 16) << room;
    }
    EXPECT_EQ(check_text_layout(legend, estimated_text_measure()), std::vector<std::string>{}) << room;
  }
  Scene threads = build_legend_scene(four_warp_fragment(128), ColorBy::thread, false, light_theme(), 0);
  EXPECT_TRUE(has_text(threads, "T31 + 32k"));
  EXPECT_TRUE(has_text(threads, "k: warp 0 to 3 (shifts the hue)"));
}

TEST(LayoutScene, RejectsMalformedGrids) {
  LayoutGrid g = mma_c_16x8();
  g.cells.pop_back();
  auto scene = build_layout_scene(g);
  ASSERT_FALSE(scene.ok());
  EXPECT_NE(scene.status().message().find("needs 128 cells"), std::string::npos);
  EXPECT_FALSE(build_layout_scene(LayoutGrid{}).ok());
  EXPECT_FALSE(build_inverse_scene(row_major_smem(4, 4, 4)).ok());  // no threads, no inverse
}

TEST(InverseScene, RowPerThreadHoldsThatThreadsCoordinates) {
  LayoutGrid g = mma_c_16x8();
  auto scene = build_inverse_scene(g);
  ASSERT_TRUE(scene.ok()) << scene.status().message();
  auto cells = cell_rects(*scene);
  ASSERT_EQ(cells.size(), 32u * 4u);  // every (thread, value) owns exactly one coordinate here
  // Cells are laid out thread-major: the k-th cell is thread k / 4, value k % 4.
  for (size_t k = 0; k < cells.size(); ++k) {
    const Cell& c = g.cells[static_cast<size_t>(cells[k]->id)];
    EXPECT_EQ(c.thread, static_cast<int>(k / 4));
    EXPECT_EQ(c.value, static_cast<int>(k % 4));
  }
  EXPECT_TRUE(has_text(*scene, "(15,7)"));  // lane 31, value 3
}

TEST(BankScene, WavefrontsDerivedFromDistinctWordsPerBank) {
  BankRequest column;  // a warp reading one column of a row-major 32x32 float tile
  column.label = "column";
  for (int t = 0; t < 32; ++t) column.accesses.push_back({t, 0, t * 32, -1});
  assign_wavefronts(column);
  EXPECT_EQ(column.wavefronts, 32);
  EXPECT_EQ(column.ideal_wavefronts, 1);
  EXPECT_EQ(column.degree[0], 32);
  EXPECT_EQ(column.degree[1], 0);

  BankRequest broadcast;  // every thread reads the same word: one wavefront
  for (int t = 0; t < 32; ++t) broadcast.accesses.push_back({t, 5, 7, -1});
  assign_wavefronts(broadcast);
  EXPECT_EQ(broadcast.wavefronts, 1);
  EXPECT_EQ(broadcast.degree[5], 1);

  BankMap map;
  map.title = "column read";
  map.requests = {column, broadcast};
  Scene s = build_bank_scene(map);
  size_t hoverable = 0, outlined = 0;
  for (const auto& r : s.rects) {
    hoverable += r.id >= 0;
    outlined += r.stroke.a > 0 && r.fill.a == 0;
  }
  EXPECT_EQ(hoverable, (32u + 1u) * 32u);  // wavefront rows x banks of both requests
  EXPECT_EQ(outlined, 1u);                  // only bank 0 of the column read is over its ideal
  std::int64_t id = s.hit_test(s.rects[0].x + 1, s.rects[0].y + 1);
  EXPECT_EQ(id, 0);  // request 0, wavefront 0, bank 0

  auto j = to_json(map);
  EXPECT_EQ(j["wavefronts"], 33);
  EXPECT_EQ(j["ideal_wavefronts"], 2);
  EXPECT_EQ(j["requests"][0]["bank_degree"][0], 32);
  EXPECT_NE(to_text(map).find("bank conflicts"), std::string::npos);
}

TEST(Palette, CategoricalColoursAreDistinguishable) {
  for (int i = 0; i < 32; ++i) {
    for (int j = i + 1; j < 32; ++j) {
      EXPECT_GT(distance(categorical(i), categorical(j)), 0.08) << i << " vs " << j;
    }
    EXPECT_GT(distance(categorical(i), categorical(i + 1)), 0.25) << "neighbours " << i;
  }
  EXPECT_EQ(categorical(3), categorical(35));
}

// Neighbouring cells of a fragment held by different threads get colours told apart at a glance (issue 25: the 32
// lanes of a warp came out nearly one shade in a wgmma accumulator), in one warp and across four.
TEST(Palette, NeighbouringThreadsAreTellableApart) {
  for (const LayoutGrid& g : {mma_c_16x8(), four_warp_fragment(128)}) {
    GridStyle style;
    style.color = ColorBy::thread;
    double closest = 1e9;
    for (int r = 0; r < g.rows; ++r) {
      for (int c = 0; c < g.cols; ++c) {
        const Cell& a = g.at(r, c);
        for (auto [dr, dc] : {std::pair{0, 1}, {1, 0}}) {
          if (r + dr >= g.rows || c + dc >= g.cols) continue;
          const Cell& b = g.at(r + dr, c + dc);
          if (a.thread == b.thread) continue;
          closest = std::min(closest, distance(cell_color(g, a, ColorBy::thread), cell_color(g, b, ColorBy::thread)));
        }
      }
    }
    EXPECT_GT(closest, 0.15) << g.title;
  }
  // Thread t and t + 32 (the same lane of two warps) are related but not one colour: every thread has its own.
  std::set<std::tuple<float, float, float>> threads;
  for (int t = 0; t < 256; ++t) threads.insert(key(warp_family(t)));
  EXPECT_EQ(threads.size(), 256u);
}

TEST(Palette, SequentialRampGetsLighter) {
  for (int i = 1; i <= 20; ++i) EXPECT_GT(sequential(i / 20.0).luma(), sequential((i - 1) / 20.0).luma());
}

}  // namespace
}  // namespace tl::viz
