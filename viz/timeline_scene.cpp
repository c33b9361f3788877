// Timeline scene builders: the Gantt view with level-of-detail merging, region statistics, stage occupancy.
#include "viz/timeline_scene.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <tuple>

#include "viz/palette.hpp"

namespace tl::viz {
namespace {

// [SECTION] shared pieces ------------------------------------------------------------------------------------

constexpr double kMargin = 12;

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

// A tick step of 1, 2 or 5 x 10^k giving about `target` ticks over `range`.
double nice_step(double range, int target) {
  if (range <= 0) return 1;
  const double raw = range / std::max(target, 1);
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double r = raw / mag;
  return (r < 1.5 ? 1 : r < 3.5 ? 2 : r < 7.5 ? 5 : 10) * mag;
}

// Title, and for a model the banner that no view of a model may omit. Returns the y below them.
// Lines longer than the scene is wide are elided ("…"): a painter never has to cut them.
double draw_header(Scene& s, const Timeline& t, const std::string& title, double width, const Theme& th) {
  s.background = th.background;
  const double room = width - 2 * kMargin;
  double y = kMargin + 9;
  s.texts.push_back({kMargin, y, elide_text(title, 14, room, true), 14, th.ink, Align::left, true});
  y += 20;
  if (t.model) {
    s.texts.push_back({kMargin, y, elide_text("MODEL: computed from the config, not measured (" + t.model_note + ")", 11,
                                              room, true),
                       11, th.accent, Align::left, true});
    s.rects.push_back({kMargin - 4, y - 9, width - 2 * kMargin + 8, 18, th.accent_fill});
    y += 18;
  } else if (!t.warnings.empty()) {
    s.texts.push_back({kMargin, y, elide_text(t.warnings.front(), 11, room), 11, th.accent, Align::left});
    y += 18;
  }
  return y;
}

// A time tick's label, centred on its tick unless that would run past the scene's edge (the last tick of a window
// often sits at its right end): then ending (or starting) at the tick.
Text tick_label(double x, double y, std::string text, double scene_width, Color color) {
  constexpr double kSize = 9.5;
  const double half = estimate_text_width(text, kSize) / 2;
  const Align align = x + half > scene_width - kMargin / 2 ? Align::right : x - half < kMargin / 2 ? Align::left : Align::center;
  return {x, y, std::move(text), kSize, color, align};
}

std::string default_title(const Timeline& t, const std::string& what) {
  std::string s = t.kernel.empty() ? what : t.kernel + "  " + what;
  if (!t.label.empty()) s += "  ·  " + t.label;
  return s;
}

}  // namespace

Color region_color(int region) { return categorical(region * 3 + 1); }

std::string format_duration_ns(double ns) {
  const double a = std::abs(ns);
  if (a >= 1e6) return fmt(a >= 1e8 ? "%.0f ms" : a >= 1e7 ? "%.1f ms" : "%.2f ms", ns * 1e-6);
  if (a >= 1e3) return fmt(a >= 1e5 ? "%.0f µs" : a >= 1e4 ? "%.1f µs" : "%.2f µs", ns * 1e-3);
  return fmt(a >= 100 || a == std::floor(a) ? "%.0f ns" : "%.1f ns", ns);
}

// [SECTION] Gantt --------------------------------------------------------------------------------------------

Scene build_gantt_scene(const Timeline& t, const GanttStyle& style, GanttInfo* info) {
  Scene s;
  const Theme& th = style.theme;
  s.width = style.width;
  const double t0 = style.t1_ns > style.t0_ns ? style.t0_ns : 0;
  const double t1 = style.t1_ns > style.t0_ns ? style.t1_ns : std::max(t.duration_ns, 1.0);
  const int ntracks = static_cast<int>(t.tracks.size());
  const int first = std::clamp(style.first_track, 0, std::max(ntracks - 1, 0));
  int last = style.max_tracks > 0 ? std::min(ntracks, first + style.max_tracks) : ntracks;

  std::string title = style.title.empty() ? default_title(t, "timeline") : style.title;
  double y = draw_header(s, t, title, style.width, th);
  const double sub_y = y;  // the window line is written once the rows shown are known
  y += 16;

  // The legend under the header (not below the rows, where a tall view would push it out of sight): a swatch and
  // the name of each region that has events, wrapping to more lines as the width needs.
  if (style.legend) {
    std::vector<bool> used(t.regions.size(), false);
    for (const auto& ev : t.events)
      if (ev.region < used.size()) used[ev.region] = true;
    double lx = kMargin;
    bool any = false;
    for (std::size_t r = 0; r < t.regions.size(); ++r) {
      if (!used[r]) continue;
      const std::string name = elide_text(t.regions[r], 10, style.width - 2 * kMargin - 16);
      const double w = 16 + estimate_text_width(name, 10) + 14;
      if (any && lx + w > style.width - kMargin) {
        lx = kMargin;
        y += 15;
      }
      any = true;
      s.rects.push_back({lx, y - 5, 12, 10, region_color(static_cast<int>(r))});
      s.texts.push_back({lx + 16, y, name, 10, th.ink, Align::left});
      lx += w;
    }
    if (any) y += 16;
  }

  // Track labels: "SM s · block b · warp w" shortened to fit a column of at most 240 units.
  const double label_font = std::clamp(style.row_height * 0.72, 7.0, 11.0);
  std::vector<std::string> labels;
  double label_w = 60;
  for (int k = first; k < last; ++k) {
    const TimelineTrack& tr = t.tracks[static_cast<std::size_t>(k)];
    std::string l = tagged("SM ", tr.sm);
    l += tagged(" b", tr.block);
    l += tagged(" w", tr.warp);
    if (tr.lane > 0) l += tagged("+", tr.lane);
    label_w = std::max(label_w, estimate_text_width(l, label_font));
    labels.push_back(std::move(l));
  }
  label_w = std::min(label_w, 240.0);
  const double x0 = kMargin + label_w + 8, plot_w = std::max(style.width - x0 - kMargin, 10.0);
  const double scale = plot_w / (t1 - t0);
  auto px = [&](double ns) { return x0 + (ns - t0) * scale; };

  // Time axis with gridlines.
  const double axis_y = y + 8;
  const double rows_top = axis_y + 12;
  const double row_pitch = style.row_height + style.row_gap;
  if (style.height > 0) {
    // As many rows as the height holds below the header and legend (at least one).
    const int fit = std::max(1, static_cast<int>((style.height - kMargin - rows_top) / row_pitch));
    last = std::min(ntracks, first + (style.max_tracks > 0 ? std::min(fit, style.max_tracks) : fit));
  }
  const double rows_h = (last - first) * row_pitch;
  std::string sub = "window " + format_duration_ns(t0);
  sub += " – " + format_duration_ns(t1);
  sub += tagged("  ·  tracks ", first);
  sub += tagged("–", std::max(last - 1, first));
  sub += tagged(" of ", ntracks);
  sub += tagged("  ·  ", static_cast<long long>(t.events.size()));
  sub += " events";
  s.texts.push_back({kMargin, sub_y, elide_text(sub, 10, style.width - 2 * kMargin), 10, th.muted, Align::left});
  const double step = nice_step(t1 - t0, static_cast<int>(plot_w / 110));
  for (double v = std::ceil(t0 / step) * step; v <= t1 + step * 1e-9; v += step) {
    const double x = px(v);
    s.lines.push_back({x, rows_top - 4, x, rows_top + rows_h, th.grid_major, 0.75});
    s.texts.push_back(tick_label(x, axis_y, format_duration_ns(v), style.width, th.muted));
  }

  GanttInfo local;
  local.plot_x0 = x0;
  local.plot_x1 = x0 + plot_w;
  local.t0_ns = t0;
  local.t1_ns = t1;
  local.tracks_shown = last - first;
  const double merge = style.lod ? style.merge_below : 0;
  // A merged bar stops growing at a few units, so the view still shows which region dominates where.
  const double max_merged = std::max(4 * merge, 2.0);
  std::vector<Color> colors(std::max<std::size_t>(t.regions.size(), 16));
  for (std::size_t r = 0; r < colors.size(); ++r) colors[r] = region_color(static_cast<int>(r));
  s.rects.reserve(static_cast<std::size_t>(last - first) * 64);
  for (int k = first; k < last; ++k) {
    const TimelineTrack& tr = t.tracks[static_cast<std::size_t>(k)];
    const double ry = rows_top + (k - first) * row_pitch, rh = style.row_height;
    const bool new_block = k == first || t.tracks[static_cast<std::size_t>(k - 1)].block != tr.block ||
                           t.tracks[static_cast<std::size_t>(k - 1)].sm != tr.sm;
    if (tr.block % 2 == 0) s.rects.push_back({x0, ry - style.row_gap / 2, plot_w, row_pitch, th.stripe});
    if (new_block && k != first)
      s.lines.push_back({kMargin, ry - style.row_gap / 2, x0 + plot_w, ry - style.row_gap / 2, th.grid_major, 1});
    s.texts.push_back({x0 - 6, ry + rh / 2, labels[static_cast<std::size_t>(k - first)], label_font,
                       tr.lane > 0 ? th.muted : th.ink, Align::right});

    // The first event that can overlap t0: events are sorted by start, none longer than max_duration_ns.
    const TimelineEvent* begin = t.events.data() + tr.first;
    const TimelineEvent* end = begin + tr.count;
    const double from = t0 - tr.max_duration_ns;
    const TimelineEvent* e = std::lower_bound(begin, end, from,
                                              [](const TimelineEvent& ev, double v) { return ev.start_ns < v; });
    // A pending merged bar: its extent and how many events of each region (mod 16) it holds.
    bool pending = false;
    double mx0 = 0, mx1 = 0;
    std::array<std::uint32_t, 16> counts{};
    std::size_t pending_n = 0;
    auto flush = [&] {
      if (!pending) return;
      int best = 0;
      for (int r = 1; r < 16; ++r)
        if (counts[static_cast<std::size_t>(r)] > counts[static_cast<std::size_t>(best)]) best = r;
      Color c = colors[static_cast<std::size_t>(best)];
      c.a = 0.85f;
      s.rects.push_back({mx0, ry + 1, std::max(mx1 - mx0, merge), rh - 2, c});
      local.merged += pending_n;
      ++local.bars;
      pending = false;
      counts.fill(0);
      pending_n = 0;
    };
    double depth_end[4] = {0, 0, 0, 0};
    int depth = 0;
    double last_instant_x = -1e300;
    const double xmin = x0, xmax = x0 + plot_w;
    for (; e != end && e->start_ns <= t1; ++e) {
      if (e->end_ns < t0) continue;
      ++local.events_in_view;
      const double a = std::max(px(e->start_ns), xmin), b = std::min(px(e->end_ns), xmax);
      if (e->instant) {
        if (a - last_instant_x < std::max(merge, 0.5)) continue;
        last_instant_x = a;
        const Color& c = colors[e->region < colors.size() ? e->region : 0];
        s.lines.push_back({a, ry, a, ry + rh, Color{c.r * 0.6f, c.g * 0.6f, c.b * 0.6f, 1}, 1.5});
        continue;
      }
      if (b - a < merge) {
        if (pending && a <= mx1 + merge && b - mx0 <= max_merged) {
          mx1 = std::max(mx1, b);
        } else {
          flush();
          pending = true;
          mx0 = a;
          mx1 = b;
        }
        ++counts[e->region % 16u];
        ++pending_n;
        continue;
      }
      flush();
      // Nesting depth (children inset so their parents stay visible).
      while (depth > 0 && depth_end[depth - 1] <= e->start_ns) --depth;
      const int d = std::min(depth, 3);
      const double inset = d * 2.0;
      Rect r{a, ry + inset, b - a, rh - 2 * inset, colors[e->region < colors.size() ? e->region : 0]};
      r.stroke = Color{0, 0, 0, 0.25f};
      r.stroke_width = 0.5;
      r.id = static_cast<std::int64_t>(e - t.events.data());
      s.rects.push_back(r);
      ++local.bars;
      if (depth < 4) depth_end[depth++] = e->end_ns;
    }
    flush();
  }
  const double bottom = rows_top + rows_h + 8;
  s.height = style.height > 0 ? std::max(style.height, bottom) : bottom + kMargin;
  local.tracks_shown = last - first;
  if (info) *info = local;
  return s;
}

// [SECTION] region statistics --------------------------------------------------------------------------------

Scene build_region_stats_scene(const Timeline& t, const std::vector<RegionStats>& stats, double width,
                               const Theme& th) {
  Scene s;
  width = std::max(width, 860.0);  // the columns' room
  s.width = width;
  double y = draw_header(s, t, default_title(t, "region statistics"), width, th);
  const double row_h = 24;
  const double c_name = kMargin, c_count = c_name + 150, c_mean = c_count + 80, c_median = c_mean + 80,
               c_p90 = c_median + 80, c_bar = c_p90 + 90;
  const double hist_w = 150, c_hist = width - kMargin - hist_w, bar_w = std::max(c_hist - 16 - c_bar, 40.0);
  y += 6;
  for (auto [x, text, align] : {std::tuple{c_name, "region", Align::left}, {c_count + 60, "count", Align::right},
                                {c_mean + 70, "mean", Align::right}, {c_median + 70, "median", Align::right},
                                {c_p90 + 70, "p90", Align::right}, {c_bar, "mean (bar), median |, p90 ||", Align::left},
                                {c_hist, "histogram (min – max)", Align::left}})
    s.texts.push_back({x, y, text, 10, th.muted, align, true});
  y += 14;
  double scale_max = 0;
  for (const auto& r : stats) scale_max = std::max(scale_max, r.p90_ns);
  if (scale_max <= 0) scale_max = 1;
  for (std::size_t i = 0; i < stats.size(); ++i) {
    const RegionStats& r = stats[i];
    const double ry = y + static_cast<double>(i) * row_h, cy = ry + row_h / 2;
    if (i % 2 == 0) s.rects.push_back({kMargin - 4, ry, width - 2 * kMargin + 8, row_h, th.stripe});
    s.rects.push_back({c_name, cy - 5, 10, 10, region_color(r.region)});
    s.texts.push_back({c_name + 14, cy, r.name, 11, th.ink, Align::left});
    std::string count = std::to_string(r.count);
    if (r.instants) count += tagged("+", static_cast<long long>(r.instants));
    s.texts.push_back({c_count + 60, cy, count, 11, th.ink, Align::right});
    if (r.count == 0) continue;
    s.texts.push_back({c_mean + 70, cy, format_duration_ns(r.mean_ns), 11, th.ink, Align::right});
    s.texts.push_back({c_median + 70, cy, format_duration_ns(r.median_ns), 11, th.ink, Align::right});
    s.texts.push_back({c_p90 + 70, cy, format_duration_ns(r.p90_ns), 11, th.ink, Align::right});
    const double k = bar_w / scale_max;
    Rect bar{c_bar, cy - 6, std::max(r.mean_ns * k, 1.0), 12, region_color(r.region)};
    bar.id = r.region;
    s.rects.push_back(bar);
    s.lines.push_back({c_bar + r.median_ns * k, cy - 8, c_bar + r.median_ns * k, cy + 8, th.ink, 1.5});
    s.lines.push_back({c_bar + std::min(r.p90_ns * k, bar_w), cy - 9, c_bar + std::min(r.p90_ns * k, bar_w), cy + 9, th.ink, 3});
    std::uint64_t hmax = 1;
    for (auto h : r.histogram) hmax = std::max(hmax, h);
    const double bw = r.histogram.empty() ? 0 : hist_w / static_cast<double>(r.histogram.size());
    for (std::size_t b = 0; b < r.histogram.size(); ++b) {
      const double h = (row_h - 6) * static_cast<double>(r.histogram[b]) / static_cast<double>(hmax);
      if (h > 0) s.rects.push_back({c_hist + b * bw, ry + row_h - 3 - h, std::max(bw - 1, 0.5), h, region_color(r.region)});
    }
  }
  y += static_cast<double>(stats.size()) * row_h + 8;
  s.texts.push_back({kMargin, y, "histograms span each region's min – max; p90 interpolates between ranks", 9.5, th.muted,
                     Align::left});
  s.height = y + 10 + kMargin;
  return s;
}

// [SECTION] stage occupancy ----------------------------------------------------------------------------------

Scene build_occupancy_scene(const Timeline& t, const StageOccupancy& o, double width, double height,
                            const Theme& th) {
  Scene s;
  width = std::max(width, 400.0);
  s.width = width;
  double y = draw_header(s, t, default_title(t, "stages in flight"), width, th);
  const double side_w = 180;
  const double px0 = kMargin + 36, py0 = y + 10, pw = std::max(width - px0 - side_w - 2 * kMargin, 40.0);
  const double ph = std::max(height - py0 - 40, 40.0);
  const int top = std::max({o.num_stages, o.max_in_flight, 1});
  auto yof = [&](double v) { return py0 + ph - v / top * ph; };
  for (int k = 0; k <= top; ++k) {
    s.lines.push_back({px0, yof(k), px0 + pw, yof(k), th.grid_major, 0.75});
    s.texts.push_back({px0 - 6, yof(k), std::to_string(k), 10, th.muted, Align::right});
  }
  if (o.num_stages > 0) {
    s.lines.push_back({px0, yof(o.num_stages), px0 + pw, yof(o.num_stages), th.accent, 1.5});
    s.texts.push_back({px0 + pw - 4, yof(o.num_stages) - 8, tagged("num_stages = ", o.num_stages), 10, th.accent,
                       Align::right});
  }
  const double span = o.t1_ns - o.t0_ns;
  const double step = nice_step(span, static_cast<int>(pw / 110));
  for (double v = 0; span > 0 && v <= span + step * 1e-9; v += step) {
    const double x = px0 + v / span * pw;
    s.lines.push_back({x, py0 + ph, x, py0 + ph + 4, th.muted, 1});
    s.texts.push_back(tick_label(x, py0 + ph + 12, format_duration_ns(o.t0_ns + v), width, th.muted));
  }
  const Color fill = sequential(0.35);
  const std::size_t n = o.in_flight.size();
  for (std::size_t i = 0; i < n; ++i) {
    const double xa = px0 + pw * static_cast<double>(i) / n, xb = px0 + pw * static_cast<double>(i + 1) / n;
    const double v = o.in_flight[i];
    if (v > 0) s.rects.push_back({xa, yof(v), xb - xa, py0 + ph - yof(v), Color{fill.r, fill.g, fill.b, 0.35f}});
    s.lines.push_back({xa, yof(v), xb, yof(v), fill, 1.5});
    if (i + 1 < n) s.lines.push_back({xb, yof(v), xb, yof(o.in_flight[i + 1]), fill, 1.5});
  }
  s.lines.push_back({px0, py0, px0, py0 + ph, th.ink, 1});
  s.lines.push_back({px0, py0 + ph, px0 + pw, py0 + ph, th.ink, 1});

  // Share of block-time at each level.
  const double sx = px0 + pw + 24, sw = side_w - 40;
  s.texts.push_back({sx, py0, "time at k in flight", 10, th.muted, Align::left, true});
  for (std::size_t k = 0; k < o.fraction.size(); ++k) {
    const double ry = py0 + 16 + static_cast<double>(k) * 16;
    s.texts.push_back({sx, ry, std::to_string(k), 10, th.ink, Align::left});
    s.rects.push_back({sx + 14, ry - 5, std::max(o.fraction[k] * sw, 0.5), 10, fill});
    s.texts.push_back({sx + 18 + o.fraction[k] * sw, ry, fmt("%.0f%%", o.fraction[k] * 100), 9, th.muted, Align::left});
  }
  s.texts.push_back({sx, py0 + 24 + static_cast<double>(o.fraction.size()) * 16,
                     fmt("mean %.2f", o.mean) + tagged(", max ", o.max_in_flight), 10, th.ink, Align::left});
  s.height = std::max(height, py0 + ph + 24 + kMargin);
  return s;
}

}  // namespace tl::viz
