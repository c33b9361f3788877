// Heat map scene: cells per (x, y) config pair coloured by the metric (best = brightest), labels, colour bar.
#include "viz/heatmap_scene.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>

#include "viz/palette.hpp"

namespace tl::viz {
namespace {

const Color kBest{0.85f, 0.10f, 0.10f, 1};

constexpr double kMarginLeft = 96, kMarginTop = 56, kMarginBottom = 60, kMarginRight = 24;
constexpr double kBarWidth = 18, kBarGap = 28, kBarLabels = 70;

std::string text_of(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_integer()) return std::to_string(v.get<long long>());
  return v.dump();
}

bool is_number(const std::string& s) {
  if (s.empty()) return false;
  char* end = nullptr;
  std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size();
}

std::string fixed3(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

std::optional<double> metric_of(const nlohmann::json& r, const std::string& metric) {
  auto number = [](const nlohmann::json& v) -> std::optional<double> {
    if (v.is_number()) return v.get<double>();
    return std::nullopt;
  };
  if (r.contains(metric)) {
    const auto& v = r[metric];
    if (v.is_object() && v.contains("value")) return number(v["value"]);  // RunRecord "efficiency"
    return number(v);
  }
  if (metric.size() > 3 && metric.ends_with("_ms") && r.contains("time_ms") && r["time_ms"].is_object())
    return number(r["time_ms"].value(metric.substr(0, metric.size() - 3), nlohmann::json()));
  if (r.contains("resources") && r["resources"].is_object() && r["resources"].contains(metric)) {
    auto v = number(r["resources"][metric]);
    if (v && *v >= 0) return v;  // -1: not reported
  }
  return std::nullopt;
}

// ptxas' numbers: known once a point compiled, whether or not it ran.
bool is_resource_metric(const std::string& m) {
  return m == "registers" || m == "smem" || m == "shared_static_bytes" || m == "spill_store_bytes" ||
         m == "spill_load_bytes" || m == "stack_frame_bytes";
}

std::string status_of(const nlohmann::json& r) {
  if (r.contains("status") && r["status"].is_string()) return r["status"].get<std::string>();
  if (r.contains("passed") && r["passed"].is_boolean()) return r["passed"].get<bool>() ? "passed" : "failed";
  return "passed";
}

// Numeric values in numeric order, anything else in order of appearance.
std::vector<std::string> axis_values(const std::vector<std::string>& seen) {
  std::vector<std::string> out;
  for (const auto& v : seen)
    if (std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
  if (std::all_of(out.begin(), out.end(), is_number))
    std::stable_sort(out.begin(), out.end(),
                     [](const std::string& a, const std::string& b) { return std::strtod(a.c_str(), nullptr) < std::strtod(b.c_str(), nullptr); });
  return out;
}

}  // namespace

Result<HeatmapScene> build_heatmap_scene(const std::vector<nlohmann::json>& all, const HeatmapOptions& o) {
  if (o.x.empty() || o.y.empty()) return make_error(ErrorCode::invalid_argument, "a heat map needs x and y (config parameters)");
  auto device_of = [](const nlohmann::json& r) {
    return r.is_object() && r.contains("device") && r["device"].is_string() ? r["device"].get<std::string>() : std::string();
  };
  std::set<std::string> devices;
  std::vector<nlohmann::json> records;
  for (const auto& r : all) {
    const std::string d = device_of(r);
    if (!o.device.empty() && !d.empty() && d != o.device) continue;
    if (!d.empty()) devices.insert(d);
    records.push_back(r);
  }
  if (devices.size() > 1) {
    std::string list;
    for (const auto& d : devices) list += (list.empty() ? "" : "; ") + d;
    return make_error(ErrorCode::invalid_argument, "the records come from " + std::to_string(devices.size()) +
                                                       " devices (" + list + "): pick one with device=NAME");
  }
  std::set<std::string> params;
  std::vector<std::string> xs, ys;
  std::string kernel;
  bool any_metric = false;
  for (const auto& r : records) {
    if (!r.is_object() || !r.contains("config") || !r["config"].is_object()) continue;
    const auto& c = r["config"];
    for (const auto& [k, v] : c.items()) params.insert(k);
    if (!c.contains(o.x) || !c.contains(o.y)) continue;
    xs.push_back(text_of(c[o.x]));
    ys.push_back(text_of(c[o.y]));
    if (kernel.empty() && r.contains("kernel") && r["kernel"].is_string()) kernel = r["kernel"].get<std::string>();
    any_metric = any_metric || metric_of(r, o.metric).has_value();
  }
  for (const auto* axis : {&o.x, &o.y})
    if (!params.count(*axis)) {
      std::string list;
      for (const auto& p : params) list += (list.empty() ? "" : ", ") + p;
      return make_error(ErrorCode::invalid_argument, "no record has the config parameter '" + *axis + "'" +
                                                         (list.empty() ? std::string(" (no record has a config)")
                                                                       : " (they have: " + list + ")"));
    }
  if (!any_metric)
    return make_error(ErrorCode::invalid_argument, "no record has the metric '" + o.metric +
                                                       "' (tflops, gbps, efficiency, median_ms, min_ms, max_ms, ...)");

  HeatmapScene h;
  h.higher_is_better = o.metric == "tflops" || o.metric == "gbps" || o.metric == "efficiency";
  h.x_values = axis_values(xs);
  h.y_values = axis_values(ys);
  const std::size_t nx = h.x_values.size(), ny = h.y_values.size();
  h.cells.resize(nx * ny);
  auto index_of = [](const std::vector<std::string>& v, const std::string& s) {
    return static_cast<std::size_t>(std::find(v.begin(), v.end(), s) - v.begin());
  };
  for (std::size_t j = 0; j < ny; ++j)
    for (std::size_t i = 0; i < nx; ++i) {
      HeatmapCell& c = h.cells[j * nx + i];
      c.x = h.x_values[i];
      c.y = h.y_values[j];
      c.status = "no run";
    }
  auto better = [&](double a, double b) { return h.higher_is_better ? a > b : a < b; };
  for (const auto& r : records) {
    if (!r.is_object() || !r.contains("config") || !r["config"].is_object()) continue;
    const auto& cfg = r["config"];
    if (!cfg.contains(o.x) || !cfg.contains(o.y)) continue;
    HeatmapCell& c = h.cells[index_of(h.y_values, text_of(cfg[o.y])) * nx + index_of(h.x_values, text_of(cfg[o.x]))];
    ++c.records;
    const std::string st = status_of(r);
    auto v = metric_of(r, o.metric);
    const bool counts = st == "passed" || (is_resource_metric(o.metric) && (st == "failed" || st == "not_run"));
    if (counts && v && std::isfinite(*v)) {
      if (!c.value || better(*v, *c.value)) c.value = v;
      c.status = st;
    } else if (!c.value && c.status == "no run") {
      c.status = st;
    }
  }
  bool first = true;
  for (std::size_t k = 0; k < h.cells.size(); ++k) {
    const auto& v = h.cells[k].value;
    if (!v) continue;
    if (first) h.min = h.max = *v;
    h.min = std::min(h.min, *v);
    h.max = std::max(h.max, *v);
    if (first || better(*v, *h.cells[*h.best].value)) h.best = k;
    first = false;
  }

  // Layout: title, rows of cells with the y values on the left, x values below, the colour bar on the right.
  Scene& s = h.scene;
  const Theme& th = o.theme;
  s.background = th.background;
  const double grid_w = o.cell_width * double(nx), grid_h = o.cell_height * double(ny);
  s.width = kMarginLeft + grid_w + kBarGap + kBarWidth + kBarLabels + kMarginRight;
  s.height = kMarginTop + grid_h + kMarginBottom;
  const std::string title = !o.title.empty() ? o.title
                                             : (kernel.empty() ? std::string() : kernel + ": ") + o.metric + " over " +
                                                   o.y + " x " + o.x + (h.higher_is_better ? " (higher is better)" : " (lower is better)");
  s.texts.push_back({kMarginLeft, 24, title, 15, th.ink, Align::left, true});
  // A long title on a small grid: widen the scene to hold it (about 0.6 em per character in bold sans), so the
  // painters' backgrounds and fit-to-view include it.
  s.width = std::max(s.width, kMarginLeft + 0.6 * 15 * double(title.size()) + kMarginRight);
  auto t_of = [&](double v) {
    if (h.max <= h.min) return 1.0;
    double t = (v - h.min) / (h.max - h.min);
    return h.higher_is_better ? t : 1 - t;
  };
  const bool marked = h.best && !is_resource_metric(o.metric);  // "best" registers mean little
  for (std::size_t k = 0; k < h.cells.size(); ++k) {
    HeatmapCell& c = h.cells[k];
    const std::size_t i = k % nx, j = k / nx;
    c.left = kMarginLeft + o.cell_width * double(i);
    c.top = kMarginTop + o.cell_height * double(ny - 1 - j);  // the smallest y at the bottom, like a plot
    Rect r{c.left, c.top, o.cell_width, o.cell_height, c.value ? sequential(t_of(*c.value)) : th.unset,
           th.background, 1, static_cast<std::int64_t>(k)};
    s.rects.push_back(r);
    const std::string label = c.value ? fixed3(*c.value) : c.status;
    const double size = std::min(13.0, o.cell_height * 0.32);
    s.texts.push_back({c.left + o.cell_width / 2, c.top + o.cell_height / 2, label, c.value ? size : size * 0.85,
                       c.value ? text_color_on(r.fill) : th.muted, Align::center, marked && *h.best == k});
  }
  if (marked) {
    const HeatmapCell& b = h.cells[*h.best];
    s.rects.push_back({b.left + 1.5, b.top + 1.5, o.cell_width - 3, o.cell_height - 3, Color{0, 0, 0, 0}, kBest, 3, -1});
  }
  for (std::size_t i = 0; i < nx; ++i)
    s.texts.push_back({kMarginLeft + o.cell_width * (double(i) + 0.5), kMarginTop + grid_h + 14, h.x_values[i], 12, th.ink,
                       Align::center, false});
  for (std::size_t j = 0; j < ny; ++j)
    s.texts.push_back({kMarginLeft - 8, kMarginTop + o.cell_height * (double(ny - 1 - j) + 0.5), h.y_values[j], 12, th.ink,
                       Align::right, false});
  s.texts.push_back({kMarginLeft + grid_w / 2, kMarginTop + grid_h + 38, o.x, 13, th.ink, Align::center, true});
  s.texts.push_back({12, kMarginTop - 14, o.y, 13, th.ink, Align::left, true});

  // Colour bar: the ramp from worst (bottom) to best (top), labelled with the values at both ends.
  const double bx = kMarginLeft + grid_w + kBarGap, steps = 32;
  const double bar_h = std::max(grid_h, 80.0);
  for (int k = 0; k < steps; ++k) {
    const double t = 1 - (k + 0.5) / steps;
    s.rects.push_back({bx, kMarginTop + bar_h * k / steps, kBarWidth, bar_h / steps + 0.5, sequential(t), Color{0, 0, 0, 0}, 1, -1});
  }
  if (h.best) {
    const double top_v = h.higher_is_better ? h.max : h.min, bottom_v = h.higher_is_better ? h.min : h.max;
    s.texts.push_back({bx + kBarWidth + 6, kMarginTop + 6, fixed3(top_v), 11, th.ink, Align::left, false});
    s.texts.push_back({bx + kBarWidth + 6, kMarginTop + bar_h - 6, fixed3(bottom_v), 11, th.ink, Align::left, false});
  }
  s.texts.push_back({bx, kMarginTop - 14, o.metric, 11, th.muted, Align::left, false});
  s.height = std::max(s.height, kMarginTop + bar_h + kMarginBottom);
  return h;
}

}  // namespace tl::viz
