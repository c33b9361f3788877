// Roofline scene: the hierarchical roofline of measured ceilings on log-log axes, with runs as points on it.
#include "viz/roofline_scene.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>

#include "viz/palette.hpp"
#include "viz/text_check.hpp"

namespace tl::viz {
namespace {

// [SECTION] style ------------------------------------------------------------------------------------------------

const Color kMissing{0.65f, 0.65f, 0.67f, 1};

constexpr double kMarginLeft = 78, kMarginTop = 46, kMarginBottom = 58, kMarginRight = 18;
constexpr double kLegendWidth = 210;
constexpr double kPointSize = 8, kRidgeSize = 7;

// Memory roofs in blues (HBM darkest on white, lightest on dark), compute roofs in warm hues: the two families read
// apart at a glance, on either background.
Color memory_color(std::size_t i, const Theme& t) {
  const double step = 0.14 * static_cast<double>(i);
  return t.dark ? oklch(0.80 - step * 0.8, 0.12, 250) : oklch(0.42 + step, 0.13, 250);
}
Color compute_color(std::size_t i, const Theme& t) {
  static const double kHue[] = {40, 20, 75, 330};
  return oklch(t.dark ? 0.74 : 0.55, 0.16, kHue[i % 4]);
}

// [SECTION] numbers ----------------------------------------------------------------------------------------------

std::string fixed3(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.3g", v);
  return buf;
}

std::string decade_label(int k, bool si) {
  if (si) return si_text(std::pow(10.0, k), "");
  if (k >= 0 && k <= 3) return std::to_string(static_cast<long long>(std::llround(std::pow(10.0, k))));
  if (k < 0 && k >= -3) {
    std::string s = "0.";
    for (int i = 0; i < -k - 1; ++i) s += '0';
    return s + "1";
  }
  return tagged("1e", k);
}

std::string ms_text(double ms) {
  if (ms >= 1) return fixed3(ms) + " ms";
  if (ms >= 1e-3) return fixed3(ms * 1e3) + " us";
  return fixed3(ms * 1e6) + " ns";
}

bool is_number(const std::string& s) {
  if (s.empty()) return false;
  char* end = nullptr;
  std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size();
}

// [SECTION] ranges -----------------------------------------------------------------------------------------------

// Expands [lo, hi] (in log10) to at least `min_decades`, around its centre.
void widen(double& lo, double& hi, double min_decades) {
  double span = std::log10(hi) - std::log10(lo);
  if (span >= min_decades) return;
  double grow = std::pow(10.0, (min_decades - span) / 2);
  lo /= grow;
  hi *= grow;
}

LogAxes make_axes(const Roofline& m, const std::vector<RooflinePoint>& points, double left, double top, double w,
                  double h) {
  LogAxes a;
  double x_lo = HUGE_VAL, x_hi = 0, y_lo = HUGE_VAL;
  for (const auto& r : m.ridges()) {
    x_lo = std::min(x_lo, r.intensity);
    x_hi = std::max(x_hi, r.intensity);
  }
  for (const auto& p : points) {
    for (double x : {p.intensity, p.actual_intensity()}) {
      if (x <= 0) continue;
      x_lo = std::min(x_lo, x);
      x_hi = std::max(x_hi, x);
    }
    if (p.flops_per_s > 0) y_lo = std::min(y_lo, p.flops_per_s);
  }
  double p_hi = 0;
  for (const auto& p : points) p_hi = std::max(p_hi, p.intensity);
  a.x_min = x_lo / 4;
  a.x_max = std::max(x_hi * 4, p_hi * 12);  // room right of the points for their labels
  widen(a.x_min, a.x_max, 2);
  a.y_max = m.top_compute().value * 2.5;
  // Low enough to show where HBM enters the plot, but no more than five decades below the top roof unless a point
  // sits lower.
  double floor = std::max(m.hbm().value * a.x_min, a.y_max * 1e-5);
  a.y_min = std::min(floor, y_lo / 2);
  widen(a.y_min, a.y_max, 2);
  a.left = left;
  a.top = top;
  a.width = w;
  a.height = h;
  return a;
}

// [SECTION] colours of points ------------------------------------------------------------------------------------

struct Coloring {
  std::string heading;
  std::vector<std::pair<Color, std::string>> legend;
  std::vector<Color> of_point;
  std::string note;
};

std::optional<std::string> param_of(const RooflinePoint& p, const std::string& name) {
  if (auto it = p.config.find(name); it != p.config.end()) return it->second;
  if (auto it = p.problem.find(name); it != p.problem.end()) return it->second;
  return std::nullopt;
}

Result<Coloring> color_points(const std::vector<RooflinePoint>& points, const std::string& by) {
  Coloring c;
  c.of_point.resize(points.size(), kMissing);
  if (by.empty()) {
    std::vector<std::string> kernels;
    for (const auto& p : points)
      if (std::find(kernels.begin(), kernels.end(), p.kernel) == kernels.end()) kernels.push_back(p.kernel);
    c.heading = "kernel";
    for (std::size_t k = 0; k < kernels.size(); ++k) c.legend.push_back({categorical(static_cast<int>(k) * 3), kernels[k]});
    for (std::size_t i = 0; i < points.size(); ++i) {
      auto k = std::find(kernels.begin(), kernels.end(), points[i].kernel) - kernels.begin();
      c.of_point[i] = categorical(static_cast<int>(k) * 3);
    }
    return c;
  }
  std::vector<std::string> values;
  bool numeric = true, missing = false;
  for (const auto& p : points) {
    auto v = param_of(p, by);
    if (!v) {
      missing = true;
      continue;
    }
    if (std::find(values.begin(), values.end(), *v) == values.end()) values.push_back(*v);
    numeric = numeric && is_number(*v);
  }
  if (values.empty() && !points.empty()) {
    std::set<std::string> have;
    for (const auto& p : points) {
      for (const auto& [k, v] : p.config) have.insert(k);
      for (const auto& [k, v] : p.problem) have.insert(k);
    }
    std::string list;
    for (const auto& k : have) list += (list.empty() ? "" : ", ") + k;
    return make_error(ErrorCode::invalid_argument, "--color-by " + by + ": no run has a parameter '" + by +
                                                       "'; they have: " + (list.empty() ? "none" : list));
  }
  if (numeric) {
    std::sort(values.begin(), values.end(), [](const auto& a, const auto& b) { return std::stod(a) < std::stod(b); });
  } else {
    std::sort(values.begin(), values.end());
  }
  c.heading = by;
  // Few values: one hue each; many (a wide numeric sweep): a sequential ramp by rank, the legend sampling it.
  const bool ramp = values.size() > 12;
  auto color_of = [&](std::size_t rank) {
    return ramp ? sequential(static_cast<double>(rank) / static_cast<double>(values.size() - 1))
                : categorical(static_cast<int>(rank) * 3);
  };
  for (std::size_t i = 0; i < points.size(); ++i) {
    auto v = param_of(points[i], by);
    if (v) c.of_point[i] = color_of(static_cast<std::size_t>(std::find(values.begin(), values.end(), *v) - values.begin()));
  }
  const std::size_t shown = ramp ? 8 : values.size();
  for (std::size_t k = 0; k < shown; ++k) {
    std::size_t rank = ramp ? k * (values.size() - 1) / (shown - 1) : k;
    c.legend.push_back({color_of(rank), by + "=" + values[rank]});
  }
  if (ramp) c.note = std::to_string(values.size()) + " values, shown by rank";
  if (missing) c.legend.push_back({kMissing, "(no " + by + ")"});
  return c;
}

// [SECTION] drawing ----------------------------------------------------------------------------------------------

// Clips the log-space segment y = bw * x (x in [xa, xb]) to the axes; false when nothing is left.
bool clip_memory_roof(const LogAxes& a, double bw, double& xa, double& xb) {
  xa = std::max({xa, a.x_min, a.y_min / bw});
  xb = std::min({xb, a.x_max, a.y_max / bw});
  return xb > xa;
}

struct Placed {
  double x0, x1, y0, y1;
  bool overlaps(const Placed& o) const { return x0 < o.x1 && o.x0 < x1 && y0 < o.y1 && o.y0 < y1; }
};

// Where labels may go: inside `bounds`, clear of every box taken before (labels, points) and of every roof (a label
// is never struck through by a line). Candidates are tried in order; the first clear one is taken.
struct Placer {
  Placed bounds{};
  std::vector<Placed> taken;
  std::vector<std::array<double, 4>> segments;

