// The text check of a scene: every text inside the scene's bounds, no two texts overlapping (CI asserts it on the
// plots the app draws; the scene tests on every builder).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "viz/scene.hpp"

namespace tl::viz {

// Width of `text` at `size` (scene units); the painters pass their font's real measure.
using TextMeasure = std::function<double(const std::string& text, double size, bool bold)>;

// estimate_text_width: what builders place labels with.
TextMeasure estimated_text_measure();

// A text's box in scene units: its measured width from the anchor and alignment, its size tall, centred on y.
struct TextBox {
  double x0 = 0, y0 = 0, x1 = 0, y1 = 0;
  std::size_t text = 0;  // index into Scene::texts
};
TextBox text_box(const Text& t, const TextMeasure& measure);

// Whether the segment (x0, y0)-(x1, y1) passes through the inside of the box [bx0, bx1] x [by0, by1].
bool segment_crosses_box(double x0, double y0, double x1, double y1, double bx0, double by0, double bx1, double by1);

// Lines at least this wide are drawn marks (roofs, reference lines, frames) that no text may be struck through by;
// thinner ones (grid lines, cell borders) may run behind text.
inline constexpr double kStrikingLineWidth = 1.2;

// What is wrong with the texts of `scene`, one line each ("'83.3%' overlaps '71.4%'", "'83.3%' is struck through by
// a line", "'Roofline: …' runs past the scene's right edge by 40"); empty when nothing is. Boxes may touch or overlap
// by `tolerance`.
// At most `limit` lines, the last saying how many more there were.
std::vector<std::string> check_text_layout(const Scene& scene, const TextMeasure& measure, double tolerance = 0.5,
                                           std::size_t limit = 20);

}  // namespace tl::viz
