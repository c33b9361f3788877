// The app's fonts: DejaVu Sans (embedded, or a file) at the UI scale, with every glyph range the app prints.
#pragma once

#include <string>

struct ImFont;

namespace tl::gui {

struct AppFonts {
  ImFont* regular = nullptr;  // the default font
  ImFont* bold = nullptr;     // plot titles and headings (the regular one when no bold is found)
  std::string from;           // "embedded DejaVu Sans", a path, or "ImGui's built-in font (ASCII only)"
};

// Adds the fonts to the current ImGui context's atlas at `pixels`: $TILELAB_GUI_FONT when set (regular and bold
// alike), else the embedded DejaVu Sans, else the system's; ImGui's built-in font only when none loads.
AppFonts load_app_fonts(float pixels);

}  // namespace tl::gui
