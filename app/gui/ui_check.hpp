// The app's test-mode check of a drawn frame: text cut off by its window or drawn with glyphs the font lacks.
#pragma once

#include <string>
#include <vector>

namespace tl::gui {

// The glyph ranges the app loads from its font: Latin-1 and the punctuation, arrows, maths, Greek and symbols its
// text uses (–, …, µ, →, ·, ×, ≤, ✓), and U+FFFD, which ImGui then draws for any other (missing) glyph.
const unsigned short* glyph_ranges();

// After ImGui::Render: every glyph of the frame's draw lists that reaches past its clip rectangle, where its window
// shows no scrollbar along that axis (text cut off that no scrolling shows), and every use of the fallback glyph (a
// character the font lacks). One line each, naming the window and where; at most `limit`.
std::vector<std::string> check_drawn_text(std::size_t limit = 20);

}  // namespace tl::gui
