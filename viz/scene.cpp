// Scene helpers shared by the builders and painters: hit-testing and text width estimates.
#include "viz/scene.hpp"

namespace tl::viz {

std::int64_t Scene::hit_test(double x, double y) const {
  // Later rects paint over earlier ones, so the topmost is the last that contains the point.
  for (auto it = rects.rbegin(); it != rects.rend(); ++it) {
    if (it->id >= 0 && it->contains(x, y)) return it->id;
  }
  return -1;
}

double estimate_text_width(const std::string& text, double size) {
  // DejaVu Sans advances in em: digits 0.636, most capitals ~0.7, lower case ~0.6, punctuation ~0.35; UTF-8 counted
  // per character, not per byte.
  double em = 0;
  for (unsigned char ch : text) {
    if (ch >= '0' && ch <= '9') {
      em += 0.636;
    } else if (ch >= 'A' && ch <= 'Z') {
      em += 0.70;
    } else if (ch >= 'a' && ch <= 'z') {
      em += 0.60;
    } else if (ch == ' ') {
      em += 0.32;
    } else if (ch == '<' || ch == '>' || ch == '=' || ch == '+') {
      em += 0.84;
    } else if ((ch & 0xC0) == 0x80) {
      // a UTF-8 continuation byte: its character was counted at the lead byte
    } else if (ch >= 0xE0) {
      em += 0.84;  // U+0800 and up: arrows, "…", maths; wide
    } else if (ch >= 0xC0) {
      em += 0.60;  // Latin-1 and Greek letters (µ, ×, α)
    } else {
      em += 0.40;
    }
  }
  return em * size;
}

std::string elide_text(const std::string& text, double size, double width, bool bold) {
  const double k = bold ? 1.1 : 1.0;
  if (estimate_text_width(text, size) * k <= width) return text;
  std::string out;
  const double room = width - estimate_text_width("…", size) * k;
  for (std::size_t i = 0; i < text.size();) {
    std::size_t next = i + 1;
    while (next < text.size() && (static_cast<unsigned char>(text[next]) & 0xC0) == 0x80) ++next;
    if (estimate_text_width(text.substr(0, next), size) * k > room) break;
    out = text.substr(0, next);
    i = next;
  }
  return out + "…";
}

std::string tagged(const char* prefix, long long value) {
  std::string s = prefix;
  s += std::to_string(value);
  return s;
}

}  // namespace tl::viz
