// Timeline views: the Gantt scene maps events to the time axis, honours the zoom window, merges sub-pixel events
// (and only those), labels models; the statistics and occupancy scenes; export through the cairo painter.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/viz/timeline_fixtures.hpp"
#include "viz/cairo_painter.hpp"
#include "viz/text_check.hpp"
#include "viz/timeline_scene.hpp"

namespace tl::viz {
namespace {

namespace fs = std::filesystem;

Timeline two_events() {
  TimelineBuilder b({"load", "mma"});
  b.begin_warp(0, 0, 0);
  b.interval(0, 0, 0, 0, 1000);
  b.interval(1, 0, 0, 2000, 4000);
  b.begin_warp(0, 0, 1);
  b.interval(1, 1, 1, 500, 1500);
  return b.finish();
}

const Rect* rect_with_id(const Scene& s, std::int64_t id) {
  for (const auto& r : s.rects)
    if (r.id == id) return &r;
  return nullptr;
}

bool has_text(const Scene& s, const std::string& needle) {
  for (const auto& t : s.texts)
    if (t.text.find(needle) != std::string::npos) return true;
  return false;
}

TEST(GanttScene, EventsLieOnTheTimeAxisInTheirRows) {
  Timeline t = two_events();
  GanttStyle style;
  Scene s = build_gantt_scene(t, style);
  // Event widths are proportional to durations, and starts to start times, on one common axis.
  std::vector<const Rect*> r;
  for (std::size_t i = 0; i < t.events.size(); ++i) {
    r.push_back(rect_with_id(s, static_cast<std::int64_t>(i)));
    ASSERT_NE(r.back(), nullptr) << "event " << i;
  }
  const double k = r[0]->w / t.events[0].duration_ns();
  for (std::size_t i = 0; i < t.events.size(); ++i) {
    EXPECT_NEAR(r[i]->w, t.events[i].duration_ns() * k, 1e-6);
    EXPECT_NEAR(r[i]->x - r[0]->x, (t.events[i].start_ns - t.events[0].start_ns) * k, 1e-6);
  }
  // Warp 1's event sits in the row below warp 0's.
  const auto& e2 = t.events[2];
  EXPECT_EQ(t.tracks[e2.track].warp, 1);
  EXPECT_GT(r[2]->y, r[0]->y);
  EXPECT_EQ(s.hit_test(r[1]->x + 1, r[1]->y + 1), 1);
  EXPECT_FALSE(has_text(s, "MODEL"));
}

TEST(GanttScene, TheZoomWindowShowsOnlyWhatOverlapsIt) {
  Timeline t = two_events();
  GanttStyle style;
  style.t0_ns = 1200;
  style.t1_ns = 3000;
  GanttInfo info;
  Scene s = build_gantt_scene(t, style, &info);
  EXPECT_EQ(info.events_in_view, 2u);                // [500,1500] and [2000,4000]
  EXPECT_EQ(rect_with_id(s, 0), nullptr);            // [0,1000] is outside
  const Rect* partial = rect_with_id(s, 1);
  ASSERT_NE(partial, nullptr);
  const Rect* clipped = rect_with_id(s, 2);
  ASSERT_NE(clipped, nullptr);
  // Both are clipped to the window: [2000,3000] and [1200,1500] in a 1800-ns window.
  EXPECT_NEAR(partial->w / clipped->w, 1000.0 / 300.0, 1e-6);
}

TEST(GanttScene, LevelOfDetailMergesOnlySubPixelEvents) {
  Timeline t = testing::busy_timeline(8, 20000);  // 160000 events of ~10 ns over ~220 µs: far below a pixel
  GanttStyle style;
  style.width = 1000;
  GanttInfo merged_info, full_info;
  Scene merged = build_gantt_scene(t, style, &merged_info);
  EXPECT_EQ(merged_info.events_in_view, t.events.size());
  EXPECT_GT(merged_info.merged, t.events.size() * 9 / 10);
  EXPECT_LT(merged_info.bars, 8u * 1000u);  // at most about one bar per pixel column per row
  style.lod = false;
  Scene full = build_gantt_scene(t, style, &full_info);
  EXPECT_EQ(full_info.merged, 0u);
  EXPECT_EQ(full_info.bars, t.events.size());
  // Zoomed in to 500 ns, even the 2-ns children are several units wide: only events clipped to a sliver at the
  // window's edges (at most two per row) may merge.
  style.lod = true;
  style.t0_ns = 10000;
  style.t1_ns = 10500;
  GanttInfo zoom;
  build_gantt_scene(t, style, &zoom);
  EXPECT_GT(zoom.events_in_view, 8u * 30u);
  EXPECT_LE(zoom.merged, 2u * 8u);
}

TEST(GanttScene, TrackWindowLimitsTheRows) {
  Timeline t = testing::busy_timeline(40, 10);
  GanttStyle style;
  style.first_track = 8;
  style.max_tracks = 16;
  GanttInfo info;
  Scene s = build_gantt_scene(t, style, &info);
  EXPECT_EQ(info.tracks_shown, 16);
  for (const auto& r : s.rects) {
    if (r.id < 0) continue;
    const int track = static_cast<int>(t.events[static_cast<std::size_t>(r.id)].track);
    EXPECT_GE(track, 8);
    EXPECT_LT(track, 24);
  }
}

// Issue 25: the Gantt said nothing about which colour was which region, and its title ran off the panel. Every
// region with events is named next to its colour, above the rows (in view however many rows there are), and every
// text fits the scene at the sizes the app builds it, in both themes, a model's long banner included.
TEST(GanttScene, TheLegendNamesEachRegionAboveTheRows) {
  Timeline t = testing::busy_timeline(40, 30, true);
  t.model_note = "H100-class defaults (no measured ceilings); one warp per warpgroup shown (the others run the same)";
  t.label = "K=1024,M=1024,N=1024,dtype=bf16,out_dtype=same,trans_B=true  block_M=128,block_N=256,num_stages=3";
  for (double width : {420.0, 980.0, 1400.0}) {
    for (const Theme* theme : {&light_theme(), &dark_theme()}) {
      GanttStyle style;
      style.width = width;
      style.height = 500;
      style.theme = *theme;
      GanttInfo info;
      Scene s = build_gantt_scene(t, style, &info);
      const std::string where = std::to_string(int(width)) + (theme->dark ? " dark" : " light");
      EXPECT_EQ(s.height, 500) << where;
      EXPECT_EQ(s.background, theme->background) << where;
      EXPECT_EQ(check_text_layout(s, estimated_text_measure()), std::vector<std::string>{}) << where;
      double first_bar = 1e9;
      for (const auto& r : s.rects)
        if (r.id >= 0) first_bar = std::min(first_bar, r.y);
      for (int region = 0; region < 4; ++region) {
        // A swatch of the region's colour with its name just right of it, above the first bar.
        bool named = false;
        for (const auto& r : s.rects) {
          if (r.id >= 0 || !(r.fill == region_color(region)) || r.y > first_bar) continue;
          for (const auto& text : s.texts)
            named |= text.text == t.regions[static_cast<std::size_t>(region)] && std::abs(text.x - (r.x + 16)) < 1e-9 &&
                     std::abs(text.y - (r.y + 5)) < 1e-9;
        }
        EXPECT_TRUE(named) << where << ": no legend entry for " << t.regions[static_cast<std::size_t>(region)];
      }
      // The rows fill the height: one more would not fit.
      EXPECT_GT(info.tracks_shown, 1) << where;
      EXPECT_LT(s.height - (first_bar + info.tracks_shown * (style.row_height + style.row_gap)), 2 * (style.row_height + style.row_gap));
    }
  }
  auto stats = region_statistics(t);
  auto occ = stage_occupancy(t);
  for (const Theme* theme : {&light_theme(), &dark_theme()}) {
    EXPECT_EQ(check_text_layout(build_region_stats_scene(t, stats, 900, *theme), estimated_text_measure()),
              std::vector<std::string>{});
    EXPECT_EQ(check_text_layout(build_occupancy_scene(t, occ, 700, 400, *theme), estimated_text_measure()),
              std::vector<std::string>{});
  }
}

TEST(TimelineViews, AModelIsLabelledInEveryView) {
  Timeline t = testing::busy_timeline(4, 50, true);
  auto stats = region_statistics(t);
  auto occ = stage_occupancy(t);
  for (const Scene& s : {build_gantt_scene(t), build_region_stats_scene(t, stats), build_occupancy_scene(t, occ)})
    EXPECT_TRUE(has_text(s, "MODEL"));
}

TEST(TimelineViews, StatisticsBarsScaleWithTheMean) {
  Timeline t = testing::busy_timeline(4, 60);
  auto stats = region_statistics(t);
  Scene s = build_region_stats_scene(t, stats);
  ASSERT_GE(stats.size(), 2u);
  const Rect* a = rect_with_id(s, stats[0].region);
  const Rect* b = rect_with_id(s, stats[1].region);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_NEAR(a->w / b->w, stats[0].mean_ns / stats[1].mean_ns, 1e-6);
  EXPECT_TRUE(has_text(s, "p90"));
}

TEST(TimelineViews, OccupancyPlotMarksNumStages) {
  Timeline t = testing::busy_timeline(4, 60);
  auto occ = stage_occupancy(t, 64);
  Scene s = build_occupancy_scene(t, occ);
  EXPECT_TRUE(has_text(s, "num_stages = 4"));
  EXPECT_GT(s.lines.size(), 64u);  // the step curve
}

TEST(TimelineViews, ExportsThroughTheCairoPainter) {
  const fs::path dir = fs::temp_directory_path() / ("tl_viz_timeline_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  Timeline t = testing::busy_timeline(16, 200, true);
  for (const char* ext : {"png", "svg", "pdf"}) {
    const std::string path = (dir / (std::string("gantt.") + ext)).string();
    ASSERT_TRUE(write_scene(build_gantt_scene(t), path).ok()) << ext;
    std::ifstream in(path, std::ios::binary);
    std::string head(8, '\0');
    in.read(head.data(), 8);
    const std::string e = ext;
    const std::string expected = e == "png" ? "\x89PNG" : e == "pdf" ? "%PDF" : "<?xm";
    EXPECT_EQ(head.substr(0, 4), expected) << ext;
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tl::viz
