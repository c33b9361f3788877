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
  double base = 25.0 + std::fmod(warp * 137.508, 360.0);  // golden angle: successive warps far apart
  double hue = base + ((lane % 8) - 3.5) * 5.0;
  static constexpr double kLightness[4] = {0.88, 0.78, 0.68, 0.57};
  return oklch(kLightness[lane / 8], 0.12, hue);
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
