// ImGui painter implementation: the same scene the cairo painter writes, drawn live with culling.
#include "viz/imgui_painter.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "viz/text_check.hpp"

namespace tl::viz {
namespace {

ImU32 to_imgui(const Color& c) { return ImGui::ColorConvertFloat4ToU32(ImVec4(c.r, c.g, c.b, c.a)); }

constexpr double kMinZoom = 0.02, kMaxZoom = 64;
constexpr float kMinReadableText = 5.0f;  // pixels

ImFont*& bold_font() {
  static ImFont* f = nullptr;
  return f;
}

ImFont* font_for(bool bold) { return bold && bold_font() ? bold_font() : ImGui::GetFont(); }

struct TextAudit {
  bool on = false;
  std::vector<std::string> problems;
  std::vector<const Scene*> checked;  // this frame's scenes already checked (a scene drawn twice is checked once)
  int frame = -1;
};
TextAudit& audit() {
  static TextAudit a;
  return a;
}

void audit_scene(const Scene& scene, const char* name) {
  TextAudit& a = audit();
  if (a.frame != ImGui::GetFrameCount()) {
    a.frame = ImGui::GetFrameCount();
    a.checked.clear();
  }
  if (std::find(a.checked.begin(), a.checked.end(), &scene) != a.checked.end()) return;
  a.checked.push_back(&scene);
  const TextMeasure measure = [](const std::string& text, double size, bool bold) {
    return imgui_text_width(text, size, bold);
  };
  for (auto& p : check_text_layout(scene, measure)) a.problems.push_back(std::string(name) + ": " + p);
}

}  // namespace

void set_text_audit(bool on) { audit().on = on; }

std::vector<std::string> take_text_audit() {
  std::vector<std::string> out;
  out.swap(audit().problems);
  return out;
}

void set_bold_font(ImFont* font) { bold_font() = font; }

double imgui_text_width(const std::string& text, double size, bool bold) {
  const char* begin = text.c_str();
  return font_for(bold)->CalcTextSizeA(static_cast<float>(size), 1e9f, 0, begin, begin + text.size()).x;
}

void fit_view(View& view, const Scene& scene, ImVec2 size) {
  if (scene.width <= 0 || scene.height <= 0 || size.x <= 0 || size.y <= 0) return;
  view.zoom = std::clamp(std::min(size.x / scene.width, size.y / scene.height), kMinZoom, kMaxZoom);
  view.pan_x = (scene.width - size.x / view.zoom) / 2;
  view.pan_y = (scene.height - size.y / view.zoom) / 2;
  view.fitted = true;
}

void handle_pan_zoom(View& view, const Scene& scene, ImVec2 origin, ImVec2 size) {
  if (!ImGui::IsItemHovered()) return;
  ImGuiIO& io = ImGui::GetIO();
  if (io.MouseWheel != 0) {
    double sx, sy;
    view.to_scene(origin, io.MousePos, sx, sy);
    view.zoom = std::clamp(view.zoom * std::pow(1.2, io.MouseWheel), kMinZoom, kMaxZoom);
    // Keep the scene point under the cursor where it was.
    view.pan_x = sx - (io.MousePos.x - origin.x) / view.zoom;
    view.pan_y = sy - (io.MousePos.y - origin.y) / view.zoom;
  }
  if (ImGui::IsMouseDragging(ImGuiMouseButton_Left) || ImGui::IsMouseDragging(ImGuiMouseButton_Middle)) {
    view.pan_x -= io.MouseDelta.x / view.zoom;
    view.pan_y -= io.MouseDelta.y / view.zoom;
  }
  if (ImGui::IsMouseDoubleClicked(ImGuiMouseButton_Left)) fit_view(view, scene, size);
}

std::int64_t draw_scene(ImDrawList* draw, const Scene& scene, const View& view, ImVec2 origin, ImVec2 size,
                        ImVec2 mouse, const char* name) {
  if (audit().on) audit_scene(scene, name);
  draw->PushClipRect(origin, ImVec2(origin.x + size.x, origin.y + size.y), true);
  // What is visible: the canvas within its window's clip (a canvas may reach past a narrow window).
  const ImVec2 clip_min = draw->GetClipRectMin(), clip_max = draw->GetClipRectMax();
  draw->AddRectFilled(view.to_screen(origin, 0, 0), view.to_screen(origin, scene.width, scene.height),
                      to_imgui(scene.background));
  auto visible = [&](ImVec2 a, ImVec2 b) { return b.x >= clip_min.x && a.x <= clip_max.x && b.y >= clip_min.y && a.y <= clip_max.y; };

  for (const auto& r : scene.rects) {
    ImVec2 a = view.to_screen(origin, r.x, r.y), b = view.to_screen(origin, r.x + r.w, r.y + r.h);
    if (!visible(a, b)) continue;
    if (r.fill.a > 0) draw->AddRectFilled(a, b, to_imgui(r.fill));
    if (r.stroke.a > 0) draw->AddRect(a, b, to_imgui(r.stroke), 0, 0, static_cast<float>(r.stroke_width * view.zoom));
  }
  for (const auto& l : scene.lines) {
    ImVec2 a = view.to_screen(origin, l.x0, l.y0), b = view.to_screen(origin, l.x1, l.y1);
    if (!visible(ImVec2(std::min(a.x, b.x), std::min(a.y, b.y)), ImVec2(std::max(a.x, b.x), std::max(a.y, b.y)))) continue;
    draw->AddLine(a, b, to_imgui(l.color), std::max(1.0f, static_cast<float>(l.width * view.zoom)));
  }
  std::size_t too_small = 0;
  const Text* smallest = nullptr;
  for (const auto& t : scene.texts) {
    ImFont* font = font_for(t.bold);
    float px = static_cast<float>(t.size * view.zoom);
    if (t.text.empty()) continue;
    if (px < kMinReadableText) {
      ++too_small;
      if (!smallest || t.size < smallest->size) smallest = &t;
      continue;
    }
    const char* begin = t.text.c_str();
    const char* end = begin + t.text.size();
    ImVec2 extent = font->CalcTextSizeA(px, 1e9f, 0, begin, end);
    ImVec2 p = view.to_screen(origin, t.x, t.y);
    if (t.align == Align::center) p.x -= extent.x / 2;
    if (t.align == Align::right) p.x -= extent.x;
    p.y -= extent.y / 2;
    constexpr float kSlack = 0.5f;  // rounding: a text flush with the canvas edge is inside
    if (p.x < clip_min.x - kSlack || p.y < clip_min.y - kSlack || p.x + extent.x > clip_max.x + kSlack ||
        p.y + extent.y > clip_max.y + kSlack)
      continue;
    draw->AddText(font, px, p, to_imgui(t.color), begin, end);
  }

  if (audit().on && too_small > 0) {
    char line[200];
    std::snprintf(line, sizeof line, "%s: %zu texts too small to read, e.g. '%s' at %.1f px", name, too_small,
                  smallest->text.substr(0, 40).c_str(), smallest->size * view.zoom);
    audit().problems.push_back(line);
  }

  std::int64_t hovered = -1;
  if (mouse.x >= clip_min.x && mouse.x < clip_max.x && mouse.y >= clip_min.y && mouse.y < clip_max.y) {
    double sx, sy;
    view.to_scene(origin, mouse, sx, sy);
    hovered = scene.hit_test(sx, sy);
    if (hovered >= 0) {
      for (auto it = scene.rects.rbegin(); it != scene.rects.rend(); ++it) {
        if (it->id == hovered && it->contains(sx, sy)) {
          draw->AddRect(view.to_screen(origin, it->x, it->y), view.to_screen(origin, it->x + it->w, it->y + it->h),
                        IM_COL32(255, 40, 40, 255), 0, 0, 2.0f);
          break;
        }
      }
    }
  }
  draw->PopClipRect();
  return hovered;
}

std::int64_t scene_canvas(const char* id, const Scene& scene, View& view, ImVec2 size) {
  size.x = std::max(size.x, 50.0f);
  size.y = std::max(size.y, 50.0f);
  ImVec2 origin = ImGui::GetCursorScreenPos();
  if (!view.fitted) fit_view(view, scene, size);
  ImGui::InvisibleButton(id, size, ImGuiButtonFlags_MouseButtonLeft | ImGuiButtonFlags_MouseButtonMiddle);
  handle_pan_zoom(view, scene, origin, size);
  ImVec2 mouse = ImGui::IsItemHovered() ? ImGui::GetIO().MousePos : ImVec2(-1e9f, -1e9f);
  return draw_scene(ImGui::GetWindowDrawList(), scene, view, origin, size, mouse, id);
}

}  // namespace tl::viz
