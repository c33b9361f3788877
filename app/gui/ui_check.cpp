// Drawn-text check: walks the windows drawn this frame and their draw commands' triangles, telling glyphs (textured
// with a glyph's UV corner) from shapes (the white pixel, line textures).
#include "app/gui/ui_check.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <set>
#include <unordered_set>

#include <imgui.h>
#include <imgui_internal.h>

namespace tl::gui {
namespace {

std::uint64_t uv_key(ImVec2 uv) {
  std::uint32_t u = 0, v = 0;
  std::memcpy(&u, &uv.x, 4);
  std::memcpy(&v, &uv.y, 4);
  return (std::uint64_t{u} << 32) | v;
}

}  // namespace

const unsigned short* glyph_ranges() {
  static const ImWchar kRanges[] = {
      0x0020, 0x00FF,  // Basic Latin, Latin-1 (µ · × ° ²)
      0x0100, 0x017F,  // Latin Extended-A
      0x0370, 0x03FF,  // Greek (α μ σ Δ)
      0x2000, 0x206F,  // General Punctuation (– — ‘ ’ “ ” • … ‰)
      0x2070, 0x209F,  // superscripts and subscripts
      0x2190, 0x21FF,  // arrows (→ ← ↔ ⇒)
      0x2200, 0x22FF,  // mathematical operators (∘ ≤ ≥ ≈ ∞ −)
      0x2500, 0x257F,  // box drawing
      0x25A0, 0x25FF,  // geometric shapes (■ ▲ ●)
      0x2713, 0x2717,  // check and cross marks
      0xFFFD, 0xFFFD,  // the replacement character: what a missing glyph draws as
      0,
  };
  return kRanges;
}

// Windows whose text is cut by design: a text editor shows long lines up to its edge and scrolls with the cursor.
bool cut_by_design(const ImGuiWindow& w) { return std::strstr(w.Name, "##luaeditor") != nullptr; }

std::vector<std::string> check_drawn_text(std::size_t limit) {
  std::vector<std::string> out;
  ImGuiContext& g = *ImGui::GetCurrentContext();
  ImFont* font = ImGui::GetFont();
  std::unordered_set<std::uint64_t> glyph_corners;
  for (const ImFontGlyph& gl : font->Glyphs) glyph_corners.insert(uv_key(ImVec2(gl.U0, gl.V0)));
  const ImFontGlyph* fallback = font->FallbackGlyph;
  const bool fallback_is_fffd = font->FallbackChar == 0xFFFD;
  const std::uint64_t fallback_key = fallback ? uv_key(ImVec2(fallback->U0, fallback->V0)) : 0;
  std::set<std::string> seen;  // one line per window, edge and text row
  auto report = [&](std::string line) {
    if (out.size() < limit && seen.insert(line).second) out.push_back(std::move(line));
  };
  for (ImGuiWindow* w : g.Windows) {
    if (!w->Active || w->Hidden || !w->DrawList || cut_by_design(*w)) continue;
    const ImDrawList& dl = *w->DrawList;
    // Text past the edge is reachable only through a scrollbar (ScrollMax alone grows with any overflow).
    const bool scrolls_x = w->ScrollbarX, scrolls_y = w->ScrollbarY;
    for (const ImDrawCmd& cmd : dl.CmdBuffer) {
      if (cmd.UserCallback || cmd.ElemCount == 0) continue;
      const ImVec4 clip = cmd.ClipRect;
      for (unsigned i = 0; i + 2 < cmd.ElemCount; i += 3) {
        const ImDrawVert* v[3];
        bool glyph = false, missing = false;
        for (int k = 0; k < 3; ++k) {
          v[k] = &dl.VtxBuffer[static_cast<int>(cmd.VtxOffset + dl.IdxBuffer[static_cast<int>(cmd.IdxOffset + i) + k])];
          const std::uint64_t key = uv_key(v[k]->uv);
          glyph |= glyph_corners.count(key) > 0;
          missing |= fallback_is_fffd && key == fallback_key;
        }
        if (!glyph) continue;
        const float x0 = std::min({v[0]->pos.x, v[1]->pos.x, v[2]->pos.x});
        const float x1 = std::max({v[0]->pos.x, v[1]->pos.x, v[2]->pos.x});
        const float y0 = std::min({v[0]->pos.y, v[1]->pos.y, v[2]->pos.y});
        const float y1 = std::max({v[0]->pos.y, v[1]->pos.y, v[2]->pos.y});
        char where[160];
        std::snprintf(where, sizeof where, " of window '%s' (text row at y=%.0f)", w->Name, std::floor(y0));
        if (missing) report(std::string("a character the font lacks is drawn as U+FFFD") + where);
        constexpr float kSlack = 1.0f;
        // A glyph wholly outside its clip rectangle is not shown at all (ImGui culls coarsely): not cut, hidden.
        const bool visible = x1 > clip.x && x0 < clip.z && y1 > clip.y && y0 < clip.w;
        if (!visible) continue;
        if (!scrolls_x && x1 > clip.z + kSlack) report("text cut at the right edge" + std::string(where));
        if (!scrolls_x && x0 < clip.x - kSlack) report("text cut at the left edge" + std::string(where));
        if (!scrolls_y && y1 > clip.w + kSlack) report("text cut at the bottom edge" + std::string(where));
        if (!scrolls_y && y0 < clip.y - kSlack) report("text cut at the top edge" + std::string(where));
      }
    }
  }
  return out;
}

}  // namespace tl::gui
