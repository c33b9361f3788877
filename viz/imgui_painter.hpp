// ImGui painter: draws a Scene into an ImDrawList under a pan/zoom view and reports the id under the mouse.
// Only the desktop app links it (target tl_viz_imgui); the CLI stays free of ImGui and GL.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <imgui.h>

#include "viz/scene.hpp"

namespace tl::viz {

// Screen = origin + (scene - pan) * zoom.
struct View {
  double zoom = 1;
  double pan_x = 0, pan_y = 0;  // the scene point at the canvas' top-left corner
  bool fitted = false;          // set once fit_view has run (callers fit on first show)

  ImVec2 to_screen(ImVec2 origin, double x, double y) const {
    return {origin.x + static_cast<float>((x - pan_x) * zoom), origin.y + static_cast<float>((y - pan_y) * zoom)};
  }
  void to_scene(ImVec2 origin, ImVec2 p, double& x, double& y) const {
    x = pan_x + (p.x - origin.x) / zoom;
    y = pan_y + (p.y - origin.y) / zoom;
  }
};

// Zoom so the whole scene fits a canvas of `size`, centred.
void fit_view(View& view, const Scene& scene, ImVec2 size);

// Mouse wheel zooms about the cursor, left or middle drag pans, double-click fits; only while the canvas is
// hovered. Call after an InvisibleButton (or similar item) that covers the canvas.
void handle_pan_zoom(View& view, const Scene& scene, ImVec2 origin, ImVec2 size);

// Draws `scene` clipped to the canvas [origin, origin + size) and returns the id of the topmost rect under
// `mouse` (or -1). Cells outside the canvas are skipped; a text is drawn whole or not at all (never cut by the
// canvas edge while panning), and text too small to read is not drawn. `name` names the canvas in the text audit.
std::int64_t draw_scene(ImDrawList* draw, const Scene& scene, const View& view, ImVec2 origin, ImVec2 size,
                        ImVec2 mouse, const char* name = "plot");

// A ready-made canvas: an InvisibleButton of `size` at the cursor, pan/zoom, drawing, and the hovered id.
std::int64_t scene_canvas(const char* id, const Scene& scene, View& view, ImVec2 size);

// The text audit (the app's test mode): while on, every scene drawn is checked with check_text_layout measured in
// the current ImGui font, and the problems are kept, prefixed with the canvas name, until taken.
void set_text_audit(bool on);
std::vector<std::string> take_text_audit();

// The font bold scene texts (titles) are drawn in; null: the current font.
void set_bold_font(ImFont* font);

// The width of `text` at `size` in the font draw_scene uses for it (what the text audit measures with).
double imgui_text_width(const std::string& text, double size, bool bold = false);

}  // namespace tl::viz
