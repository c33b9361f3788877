// Source and PTX views: the open kernel's files with compile errors inline and hot reload, and the PTX.
#include <algorithm>
#include <chrono>
#include <sstream>

#include <imgui.h>

#include "app/gui/app.hpp"
#include "library/library.hpp"

namespace tl::gui {
namespace {

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(std::move(line));
  return lines;
}

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

void SourcePanel::load(App& app, const std::string& name) {
  m_error.clear();
  m_name = name;
  auto sources = kernel_sources();
  if (!sources) {
    m_error = sources.status().message();
    m_lines.clear();
    return;
  }
  if (m_kernel != app.workspace().kernel && app.spec()) {
    m_kernel = app.workspace().kernel;
    m_files.clear();
    auto closure = include_closure(*sources, app.spec()->source);
    if (closure)
      for (const auto& [file, text] : *closure) m_files.push_back(file);
  }
  auto text = sources->read(name);
  if (!text) {
    m_error = text.status().message();
    m_lines.clear();
    return;
  }
  m_lines = split_lines(*text);
  m_path = sources->is_directory() ? sources->display_path(name) : "";
  std::error_code ec;
  m_mtime = m_path.empty() ? std::filesystem::file_time_type{} : std::filesystem::last_write_time(m_path, ec);
}

void SourcePanel::draw_source(App& app) {
  if (!app.spec()) {
    ImGui::TextDisabled("no kernel open");
    return;
  }
  if (m_kernel != app.workspace().kernel) load(app, app.spec()->source);
  // Hot reload: poll the file's modification time twice a second; a change reloads it and, when the kernel
  // was compiled, compiles again (the Jit reads the directory on every compile).
  if (!m_path.empty() && now_s() - m_last_poll > 0.5) {
    m_last_poll = now_s();
    std::error_code ec;
    auto t = std::filesystem::last_write_time(m_path, ec);
    if (!ec && t != m_mtime) {
      load(app, m_name);
      app.message(Message::Level::info, "reloaded " + m_path);
      if (app.compiled().compiled || !app.compiled().error.empty()) app.compile();
    }
  }
  ImGui::SetNextItemWidth(ui(320));
  if (ImGui::BeginCombo("file", m_name.c_str())) {
    for (const auto& f : m_files)
      if (ImGui::Selectable(f.c_str(), f == m_name)) load(app, f);
    ImGui::EndCombo();
  }
  const auto& errors = app.compiled().error_lines;
  auto file_errors = errors.find(m_name);
  int n_errors = 0;
  for (const auto& [f, lines] : errors) n_errors += static_cast<int>(lines.size());
  if (n_errors > 0) {
    const std::string count = strf("%d compile error line%s", n_errors, n_errors == 1 ? "" : "s");
    same_line_if_room(ImGui::CalcTextSize(count.c_str()).x);
    ImGui::TextColored(error_color(), "%s", count.c_str());
    for (const auto& [f, lines] : errors)
      if (f != m_name) {
        same_line_if_room(button_width(f.c_str()));
        if (ImGui::SmallButton(f.c_str())) load(app, f);
      }
  }
  ImGui::SameLine();
  text_fit_dim(m_path.empty() ? "(embedded copy: no hot reload)" : m_path);
  if (!m_error.empty()) {
    ImGui::TextColored(error_color(), "%s", m_error.c_str());
    return;
  }
  ImGui::BeginChild("##source", ImVec2(0, 0), true, ImGuiWindowFlags_HorizontalScrollbar);
  const float line_h = ImGui::GetTextLineHeightWithSpacing();
  // Error lines take two rows (the line and its message), so the clipper runs over display rows.
  std::vector<std::pair<int, bool>> rows;  // (line index, is message row)
  rows.reserve(m_lines.size() + 8);
  for (int i = 0; i < static_cast<int>(m_lines.size()); ++i) {
    rows.push_back({i, false});
    if (file_errors != errors.end() && file_errors->second.count(i + 1)) rows.push_back({i, true});
  }
  ImGuiListClipper clipper;
  clipper.Begin(static_cast<int>(rows.size()), line_h);
  while (clipper.Step()) {
    for (int r = clipper.DisplayStart; r < clipper.DisplayEnd; ++r) {
      const auto [i, is_msg] = rows[static_cast<std::size_t>(r)];
      const bool err = file_errors != errors.end() && file_errors->second.count(i + 1);
      if (is_msg) {
        ImGui::TextColored(error_color(), "      ^ %s", file_errors->second.at(i + 1).c_str());
        continue;
      }
      if (err) {
        ImVec2 p = ImGui::GetCursorScreenPos();
        ImGui::GetWindowDrawList()->AddRectFilled(p, ImVec2(p.x + ImGui::GetWindowWidth() + ImGui::GetScrollX(), p.y + line_h),
                                                  IM_COL32(120, 30, 30, 160));
      }
      line_number(static_cast<std::size_t>(i) + 1, "00000");
      ImGui::TextUnformatted(m_lines[static_cast<std::size_t>(i)].c_str());
    }
  }
  ImGui::EndChild();
}

void SourcePanel::draw_ptx(App& app) {
  const CompileResult& c = app.compiled();
  if (!c.compiled) {
    ImGui::TextDisabled(app.compiling() ? "compiling..." : "compile the kernel (sidebar) to see its PTX and SASS");
    if (!c.error.empty()) ImGui::TextColored(error_color(), "%s", c.error.c_str());
    return;
  }
  const std::string key = c.compiled->key + c.compiled->lowered_name;
  if (m_ptx_key != key) {
    m_ptx_key = key;
    m_ptx_lines = split_lines(c.compiled->ptx);
  }
  int view = show_sass ? 1 : 0;
  ImGui::RadioButton("PTX", &view, 0);
  ImGui::SameLine();
  ImGui::RadioButton("SASS", &view, 1);
  show_sass = view == 1;
  // SASS: the cubin disassembled on a job, once per compile (the tool is looked for there, not in the frame).
  const App::Sass& sass = app.sass();
  if (show_sass && sass.key != key && !sass.pending) app.disassemble();
  const std::string& text = show_sass ? sass.text : c.compiled->ptx;
  if (show_sass && m_sass_key != sass.key + std::to_string(sass.text.size())) {
    m_sass_key = sass.key + std::to_string(sass.text.size());
    m_sass_lines = split_lines(sass.text);
  }
  const std::vector<std::string>& lines = show_sass ? m_sass_lines : m_ptx_lines;
  ImGui::SameLine();
  text_fit(strf("  %s  %s, %zu lines", c.compiled->lowered_name.c_str(), c.compiled->arch.c_str(), lines.size()));
  if (show_sass) {
    if (sass.pending || sass.key != key) {
      ImGui::TextDisabled("disassembling the cubin...");
      return;
    }
    if (!sass.error.empty()) {
      ImGui::PushStyleColor(ImGuiCol_Text, error_color());
      ImGui::TextWrapped("%s", sass.error.c_str());
      ImGui::PopStyleColor();
      if (ImGui::SmallButton("Refresh")) app.refresh_sass();
      return;
    }
    text_fit_dim(sass.tool);
  }
  ImGui::SetNextItemWidth(ui(240));
  ImGui::InputTextWithHint("filter", show_sass ? "e.g. HGMMA, LDS, BAR" : "e.g. wgmma, ld.shared", m_ptx_filter,
                           sizeof(m_ptx_filter));
  same_line_if_room(button_width("copy"));
  if (ImGui::SmallButton("copy")) ImGui::SetClipboardText(text.c_str());
  ImGui::BeginChild("##ptx", ImVec2(0, 0), true, ImGuiWindowFlags_HorizontalScrollbar);
  const std::string filter = m_ptx_filter;
  if (filter.empty()) {
    ImGuiListClipper clipper;
    clipper.Begin(static_cast<int>(lines.size()));
    while (clipper.Step())
      for (int i = clipper.DisplayStart; i < clipper.DisplayEnd; ++i) {
        line_number(static_cast<std::size_t>(i) + 1);
        ImGui::TextUnformatted(lines[static_cast<std::size_t>(i)].c_str());
      }
  } else {
    for (std::size_t i = 0; i < lines.size(); ++i) {
      if (lines[i].find(filter) == std::string::npos) continue;
      line_number(i + 1);
      ImGui::TextUnformatted(lines[i].c_str());
    }
  }
  ImGui::EndChild();
}

}  // namespace tl::gui