  bool clear(const Placed& b) const {
    if (b.x0 < bounds.x0 || b.x1 > bounds.x1 || b.y0 < bounds.y0 || b.y1 > bounds.y1) return false;
    if (std::any_of(taken.begin(), taken.end(), [&](const Placed& p) { return p.overlaps(b); })) return false;
    return std::none_of(segments.begin(), segments.end(), [&](const auto& g) {
      return segment_crosses_box(g[0], g[1], g[2], g[3], b.x0 - 1, b.y0 - 1, b.x1 + 1, b.y1 + 1);
    });
  }
  bool take(const Placed& b) {
    if (!clear(b)) return false;
    taken.push_back(b);
    return true;
  }
};

// A label candidate: text anchored at (x, y) with an alignment; its box is `w` wide and `h` tall around it.
struct Spot {
  double x, y;
  Align align;
};

Placed box_of(const Spot& c, double w, double h) {
  const double x0 = c.align == Align::left ? c.x : c.align == Align::right ? c.x - w : c.x - w / 2;
  return {x0, x0 + w, c.y - h / 2, c.y + h / 2};
}

// The first candidate whose box is clear, taken; none when every one collides.
std::optional<Spot> place(Placer& placer, const std::vector<Spot>& candidates, double w, double h) {
  for (const Spot& c : candidates)
    if (placer.take(box_of(c, w, h))) return c;
  return std::nullopt;
}

// When the places beside a mark are taken: the clear box nearest to (x, y) within `radius`, its text starting (or,
// left of the mark, ending) there; the caller joins it to the mark with a leader.
std::optional<Spot> place_near(Placer& placer, double x, double y, double w, double h, double radius) {
  std::vector<std::pair<double, Spot>> spots;
  for (double dx = -radius; dx <= radius; dx += 12)
    for (double dy = -radius; dy <= radius; dy += h / 2)
      spots.push_back({dx * dx + dy * dy, {x + dx + (dx >= 0 ? 6 : -6), y + dy, dx >= 0 ? Align::left : Align::right}});
  std::stable_sort(spots.begin(), spots.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& [d, c] : spots)
    if (placer.take(box_of(c, w, h))) return c;
  return std::nullopt;
}

// A thin line from a mark at (x, y) to the near end of its label (thin: it may pass behind other text).
void leader(Scene& s, double x, double y, const Spot& label, Color color) {
  const double lx = label.align == Align::left ? label.x - 2 : label.x + 2;
  s.lines.push_back({x, y, lx, label.y, color, 0.7});
}

void draw_grid(Scene& s, const LogAxes& a, const Theme& th) {
  const double x1 = a.left + a.width, y1 = a.top + a.height;
  for (int k = static_cast<int>(std::floor(std::log10(a.x_min))); k <= static_cast<int>(std::ceil(std::log10(a.x_max))); ++k) {
    for (int m = 1; m <= 9; ++m) {
      double v = m * std::pow(10.0, k);
      if (v < a.x_min * (1 - 1e-9) || v > a.x_max * (1 + 1e-9)) continue;
      double x = a.x_of(v);
      s.lines.push_back({x, a.top, x, y1, m == 1 ? th.grid_major : th.grid_minor, m == 1 ? 0.8 : 0.5});
      if (m == 1) {
        s.lines.push_back({x, y1, x, y1 + 5, th.ink, 1});
        s.texts.push_back({x, y1 + 15, decade_label(k, false), 11, th.ink, Align::center});
      }
    }
  }
  for (int k = static_cast<int>(std::floor(std::log10(a.y_min))); k <= static_cast<int>(std::ceil(std::log10(a.y_max))); ++k) {
    for (int m = 1; m <= 9; ++m) {
      double v = m * std::pow(10.0, k);
      if (v < a.y_min * (1 - 1e-9) || v > a.y_max * (1 + 1e-9)) continue;
      double y = a.y_of(v);
      s.lines.push_back({a.left, y, x1, y, m == 1 ? th.grid_major : th.grid_minor, m == 1 ? 0.8 : 0.5});
      if (m == 1) {
        s.lines.push_back({a.left - 5, y, a.left, y, th.ink, 1});
        s.texts.push_back({a.left - 8, y, decade_label(k, true), 11, th.ink, Align::right});
      }
    }
  }
  for (auto [xa, ya, xb, yb] : {std::array{a.left, a.top, x1, a.top}, std::array{x1, a.top, x1, y1},
                                std::array{x1, y1, a.left, y1}, std::array{a.left, y1, a.left, a.top}})
    s.lines.push_back({xa, ya, xb, yb, th.ink, 1});
  s.texts.push_back({a.left + a.width / 2, y1 + 38, "arithmetic intensity (FLOP/byte)", 12, th.ink, Align::center});
  s.texts.push_back({a.left - 8, a.top - 14, "FLOP/s", 12, th.ink, Align::right, true});
}

}  // namespace

// [SECTION] public -----------------------------------------------------------------------------------------------

double LogAxes::x_of(double v) const {
  return left + (std::log10(v) - std::log10(x_min)) / (std::log10(x_max) - std::log10(x_min)) * width;
}
double LogAxes::y_of(double v) const {
  return top + height - (std::log10(v) - std::log10(y_min)) / (std::log10(y_max) - std::log10(y_min)) * height;
}
double LogAxes::intensity_at(double x) const {
  return std::pow(10.0, std::log10(x_min) + (x - left) / width * (std::log10(x_max) - std::log10(x_min)));
}
double LogAxes::flops_at(double y) const {
  return std::pow(10.0, std::log10(y_min) + (top + height - y) / height * (std::log10(y_max) - std::log10(y_min)));
}

std::string si_text(double value, const std::string& unit) {
  static const char* kPrefix[] = {"", "k", "M", "G", "T", "P", "E"};
  int i = 0;
  double v = value;
  while (std::fabs(v) >= 999.5 && i < 6) {
    v /= 1000;
    ++i;
  }
  std::string s = fixed3(v);
  const std::string suffix = std::string(kPrefix[i]) + unit;
  return suffix.empty() ? s : s + " " + suffix;
}

Result<RooflineScene> build_roofline_scene(const Roofline& m, const std::vector<RooflinePoint>& points,
                                           const RooflineOptions& o) {
  RooflineScene out;
  Scene& s = out.scene;
  s.width = o.width;
  s.height = o.height;

  // Points with no flops (copies) have no place on a FLOP/s axis; they stay in the data export.
  std::vector<std::size_t> drawable;
  for (std::size_t i = 0; i < points.size(); ++i) {
    if (points[i].intensity > 0 && points[i].flops_per_s > 0) drawable.push_back(i);
    else out.notes.push_back(points[i].label() + ": no floating-point work, not on a FLOP/s roofline");
  }
  std::vector<RooflinePoint> shown;
  for (std::size_t i : drawable) shown.push_back(points[i]);
  auto coloring = color_points(shown, o.color_by);
  if (!coloring) return coloring.status();

  const bool legend = !shown.empty();
  const double plot_w = o.width - kMarginLeft - kMarginRight - (legend ? kLegendWidth : 0);
  const double plot_h = o.height - kMarginTop - kMarginBottom;
  if (plot_w < 100 || plot_h < 100)
    return make_error(ErrorCode::invalid_argument, "the roofline needs a scene of at least " +
                                                       std::to_string(static_cast<int>(kMarginLeft + kMarginRight + 100 + (legend ? kLegendWidth : 0))) +
                                                       " x " + std::to_string(static_cast<int>(kMarginTop + kMarginBottom + 100)));
  LogAxes& a = out.axes;
  a = make_axes(m, shown, kMarginLeft, kMarginTop, plot_w, plot_h);

  const Theme& th = o.theme;
  s.background = th.background;
  std::string title = o.title;
  if (title.empty()) {
    title = "Roofline: " + (m.ceilings().device_name.empty() ? std::string("unnamed device") : m.ceilings().device_name);
    if (!m.ceilings().measured_at.empty()) title += " (ceilings measured " + m.ceilings().measured_at.substr(0, 10) + ")";
  }
  s.texts.push_back({kMarginLeft, 18, elide_text(title, 14, o.width - kMarginLeft - kMarginRight, true), 14, th.ink,
                     Align::left, true});
  draw_grid(s, a, th);

  // Ceilings: each memory roof rises until it meets the highest compute roof; each compute roof runs from where it
  // meets the fastest memory roof to the right edge. Every ridge point then lies on two drawn lines. All roofs are
  // drawn first, so that every label is placed clear of all of them, of the points and of each other.
  Placer placer;
  placer.bounds = {a.left + 2, a.left + a.width - 2, a.top + 2, a.top + a.height - 2};
  for (const auto& p : shown) {
    const double x = a.x_of(p.intensity), y = a.y_of(p.flops_per_s);
    placer.taken.push_back({x - kPointSize / 2 - 1, x + kPointSize / 2 + 1, y - kPointSize / 2 - 1, y + kPointSize / 2 + 1});
  }
  const double top_rate = m.top_compute().value, top_bw = m.top_memory().value;
  std::vector<std::pair<DrawnCeiling, Color>> memory_roofs, compute_roofs;
  for (std::size_t i = 0; i < m.memory().size(); ++i) {
    const auto& c = m.memory()[i];
    double xa = a.x_min, xb = top_rate / c.value;
    if (!clip_memory_roof(a, c.value, xa, xb)) continue;
    DrawnCeiling d{c.name, c.label + " " + si_text(c.value, "B/s"), a.x_of(xa), a.y_of(c.value * xa), a.x_of(xb),
                   a.y_of(c.value * xb)};
    s.lines.push_back({d.x0, d.y0, d.x1, d.y1, memory_color(i, th), i == 0 ? 2.2 : 1.4});
    memory_roofs.push_back({d, memory_color(i, th)});
  }
  std::vector<std::size_t> by_rate(m.compute().size());
  for (std::size_t i = 0; i < by_rate.size(); ++i) by_rate[i] = i;
  std::sort(by_rate.begin(), by_rate.end(), [&](auto x, auto y) { return m.compute()[x].value > m.compute()[y].value; });
  for (std::size_t i : by_rate) {
    const auto& c = m.compute()[i];
    double xa = std::max(a.x_min, c.value / top_bw);
    if (c.value < a.y_min || c.value > a.y_max || xa >= a.x_max) continue;
    DrawnCeiling d{c.name, c.label + " " + si_text(c.value, "FLOP/s"), a.x_of(xa), a.y_of(c.value), a.x_of(a.x_max),
                   a.y_of(c.value)};
    s.lines.push_back({d.x0, d.y0, d.x1, d.y1, compute_color(i, th), 1.8});
    compute_roofs.push_back({d, compute_color(i, th)});
  }
  for (const auto* roofs : {&memory_roofs, &compute_roofs})
    for (const auto& [d, color] : *roofs) placer.segments.push_back({d.x0, d.y0, d.x1, d.y1});

  // Annotated points: all when few, else the most efficient of each kernel. Their stems (up to the roof) are drawn
  // before any label is placed, so labels keep clear of them too.
  std::vector<bool> annotate(shown.size(), shown.size() <= static_cast<std::size_t>(std::max(o.max_annotated, 0)));
  if (shown.size() > static_cast<std::size_t>(std::max(o.max_annotated, 0))) {
    std::map<std::string, std::size_t> best;
    for (std::size_t i = 0; i < shown.size(); ++i) {
      auto it = best.find(shown[i].kernel);
      if (it == best.end() || shown[i].efficiency > shown[it->second].efficiency) best[shown[i].kernel] = i;
    }
    for (const auto& [k, i] : best) annotate[i] = true;
  }
  bool any_dram = false;
  const Color point_edge{th.rule.r, th.rule.g, th.rule.b, 0.8f};
  for (std::size_t j = 0; j < shown.size(); ++j) {
    const RooflinePoint& p = shown[j];
    DrawnPoint d;
    d.point = drawable[j];
    d.x = a.x_of(p.intensity);
    d.y = a.y_of(p.flops_per_s);
    d.roof_y = a.y_of(p.attainable_flops);
    d.color = coloring->of_point[j];
    d.annotated = annotate[j];
    const auto id = static_cast<std::int64_t>(out.hover.size());
    std::string hover = p.label() + "\n" + si_text(p.flops_per_s, "FLOP/s") + " at " + fixed3(p.intensity) +
                        " FLOP/byte: " + fixed3(p.efficiency * 100) + "% of " + p.ceiling + " (" + p.bound +
                        "-bound)\npredicted " + ms_text(p.predicted_ms) + ", measured " + ms_text(p.measured_ms);
    if (p.dram_bytes) {
      any_dram = true;
      d.actual_x = a.x_of(p.actual_intensity());
      hover += "\nDRAM " + si_text(*p.dram_bytes, "B") + " measured (" + fixed3(*p.dram_bytes / p.min_bytes) +
               "x the minimum): actual intensity " + fixed3(p.actual_intensity());
      // The measured-bytes point: hollow, joined to the ideal one (re-reads and spills move it left).
      s.lines.push_back({d.actual_x, d.y, d.x, d.y, d.color, 1});
      s.rects.push_back({d.actual_x - kPointSize / 2, d.y - kPointSize / 2, kPointSize, kPointSize, {0, 0, 0, 0},
                         d.color, 1.6, id});
      placer.taken.push_back({d.actual_x - kPointSize / 2 - 1, d.actual_x + kPointSize / 2 + 1, d.y - kPointSize / 2 - 1,
                              d.y + kPointSize / 2 + 1});
    } else if (!p.dram_note.empty()) {
      hover += "\nDRAM bytes not measured: " + p.dram_note;
    }
    out.hover.push_back(hover);
    s.rects.push_back({d.x - kPointSize / 2, d.y - kPointSize / 2, kPointSize, kPointSize, d.color, point_edge, 0.6, id});
    // Predicted against measured: a stem from the point up to the roof (the time bound), ticked there.
    if (d.annotated && d.roof_y < d.y - kPointSize / 2) {
      s.lines.push_back({d.x, d.y - kPointSize / 2, d.x, d.roof_y, d.color, 1});
      s.lines.push_back({d.x - 5, d.roof_y, d.x + 5, d.roof_y, d.color, 1.6});
      placer.segments.push_back({d.x, d.y - kPointSize / 2, d.x, d.roof_y});
      placer.segments.push_back({d.x - 5, d.roof_y, d.x + 5, d.roof_y});
    }
    out.points.push_back(d);
  }

  // Ridge points: a marker where each memory roof meets each compute roof; the HBM ones dropped to the axis.
  struct RidgeLabel {
    double x, y;
    std::string text;
  };
  std::vector<RidgeLabel> ridge_labels;
  for (const auto& r : m.ridges()) {
    if (r.intensity < a.x_min || r.intensity > a.x_max || r.flops > a.y_max || r.flops < a.y_min) continue;
    const bool hbm = r.memory == m.hbm().name;
    double x = a.x_of(r.intensity), y = a.y_of(r.flops);
    const double size = hbm ? kRidgeSize : kRidgeSize - 2;
    s.rects.push_back({x - size / 2, y - size / 2, size, size, hbm ? th.ink : th.background, th.ink, 1,
                       static_cast<std::int64_t>(out.hover.size())});
    placer.taken.push_back({x - size / 2, x + size / 2, y - size / 2, y + size / 2});
    out.hover.push_back("ridge " + m.find(r.memory)->label + " x " + m.find(r.compute)->label + ": " +
                        fixed3(r.intensity) + " FLOP/byte, " + si_text(r.flops, "FLOP/s"));
    if (hbm) {
      s.lines.push_back({x, y + size / 2, x, a.top + a.height, th.grid_major, 0.8});
      ridge_labels.push_back({x, y, fixed3(r.intensity)});
    }
  }

  // Labels, most important first: where space is short the roofs keep theirs, then the best runs. A roof or point
  // label with no room anywhere is listed in the legend instead, so each says its number somewhere.
  std::vector<std::pair<Color, std::string>> unplaced;
  constexpr double kRoofFont = 11, kRoofBox = 14;
  // At the first clear candidate; else off the roof (roofs close together), joined to its middle; else in the legend.
  auto place_roof_label = [&](const DrawnCeiling& d, Color color, const std::vector<Spot>& spots, double w) {
    const double mx = (d.x0 + d.x1) / 2, my = (d.y0 + d.y1) / 2;
    if (auto spot = place(placer, spots, w, kRoofBox)) {
      s.texts.push_back({spot->x, spot->y, d.label, kRoofFont, color, spot->align});
    } else if (auto near = place_near(placer, mx, my, w, kRoofBox, 120)) {
      leader(s, mx, my, *near, color);
      s.texts.push_back({near->x, near->y, d.label, kRoofFont, color, near->align});
    } else {
      unplaced.push_back({color, d.label});
    }
  };
  for (const auto& [d, color] : compute_roofs) {
    // Right-aligned along the roof from the plot's right edge inwards, above it or below it.
    const double w = estimate_text_width(d.label, kRoofFont) + 2;
    std::vector<Spot> spots;
    for (double dy : {-9.5, 9.5, -22.5, 22.5})
      for (double right = d.x1 - 6; right - w >= d.x0; right -= 24) spots.push_back({right, d.y0 + dy, Align::right});
    // Else just before where the roof begins (above the memory roof that meets it there).
    for (double dy : {-9.5, -22.5}) spots.push_back({d.x0 - 8, d.y0 + dy, Align::right});
    place_roof_label(d, color, spots, w);
    out.ceilings.push_back(d);
  }
  for (const auto& [d, color] : memory_roofs) {
    // Above-left of a point on the rising roof (right-aligned, ending just before it), or below-right of one: the box
    // then lies wholly on one side of its own line.
    const double w = estimate_text_width(d.label, kRoofFont) + 2;
    std::vector<Spot> spots;
    for (double f : {0.12, 0.25, 0.4, 0.55, 0.7, 0.85}) {
      const double px = d.x0 + f * (d.x1 - d.x0), py = d.y0 + f * (d.y1 - d.y0);
      spots.push_back({px - 4, py - 4 - kRoofBox / 2, Align::right});
      spots.push_back({px + 4, py + 4 + kRoofBox / 2, Align::left});
    }
    place_roof_label(d, color, spots, w);
    out.ceilings.push_back(d);
  }
  for (const auto& r : ridge_labels) {
    const double w = estimate_text_width(r.text, 9) + 2;
    const std::vector<Spot> spots = {{r.x + 6, r.y + 11, Align::left}, {r.x + 6, r.y - 11, Align::left},
                                     {r.x - 6, r.y + 11, Align::right}, {r.x - 6, r.y - 11, Align::right}};
    if (auto spot = place(placer, spots, w, 11)) s.texts.push_back({spot->x, spot->y, r.text, 9, th.muted, spot->align});
  }

  // Efficiency labels, the most efficient first: beside the point, else stacked beside it with a leader line.
  std::vector<std::size_t> order(shown.size());
  for (std::size_t j = 0; j < order.size(); ++j) order[j] = j;
  std::stable_sort(order.begin(), order.end(), [&](auto x, auto y) { return shown[x].efficiency > shown[y].efficiency; });
  constexpr double kPointFont = 10, kPointBox = 13;
  for (std::size_t j : order) {
    const RooflinePoint& p = shown[j];
    const DrawnPoint& d = out.points[j];
    if (!d.annotated) continue;
    std::string text = fixed3(p.efficiency * 100) + "% (" + ms_text(p.predicted_ms) + " / " + ms_text(p.measured_ms) + ")";
    const double w = estimate_text_width(text, kPointFont) + 2;
    std::vector<Spot> spots = {{d.x + 8, d.y, Align::left}, {d.x - 8, d.y, Align::right}};
    for (int k = 1; k <= 10; ++k)
      for (int sign : {1, -1}) {
        spots.push_back({d.x + 16, d.y + sign * k * kPointBox, Align::left});
        spots.push_back({d.x - 16, d.y + sign * k * kPointBox, Align::right});
      }
    auto spot = place(placer, spots, w, kPointBox);
    if (!spot) spot = place_near(placer, d.x, d.y, w, kPointBox, 160);
    if (!spot) {
      unplaced.push_back({d.color, text});
      continue;
    }
    if (std::abs(spot->y - d.y) > kPointBox / 2 || std::abs(spot->x - d.x) > 12)
      leader(s, d.x + (spot->x > d.x ? 1 : -1) * kPointSize / 2, d.y, *spot, d.color);
    s.texts.push_back({spot->x, spot->y, text, kPointFont, th.ink, spot->align});
  }

  // Legend: the colouring, labels that found no room on the plot, what the marks mean and what was left out; lines
  // that would run past the scene's bottom give way to a count.
  if (legend) {
    const double x = o.width - kMarginRight - kLegendWidth + 16, bottom = o.height - 8;
    const double text_w = kLegendWidth - 20;
    double y = kMarginTop;
    auto line = [&](const std::string& text, double size, Color color, bool bold = false, double indent = 0) {
      s.texts.push_back({x + indent, y + 5, elide_text(text, size, text_w - indent, bold), size, color, Align::left, bold});
    };
    line(coloring->heading, 12, th.ink, true);
    y += 20;
    const Color swatch_edge{th.rule.r, th.rule.g, th.rule.b, 0.8f};
    for (std::size_t k = 0; k < coloring->legend.size(); ++k) {
      if (y + 2 * 16 > bottom && k + 1 < coloring->legend.size()) {
        line("… " + std::to_string(coloring->legend.size() - k) + " more", 10, th.muted);
        y += 16;
        break;
      }
      s.rects.push_back({x, y, 10, 10, coloring->legend[k].first, swatch_edge, 0.6, -1});
      line(coloring->legend[k].second, 11, th.ink, false, 16);
      y += 16;
    }
    if (!coloring->note.empty() && y + 16 <= bottom) {
      line(coloring->note, 10, th.muted);
      y += 16;
    }
    if (!unplaced.empty() && y + 30 <= bottom) {
      y += 8;
      line("labels without room on the plot:", 10, th.muted);
      y += 14;
      for (std::size_t k = 0; k < unplaced.size(); ++k) {
        if (y + 2 * 14 > bottom && k + 1 < unplaced.size()) {
          line("… " + std::to_string(unplaced.size() - k) + " more (hover the points)", 10, th.muted);
          y += 14;
          break;
        }
        s.rects.push_back({x, y - 1, 8, 8, unplaced[k].first, swatch_edge, 0.6, -1});
        line(unplaced[k].second, 10, th.ink, false, 14);
        y += 14;
      }
    }
    y += 10;
    std::vector<std::string> key = {"label: % of the binding roof", "(predicted / measured time);",
                                    "stem: up to the roofline bound"};
    key.push_back(any_dram ? "hollow: measured DRAM bytes" : "ideal intensity only (DRAM");
    if (!any_dram) key.push_back("bytes not measured)");
    if (!out.notes.empty()) {
      key.push_back(std::to_string(out.notes.size()) + " run(s) not drawn (no flops; in the");
      key.push_back("JSON/CSV export)");
    }
    for (const auto& k : key) {
      if (y + 14 > bottom) break;
      line(k, 10, th.muted);
      y += 14;
    }
  } else if (!out.notes.empty()) {
    s.texts.push_back({kMarginLeft + 8, kMarginTop + 12,
                       elide_text(std::to_string(out.notes.size()) +
                                      " run(s) not drawn: no floating-point work (in the JSON/CSV export)",
                                  10, plot_w - 16),
                       10, th.muted, Align::left});
  }
  return out;
}

Result<RooflineScene> build_roofline_scene(const Ceilings& ceilings, const std::vector<nlohmann::json>& records,
                                           const RooflineOptions& options) {
  auto model = Roofline::from_ceilings(ceilings);
  if (!model) return model.status();
  RooflineSet set = roofline_points(*model, records, options.kernels);
  auto scene = build_roofline_scene(*model, set.points, options);
  if (!scene) return scene.status();
  scene->notes.insert(scene->notes.begin(), set.skipped.begin(), set.skipped.end());
  return scene;
}

}  // namespace tl::viz
