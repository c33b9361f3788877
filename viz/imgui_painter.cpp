// ImGui painter implementation: the same scene the cairo painter writes, drawn live with culling.
#include "viz/imgui_painter.hpp"

#include <algorithm>
#include <cmath>

namespace tl::viz {
namespace {

ImU32 to_imgui(const Color& c) { return ImGui::ColorConvertFloat4ToU32(ImVec4(c.r, c.g, c.b, c.a)); }

constexpr double kMinZoom = 0.02, kMaxZoom = 64;
constexpr float kMinReadableText = 5.0f;  // pixels

}  // namespace

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
                        ImVec2 mouse) {
  ImVec2 clip_max(origin.x + size.x, origin.y + size.y);
  draw->PushClipRect(origin, clip_max, true);
  draw->AddRectFilled(view.to_screen(origin, 0, 0), view.to_screen(origin, scene.width, scene.height),
                      to_imgui(scene.background));
  auto visible = [&](ImVec2 a, ImVec2 b) { return b.x >= origin.x && a.x <= clip_max.x && b.y >= origin.y && a.y <= clip_max.y; };

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
  ImFont* font = ImGui::GetFont();
  for (const auto& t : scene.texts) {
    float px = static_cast<float>(t.size * view.zoom);
    if (px < kMinReadableText || t.text.empty()) continue;
    const char* begin = t.text.c_str();
    const char* end = begin + t.text.size();
    ImVec2 extent = font->CalcTextSizeA(px, 1e9f, 0, begin, end);
    ImVec2 p = view.to_screen(origin, t.x, t.y);
    if (t.align == Align::center) p.x -= extent.x / 2;
    if (t.align == Align::right) p.x -= extent.x;
    p.y -= extent.y / 2;
    if (!visible(p, ImVec2(p.x + extent.x, p.y + extent.y))) continue;
    draw->AddText(font, px, p, to_imgui(t.color), begin, end);
  }

  std::int64_t hovered = -1;
  if (mouse.x >= origin.x && mouse.x < clip_max.x && mouse.y >= origin.y && mouse.y < clip_max.y) {
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
  return draw_scene(ImGui::GetWindowDrawList(), scene, view, origin, size, mouse);
}

}  // namespace tl::viz
