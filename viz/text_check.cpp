// Text check: boxes from a measure, bounds per text, overlaps by a sweep over the boxes sorted by their left edge.
#include "viz/text_check.hpp"

#include <algorithm>
#include <cstdio>

namespace tl::viz {
namespace {

std::string quoted(const std::string& text) {
  constexpr std::size_t kShown = 40;
  std::size_t cut = text.size();
  if (cut > kShown) {
    cut = kShown;
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;  // not inside a UTF-8 sequence
  }
  // Appended piecewise: GCC 12 warns falsely (-Wrestrict) on "'" + std::string.
  std::string s(1, '\'');
  s.append(text, 0, cut);
  if (cut < text.size()) s += "…";
  s += '\'';
  return s;
}

std::string units(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

}  // namespace

// Liang-Barsky: clip the segment's parameter range against each side of the box; something left means it crosses.
bool segment_crosses_box(double x0, double y0, double x1, double y1, double bx0, double by0, double bx1, double by1) {
  if (bx1 <= bx0 || by1 <= by0) return false;
  double t0 = 0, t1 = 1;
  const double dx = x1 - x0, dy = y1 - y0;
  const double p[4] = {-dx, dx, -dy, dy}, q[4] = {x0 - bx0, bx1 - x0, y0 - by0, by1 - y0};
  for (int i = 0; i < 4; ++i) {
    if (p[i] == 0) {
      if (q[i] <= 0) return false;
      continue;
    }
    const double r = q[i] / p[i];
    if (p[i] < 0) t0 = std::max(t0, r);
    else t1 = std::min(t1, r);
    if (t0 >= t1) return false;
  }
  return true;
}

TextMeasure estimated_text_measure() {
  return [](const std::string& text, double size, bool bold) {
    return estimate_text_width(text, size) * (bold ? 1.1 : 1.0);
  };
}

TextBox text_box(const Text& t, const TextMeasure& measure) {
  const double w = measure(t.text, t.size, t.bold);
  TextBox b;
  b.x0 = t.align == Align::left ? t.x : t.align == Align::center ? t.x - w / 2 : t.x - w;
  b.x1 = b.x0 + w;
  b.y0 = t.y - t.size / 2;
  b.y1 = t.y + t.size / 2;
  return b;
}

std::vector<std::string> check_text_layout(const Scene& scene, const TextMeasure& measure, double tolerance,
                                           std::size_t limit) {
  std::vector<std::string> out;
  std::size_t more = 0;
  auto report = [&](std::string line) {
    if (out.size() < limit) out.push_back(std::move(line));
    else ++more;
  };
  std::vector<TextBox> boxes;
  boxes.reserve(scene.texts.size());
  for (std::size_t i = 0; i < scene.texts.size(); ++i) {
    if (scene.texts[i].text.empty()) continue;
    TextBox b = text_box(scene.texts[i], measure);
    b.text = i;
    const std::string name = quoted(scene.texts[i].text);
    if (b.x0 < -tolerance) report(name + " runs past the scene's left edge by " + units(-b.x0));
    if (b.x1 > scene.width + tolerance) report(name + " runs past the scene's right edge by " + units(b.x1 - scene.width));
    if (b.y0 < -tolerance) report(name + " runs past the scene's top edge by " + units(-b.y0));
    if (b.y1 > scene.height + tolerance) report(name + " runs past the scene's bottom edge by " + units(b.y1 - scene.height));
    for (const Line& l : scene.lines) {
      if (l.width < kStrikingLineWidth || l.color.a <= 0) continue;
      const double inset = tolerance - l.width / 2;  // a thick line touching the box strikes it
      if (segment_crosses_box(l.x0, l.y0, l.x1, l.y1, b.x0 + inset, b.y0 + inset, b.x1 - inset, b.y1 - inset)) {
        report(name + " is struck through by a line from (" + units(l.x0) + ", " + units(l.y0) + ") to (" +
               units(l.x1) + ", " + units(l.y1) + ")");
        break;
      }
    }
    boxes.push_back(b);
  }
  std::sort(boxes.begin(), boxes.end(), [](const TextBox& a, const TextBox& b) { return a.x0 < b.x0; });
  // Sweep left to right: `open` holds the boxes whose right edge is not yet behind the current left edge.
  std::vector<const TextBox*> open;
  for (const TextBox& b : boxes) {
    std::erase_if(open, [&](const TextBox* o) { return o->x1 - tolerance <= b.x0; });
    for (const TextBox* o : open) {
      const double h = std::min(o->y1, b.y1) - std::max(o->y0, b.y0);
      if (h > tolerance)
        report(quoted(scene.texts[o->text].text) + " overlaps " + quoted(scene.texts[b.text].text) + " (at " +
               units(b.x0) + ", " + units(b.y0) + ")");
    }
    open.push_back(&b);
  }
  if (more > 0) out.push_back("… and " + std::to_string(more) + " more");
  return out;
}

}  // namespace tl::viz
