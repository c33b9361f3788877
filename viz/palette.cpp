// Palette implementation: colours are designed in OKLCH so that equal steps look equally different.
#include "viz/palette.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace tl::viz {
namespace {

float srgb_gamma(double linear) {
  linear = std::clamp(linear, 0.0, 1.0);
  double v = linear <= 0.0031308 ? 12.92 * linear : 1.055 * std::pow(linear, 1 / 2.4) - 0.055;
  return static_cast<float>(v);
}

}  // namespace

const Theme& light_theme() {
  static const Theme t{false,
                       {1, 1, 1, 1},
                       {0.12f, 0.12f, 0.14f, 1},
                       {0.40f, 0.40f, 0.44f, 1},
                       {0.80f, 0.80f, 0.83f, 1},
                       {0.92f, 0.92f, 0.94f, 1},
                       {0.955f, 0.955f, 0.965f, 1},
                       {0.90f, 0.90f, 0.91f, 1},
                       {0.15f, 0.15f, 0.18f, 1},
                       {0.80f, 0.33f, 0.0f, 1},
                       {1.0f, 0.93f, 0.85f, 1}};
  return t;
}

// Matches the app's dark ImGui style (window background ~0.06-0.10): the plot is a panel of the app, not a page.
const Theme& dark_theme() {
  static const Theme t{true,
                       {0.09f, 0.10f, 0.12f, 1},
                       {0.90f, 0.90f, 0.92f, 1},
                       {0.62f, 0.63f, 0.68f, 1},
                       {0.30f, 0.31f, 0.35f, 1},
                       {0.18f, 0.19f, 0.22f, 1},
                       {0.13f, 0.14f, 0.17f, 1},
                       {0.24f, 0.25f, 0.28f, 1},
                       {0.02f, 0.02f, 0.03f, 1},
                       {1.0f, 0.62f, 0.30f, 1},
                       {0.30f, 0.17f, 0.06f, 1}};
  return t;
}

Color oklch(double lightness, double chroma, double hue_degrees, float alpha) {
  // OKLab -> linear sRGB with the matrices published with OKLab (B. Ottosson, 2020).
  double h = hue_degrees * std::numbers::pi / 180.0;
  double a = chroma * std::cos(h), b = chroma * std::sin(h);
  double l_ = lightness + 0.3963377774 * a + 0.2158037573 * b;
  double m_ = lightness - 0.1055613458 * a - 0.0638541728 * b;
  double s_ = lightness - 0.0894841775 * a - 1.2914855480 * b;
  double l = l_ * l_ * l_, m = m_ * m_ * m_, s = s_ * s_ * s_;
  double r = 4.0767416621 * l - 3.3077115913 * m + 0.2309699292 * s;
  double g = -1.2684380046 * l + 2.6097574011 * m - 0.3413193965 * s;
  double bl = -0.0041960863 * l - 0.7034186147 * m + 1.7076147010 * s;
  return {srgb_gamma(r), srgb_gamma(g), srgb_gamma(bl), alpha};
}

Color categorical(int index) {
  int i = ((index % 32) + 32) % 32;
  double hue = 25.0 + ((i * 5) % 16) * 22.5;
  bool light = ((i / 16) + i) % 2 == 0;
  return light ? oklch(0.82, 0.11, hue) : oklch(0.62, 0.15, hue);
}

Color warp_family(int thread) {
  int t = std::max(thread, 0);
  int warp = t / 32, lane = t % 32;
  // Lanes keep categorical()'s hues and light/dark alternation; warps turn them by a fraction of its 22.5-degree
  // hue step (never a whole step, which would make one warp's lane another warp's neighbour colour).
  double hue = 25.0 + ((lane * 5) % 16) * 22.5 + (warp % 4) * 5.6;
  bool light = ((lane / 16) + lane) % 2 == 0;
  double chroma_shift = (warp / 4) % 2 ? -0.03 : 0.0;
  return light ? oklch(0.82, 0.11 + chroma_shift, hue) : oklch(0.62, 0.15 + chroma_shift, hue);
}

Color sequential(double t) {
  t = std::clamp(t, 0.0, 1.0);
  return oklch(0.30 + 0.62 * t, 0.10 + 0.06 * t, 275.0 - 170.0 * t);
}

Color conflict_color(int degree) {
  if (degree <= 0) return {0.93f, 0.93f, 0.94f, 1};
  if (degree == 1) return oklch(0.84, 0.10, 145);
  double t = std::clamp(std::log2(static_cast<double>(degree)) / 5.0, 0.0, 1.0);  // 2-way .. 32-way
  return oklch(0.88 - 0.30 * t, 0.13 + 0.07 * t, 95.0 - 70.0 * t);
}

}  // namespace tl::viz
