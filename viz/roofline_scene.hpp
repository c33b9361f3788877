// Roofline scene builder: log-log axes, labelled ceilings, ridge points, and every run as a point (sweeps as clouds).
#pragma once

// The entry point for the CLI, the GUI and Lua (tl.plot.roofline) is
//   build_roofline_scene(ceilings, records, options)
// with records as RunRecord JSON objects (runtime/results/roofline.hpp reads them); the other overload takes a model and
// points that are already built. The scene's rect ids index RooflineScene::hover, which says what is under the
// mouse: a run (kernel, config, problem, numbers) or a ridge point.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/core/status.hpp"
#include "runtime/results/roofline.hpp"
#include "viz/palette.hpp"
#include "viz/scene.hpp"

namespace tl::viz {

struct RooflineOptions {
  std::string title;        // empty: "Roofline: <device>"
  std::string color_by;     // a config (or problem) parameter colouring the points; empty: colour by kernel
  std::vector<std::string> kernels;  // records entry point: only these kernels (all when empty)
  double width = 960, height = 620;  // the whole scene, legend included
  // Efficiency labels and predicted-bound markers: on every point when there are at most this many, else on
  // the most efficient point of each kernel (a sweep's cloud stays readable).
  int max_annotated = 12;
  Theme theme = light_theme();
};

// Log-log mapping from data (intensity in flop/byte, rate in flop/s) to the plot area of the scene.
struct LogAxes {
  double x_min = 0.1, x_max = 1000, y_min = 1e9, y_max = 1e15;  // data range
  double left = 0, top = 0, width = 1, height = 1;               // plot area in scene units

  double x_of(double intensity) const;  // left at x_min, left + width at x_max
  double y_of(double flops) const;      // top + height at y_min, top at y_max
  double intensity_at(double x) const;  // inverses
  double flops_at(double y) const;
};

// What was drawn where, for tests and for painters that want to place more (the GUI's hover marker).
struct DrawnCeiling {
  std::string name, label;
  double x0 = 0, y0 = 0, x1 = 0, y1 = 0;  // the segment in scene units, clipped to the plot area
};
struct DrawnPoint {
  std::size_t point = 0;  // index into the points
  double x = 0, y = 0;    // centre of the ideal point
  double actual_x = -1;   // centre of the measured-bytes point, -1 when there is none
  double roof_y = 0;      // the predicted bound at the same intensity (the roof above the point)
  bool annotated = false;
  Color color;
};

struct RooflineScene {
  Scene scene;
  LogAxes axes;
  std::vector<DrawnCeiling> ceilings;
  std::vector<DrawnPoint> points;
  std::vector<std::string> hover;  // rect id -> what it is
  std::vector<std::string> notes;  // runs not drawn and why; also shown in the scene
};

// Errors: invalid_argument when `color_by` names a parameter no point has (the message lists those they have).
Result<RooflineScene> build_roofline_scene(const Roofline& model, const std::vector<RooflinePoint>& points,
                                           const RooflineOptions& options = {});
// Ceilings + run records (RunRecord JSON objects) + options: records that cannot be drawn become notes.
// Errors also when the ceilings lack HBM or FP32 (Roofline::from_ceilings).
Result<RooflineScene> build_roofline_scene(const Ceilings& ceilings, const std::vector<nlohmann::json>& records,
                                           const RooflineOptions& options = {});

// "3.35 TB/s", "663 TFLOP/s": three significant digits with an SI prefix.
std::string si_text(double value, const std::string& unit);

}  // namespace tl::viz
