// A scene: rectangles, lines and text in a 2-D canvas, each with an id for hover; painters draw it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tl::viz {

struct Color {
  float r = 0, g = 0, b = 0, a = 1;

  static Color rgb8(int r, int g, int b, float a = 1) { return {r / 255.f, g / 255.f, b / 255.f, a}; }
  // Relative luminance (sRGB weights, no linearisation: good enough to pick black or white text).
  float luma() const { return 0.299f * r + 0.587f * g + 0.114f * b; }
  bool operator==(const Color&) const = default;
};

// Black or white, whichever reads better on `background`.
inline Color text_color_on(Color background) {
  return background.luma() > 0.55f ? Color{0.08f, 0.08f, 0.1f, 1} : Color{1, 1, 1, 1};
}

struct Rect {
  double x = 0, y = 0, w = 0, h = 0;
  Color fill;
  Color stroke{0, 0, 0, 0};  // alpha 0: no outline
  double stroke_width = 1;
  std::int64_t id = -1;      // >= 0: hoverable; the builder says what it indexes

  bool contains(double px, double py) const { return px >= x && px < x + w && py >= y && py < y + h; }
};

struct Line {
  double x0 = 0, y0 = 0, x1 = 0, y1 = 0;
  Color color;
  double width = 1;
};

enum class Align { left, center, right };

struct Text {
  double x = 0, y = 0;  // anchor; vertically centred
  std::string text;
  double size = 12;     // font size in scene units
  Color color;
  Align align = Align::left;
  bool bold = false;
};

// Painted in this order: rects, lines, texts (so grid lines sit on cells and labels on top of both).
struct Scene {
  double width = 0, height = 0;
  Color background{1, 1, 1, 1};
  std::vector<Rect> rects;
  std::vector<Line> lines;
  std::vector<Text> texts;

  // The id of the topmost rect with an id that contains (x, y), or -1.
  std::int64_t hit_test(double x, double y) const;
};

// Width of `text` at `size` in DejaVu Sans, estimated without a font engine (builders use it to decide
// whether a label fits; painters measure for real).
double estimate_text_width(const std::string& text, double size);

// `text` cut at a character boundary and ended with "…" so that its estimated width at `size` (bold ~10% wider) is at
// most `width`; `text` itself when it fits.
std::string elide_text(const std::string& text, double size, double width, bool bold = false);

// prefix followed by the number ("T" 12 -> "T12"); spares GCC 12's false -Wrestrict on "T" + std::to_string.
std::string tagged(const char* prefix, long long value);

}  // namespace tl::viz
