// Font loading: the glyph ranges of ui_check.hpp from the first font source that loads.
#include "app/gui/fonts.hpp"

#include <cstdlib>
#include <filesystem>

#include <imgui.h>

#include "app/gui/ui_check.hpp"

#ifdef TL_GUI_EMBEDDED_FONTS
extern "C" const unsigned char tl_gui_font_regular[], tl_gui_font_regular_end[];
extern "C" const unsigned char tl_gui_font_bold[], tl_gui_font_bold_end[];
#endif

namespace tl::gui {
namespace {

ImFont* from_file(const std::string& path, float pixels) {
  std::error_code ec;
  if (path.empty() || !std::filesystem::is_regular_file(path, ec)) return nullptr;
  return ImGui::GetIO().Fonts->AddFontFromFileTTF(path.c_str(), pixels, nullptr, glyph_ranges());
}

#ifdef TL_GUI_EMBEDDED_FONTS
ImFont* from_memory(const unsigned char* begin, const unsigned char* end, float pixels) {
  ImFontConfig config;
  config.FontDataOwnedByAtlas = false;  // static data: the atlas must not free it
  return ImGui::GetIO().Fonts->AddFontFromMemoryTTF(const_cast<unsigned char*>(begin), static_cast<int>(end - begin),
                                                    pixels, &config, glyph_ranges());
}
#endif

}  // namespace

AppFonts load_app_fonts(float pixels) {
  AppFonts f;
  if (const char* env = std::getenv("TILELAB_GUI_FONT"); env && *env) {
    if ((f.regular = from_file(env, pixels))) {
      f.bold = f.regular;
      f.from = env;
      return f;
    }
  }
#ifdef TL_GUI_EMBEDDED_FONTS
  f.regular = from_memory(tl_gui_font_regular, tl_gui_font_regular_end, pixels);
  f.bold = from_memory(tl_gui_font_bold, tl_gui_font_bold_end, pixels);
  f.from = "embedded DejaVu Sans";
#else
  const std::string dir = "/usr/share/fonts/truetype/dejavu/";
  f.regular = from_file(dir + "DejaVuSans.ttf", pixels);
  f.bold = from_file(dir + "DejaVuSans-Bold.ttf", pixels);
  f.from = dir + "DejaVuSans.ttf";
#endif
  if (!f.regular) {
    ImFontConfig config;
    config.SizePixels = pixels;
    f.regular = ImGui::GetIO().Fonts->AddFontDefault(&config);
    f.from = "ImGui's built-in font (ASCII only: install fonts-dejavu-core or set TILELAB_GUI_FONT)";
  }
  if (!f.bold) f.bold = f.regular;
  return f;
}

}  // namespace tl::gui
