// Scene builders for pipeline timelines: the Gantt view (tracks, time axis, zoom, level of detail), region
// statistics, and the stage-occupancy plot.
#pragma once

#include <string>

#include "runtime/trace/timeline.hpp"
#include "viz/palette.hpp"
#include "viz/scene.hpp"

namespace tl::viz {

struct GanttStyle {
  double width = 1400;          // the whole scene, labels included
  double height = 0;            // > 0: the scene is this tall and shows as many tracks as fit (at most max_tracks)
  double row_height = 14;
  double row_gap = 2;
  double t0_ns = 0, t1_ns = 0;  // the zoom window; t1 <= t0: the whole timeline
  int first_track = 0;          // rows shown: tracks [first_track, first_track + max_tracks)
  int max_tracks = 64;          // 0: every track
  // Level of detail: consecutive events narrower than this (scene units) on a track merge into one bar coloured
  // by the region most of them belong to, so a view costs O(events in view) but paints at most ~width bars a row.
  double merge_below = 1.0;
  bool lod = true;
  bool legend = true;  // each region's colour and name, under the header
  std::string title;  // empty: kernel + label
  Theme theme = light_theme();
};

// What a Gantt build did (for the GUI's status line and the benchmark).
struct GanttInfo {
  std::size_t events_in_view = 0;  // events overlapping [t0, t1] on the rows shown
  std::size_t bars = 0;            // rects drawn for them (after merging)
  std::size_t merged = 0;          // events folded into merged bars
  int tracks_shown = 0;
  double t0_ns = 0, t1_ns = 0;
  double plot_x0 = 0, plot_x1 = 0;  // the time axis spans these scene x (t0 at plot_x0): for mouse -> time
};

// Rect ids: the index into Timeline::events of a single event; merged bars and decorations have none (-1).
// A model timeline carries a "MODEL" banner in its title.
Scene build_gantt_scene(const Timeline& t, const GanttStyle& style = {}, GanttInfo* info = nullptr);

// A row per region: count, mean, median, p90 (text), a bar of the mean with the median and p90 marked, and the
// duration histogram. Rect ids: the region id on its bar.
Scene build_region_stats_scene(const Timeline& t, const std::vector<RegionStats>& stats, double width = 1000,
                               const Theme& theme = light_theme());

// Stages in flight over time (averaged over the blocks alive), the config's num_stages as a reference line, and
// the share of time spent at each level.
Scene build_occupancy_scene(const Timeline& t, const StageOccupancy& occupancy, double width = 1000,
                            double height = 360, const Theme& theme = light_theme());

// The colour of region `region` (shared by the three views and the GUI).
Color region_color(int region);

// "12.5 µs", "830 ns", "1.20 ms".
std::string format_duration_ns(double ns);

}  // namespace tl::viz
