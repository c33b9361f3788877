// Sweep heat map scene: two config parameters as the axes, a metric as the colour of each cell, the best marked.
#pragma once

// The entry point for the CLI, the GUI and Lua (tl.plot.heatmap) is build_heatmap_scene(records, options) with
// records as JSON objects: result rows of the store (`tilelab results --json`, tl.results.query), points of a sweep
// (tl.sweep) or RunRecords. Each needs "config" (parameter -> value); the metric is read from the object itself
// ("tflops", "median_ms", ...; RunRecords' "time_ms.median" and "efficiency.value" too). A cell that several records
// fall into (the other parameters vary) shows the best of them; a cell with no passed run shows why (skipped,
// fault, ...) in grey. Resource metrics (registers, shared_static_bytes, spill_*_bytes, from "resources") count for
// every compiled point, run or not, so a sweep without a GPU can still be drawn. Rect ids index HeatmapScene::cells.

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/core/status.hpp"
#include "viz/palette.hpp"
#include "viz/scene.hpp"

namespace tl::viz {

struct HeatmapOptions {
  std::string x, y;                // config parameters (columns, rows)
  std::string metric = "tflops";   // higher is better for tflops, gbps, efficiency; lower for the rest
  std::string title;               // empty: "<kernel>: <metric> over <y> x <x>"
  // Only the records of this device ("device" field); empty: the records must come from one device (times of two
  // GPUs in one cell would compare unlike things), records without a device (compile-only points) always count.
  std::string device;
  double cell_width = 84, cell_height = 44;
  Theme theme = light_theme();
};

struct HeatmapCell {
  std::string x, y;
  std::optional<double> value;  // best passed value; empty: no passed run
  std::string status;           // "passed", or why there is no value ("skipped", "fault", "no run")
  std::size_t records = 0;      // how many records fell into the cell
  double left = 0, top = 0;     // where it was drawn
};

struct HeatmapScene {
  Scene scene;
  std::vector<std::string> x_values, y_values;  // numeric values in numeric order, others as first seen
  std::vector<HeatmapCell> cells;               // row-major: y_values.size() rows of x_values.size()
  std::optional<std::size_t> best;              // index into cells
  double min = 0, max = 0;                      // of the values shown
  bool higher_is_better = true;
};

// Errors (invalid_argument) when x or y is missing or no record has it in its config (the message lists the
// parameters they have), when no record has the metric at all, or when the records come from several devices and
// options.device picks none (the message lists them).
Result<HeatmapScene> build_heatmap_scene(const std::vector<nlohmann::json>& records, const HeatmapOptions& options);

}  // namespace tl::viz
