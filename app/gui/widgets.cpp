// Widget helpers: colours from the style's darkness, elision by binary search over character boundaries.
#include "app/gui/widgets.hpp"

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <vector>

namespace tl::gui {

float ui(float pixels) { return pixels * ImGui::GetFontSize() / 15.0f; }

bool dark_style() {
  const ImVec4 bg = ImGui::GetStyle().Colors[ImGuiCol_WindowBg];
  return 0.299f * bg.x + 0.587f * bg.y + 0.114f * bg.z < 0.5f;
}

ImVec4 error_color() { return dark_style() ? ImVec4(1.0f, 0.45f, 0.4f, 1) : ImVec4(0.75f, 0.08f, 0.05f, 1); }
ImVec4 ok_color() { return dark_style() ? ImVec4(0.45f, 0.85f, 0.5f, 1) : ImVec4(0.05f, 0.5f, 0.12f, 1); }
ImVec4 warn_color() { return dark_style() ? ImVec4(1, 0.8f, 0.3f, 1) : ImVec4(0.6f, 0.38f, 0.0f, 1); }

std::string elide(const std::string& text, float width) {
  if (ImGui::CalcTextSize(text.c_str()).x <= width) return text;
  std::vector<std::size_t> cuts;  // character boundaries
  for (std::size_t i = 1; i < text.size(); ++i)
    if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) cuts.push_back(i);
  std::size_t lo = 0, hi = cuts.size();  // the answer is cuts[k - 1] for the largest fitting k (0: none)
  while (lo < hi) {
    const std::size_t mid = (lo + hi + 1) / 2;
    const std::string s = text.substr(0, cuts[mid - 1]) + "…";
    if (ImGui::CalcTextSize(s.c_str()).x <= width) lo = mid;
    else hi = mid - 1;
  }
  return (lo == 0 ? std::string() : text.substr(0, cuts[lo - 1])) + "…";
}

bool text_fit(const std::string& text, ImVec4 color) {
  const float room = ImGui::GetContentRegionAvail().x;
  const std::string shown = elide(text, room);
  if (color.w > 0) ImGui::PushStyleColor(ImGuiCol_Text, color);
  ImGui::TextUnformatted(shown.c_str());
  if (color.w > 0) ImGui::PopStyleColor();
  const bool elided = shown != text;
  if (elided && ImGui::IsItemHovered()) {
    ImGui::BeginTooltip();
    ImGui::PushTextWrapPos(ImGui::GetFontSize() * 40);
    ImGui::TextUnformatted(text.c_str());
    ImGui::PopTextWrapPos();
    ImGui::EndTooltip();
  }
  return elided;
}

std::string strf(const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  va_list again;
  va_copy(again, args);
  const int n = std::vsnprintf(nullptr, 0, fmt, args);
  va_end(args);
  std::string out(static_cast<std::size_t>(std::max(n, 0)), '\0');
  std::vsnprintf(out.data(), out.size() + 1, fmt, again);
  va_end(again);
  return out;
}

void same_line_if_room(float width) {
  const float right = ImGui::GetItemRectMax().x + ImGui::GetStyle().ItemSpacing.x + width;
  if (right <= ImGui::GetWindowPos().x + ImGui::GetWindowContentRegionMax().x) ImGui::SameLine();
}

void line_number(std::size_t n, const char* widest) {
  const std::string text = std::to_string(n);
  const float pad = ImGui::CalcTextSize(widest).x - ImGui::CalcTextSize(text.c_str()).x;
  ImGui::SetCursorPosX(ImGui::GetCursorPosX() + std::max(pad, 0.0f));
  ImGui::TextDisabled("%s", text.c_str());
  ImGui::SameLine();
}

float button_width(const char* label) {
  return ImGui::CalcTextSize(label, nullptr, true).x + 2 * ImGui::GetStyle().FramePadding.x;
}

float label_width(const char* label) {
  return ImGui::GetStyle().ItemInnerSpacing.x + ImGui::CalcTextSize(label, nullptr, true).x;
}

float check_width(const char* label) { return ImGui::GetFrameHeight() + label_width(label); }

bool text_fit_dim(const std::string& text) { return text_fit(text, ImGui::GetStyle().Colors[ImGuiCol_TextDisabled]); }

}  // namespace tl::gui
