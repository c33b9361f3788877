// Every character the app's strings hold (its panels, the plots, the kernels' summaries and messages) is in the glyph
// ranges the app loads and in the font it embeds: none draws as a missing glyph (issue 25: "window 0 ns ? 12.3 µs").
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <stb_truetype.h>

#include "app/gui/ui_check.hpp"

namespace tl::gui {
namespace {

namespace fs = std::filesystem;

// The code points of a UTF-8 string (a malformed sequence is skipped byte by byte).
std::vector<char32_t> code_points(const std::string& s) {
  std::vector<char32_t> out;
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    const int n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (n == 0 || i + n > s.size()) {
      ++i;
      continue;
    }
    char32_t cp = n == 1 ? c : c & (0x7F >> n);
    for (int k = 1; k < n; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
    out.push_back(cp);
    i += n;
  }
  return out;
}

// Non-ASCII code points of the string literals in the C++ sources under `dirs`, each with one place it is used.
std::map<char32_t, std::string> literal_code_points(const std::vector<fs::path>& dirs) {
  static const std::regex literal(R"("(?:[^"\\]|\\.)*")");
  std::map<char32_t, std::string> out;
  for (const auto& dir : dirs) {
    for (const auto& entry : fs::recursive_directory_iterator(dir)) {
      const auto ext = entry.path().extension();
      if (ext != ".cpp" && ext != ".hpp") continue;
      std::ifstream in(entry.path());
      int n = 0;
      for (std::string line; std::getline(in, line);) {
        ++n;
        const std::string code = line.substr(0, line.find("// "));  // comments are not printed
        for (std::sregex_iterator m(code.begin(), code.end(), literal), end; m != end; ++m)
          for (char32_t cp : code_points(m->str()))
            if (cp >= 0x80) out.emplace(cp, entry.path().string() + ":" + std::to_string(n));
      }
    }
  }
  return out;
}

bool in_ranges(char32_t cp) {
  for (const unsigned short* r = glyph_ranges(); r[0] != 0; r += 2)
    if (cp >= r[0] && cp <= r[1]) return true;
  return false;
}

TEST(Glyphs, EveryCharacterTheAppPrintsIsLoadedAndInTheFont) {
  const fs::path root = TL_SOURCE_DIR;
  const auto used = literal_code_points({root / "app", root / "viz", root / "kernels", root / "scripting"});
  ASSERT_TRUE(used.count(U'µ') && used.count(U'–')) << "the scan found none of the app's usual µ and –";
  std::ifstream file(TL_GUI_FONT_FILE, std::ios::binary);
  ASSERT_TRUE(file) << "cannot read " << TL_GUI_FONT_FILE;
  std::stringstream bytes;
  bytes << file.rdbuf();
  const std::string data = bytes.str();
  stbtt_fontinfo font;
  const auto* p = reinterpret_cast<const unsigned char*>(data.data());
  ASSERT_TRUE(stbtt_InitFont(&font, p, stbtt_GetFontOffsetForIndex(p, 0)));
  for (const auto& [cp, where] : used) {
    char hex[16];
    std::snprintf(hex, sizeof hex, "U+%04X", static_cast<unsigned>(cp));
    EXPECT_TRUE(in_ranges(cp)) << hex << " (" << where << ") is in no glyph range the app loads (ui_check.cpp)";
    EXPECT_NE(stbtt_FindGlyphIndex(&font, static_cast<int>(cp)), 0) << hex << " (" << where << ") is not in the font";
  }
  // What a missing glyph draws as: it must be there to be drawn (and told apart from a real '?').
  EXPECT_TRUE(in_ranges(0xFFFD));
  EXPECT_NE(stbtt_FindGlyphIndex(&font, 0xFFFD), 0);
}

}  // namespace
}  // namespace tl::gui
