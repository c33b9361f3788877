// A scene: rectangles, lines and text in a 2-D canvas, each with an id for hover; painters draw it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tl::viz {

struct Color {
  float r = 0, g = 0, b = 0, a = 1;
};

struct Rect {
  double x = 0, y = 0, w = 0, h = 0;
  Color fill;
  Color stroke{0, 0, 0, 0};
  std::int64_t id = -1;
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
  double size = 12;
  Color color;
  Align align = Align::left;
};

struct Scene {
  double width = 0, height = 0;
  Color background{1, 1, 1, 1};
  std::vector<Rect> rects;
  std::vector<Line> lines;
  std::vector<Text> texts;
};

}  // namespace tl::viz
