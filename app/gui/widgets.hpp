// Small ImGui helpers the panels share: status colours that read on the dark and the light theme, and one-line text
// that is elided (with the whole text in a tooltip) rather than cut off by its window.
#pragma once

#include <string>

#include <imgui.h>

namespace tl::gui {

// `pixels` at the UI scale (the font's size over its 15-pixel base): fixed widths and gaps follow --scale.
float ui(float pixels);

// Whether the current ImGui style is a dark one (its window background is dark).
bool dark_style();
ImVec4 error_color();  // failures, refusals
ImVec4 ok_color();     // PASS, valid
ImVec4 warn_color();   // warnings, stale results

// `text` on one line in the room left on it (`color`: the style's text colour when w == 0): whole when it fits,
// else cut with "…" and shown whole in a tooltip on hover. Returns true when it was elided.
bool text_fit(const std::string& text, ImVec4 color = ImVec4(0, 0, 0, 0));
// printf into a std::string (for text_fit).
std::string strf(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

// As text_fit, in the style's disabled (dim) text colour.
bool text_fit_dim(const std::string& text);

// ImGui::SameLine() when an item `width` wide still fits the window after the last one; else the next item starts
// a new line (a row of buttons wraps instead of running past a narrow window's edge).
void same_line_if_room(float width);

// A listing's line number, right-aligned in the width of `widest` (a proportional font's space is narrower than a
// digit, so "%5d" would not line the code up), dim; the code follows on the same line.
void line_number(std::size_t n, const char* widest = "000000");

// The width of a button labelled `label` (and of a labelled widget's label part, with `spacing`).
float button_width(const char* label);
float label_width(const char* label);
float check_width(const char* label);  // a checkbox or radio button with its label

// The longest prefix of `text` (whole UTF-8 characters) that, with "…" appended, is at most `width` wide in the
// current font; `text` itself when it fits.
std::string elide(const std::string& text, float width);

}  // namespace tl::gui
