// Lua editor and console: the script runs on its own thread with the `tl` API; print goes to the console, an error
// to the console with its line highlighted in the listing.
#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>

#include <imgui.h>
#include <imgui_stdlib.h>

extern "C" {
#include <lauxlib.h>
#include <lua.h>
}

#include "app/gui/app.hpp"
#include "scripting/lua_runner.hpp"

namespace tl::gui {
namespace {

constexpr const char* kNewScript =
    "-- A TileLab script: the `tl` API (see README), print goes to the console below.\n"
    "print(tl.version)\n"
    "local info = tl.info()\n"
    "print(#info.devices .. ' GPU(s)' .. (info.why_no_device and (': ' .. info.why_no_device) or ''))\n";

struct PrintSink {
  std::mutex* mutex;
  std::string* out;
};

// print(...) for the console: tab-separated tostring of each argument, then a newline.
int console_print(lua_State* L) {
  auto* sink = static_cast<PrintSink*>(lua_touserdata(L, lua_upvalueindex(1)));
  const int n = lua_gettop(L);
  std::string line;
  for (int i = 1; i <= n; ++i) {
    std::size_t len = 0;
    const char* s = luaL_tolstring(L, i, &len);
    if (i > 1) line += '\t';
    line.append(s, len);
    lua_pop(L, 1);
  }
  line += '\n';
  std::lock_guard lock(*sink->mutex);
  sink->out->append(line);
  return 0;
}

}  // namespace

int lua_error_line(const std::string& message, const std::string& chunk) {
  if (chunk.empty()) return 0;
  const std::size_t at = message.find(chunk + ":");
  if (at == std::string::npos) return 0;
  return std::atoi(message.c_str() + at + chunk.size() + 1);
}

LuaPanel::LuaPanel() : m_text(kNewScript) {}

LuaPanel::~LuaPanel() {
  m_interrupt = true;
  join();
}

void LuaPanel::join() {
  if (m_thread.joinable()) m_thread.join();
}

Status LuaPanel::open(const std::string& path) {
  std::ifstream in(path);
  if (!in) return make_error(ErrorCode::not_found, "cannot open script " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  m_text = ss.str();
  m_path = path;
  m_modified = false;
  m_error.clear();
  m_error_line = 0;
  return Status::success();
}

void LuaPanel::run(App& app) {
  if (m_running) return;
  join();
  m_running = true;
  m_interrupt = false;
  m_output.clear();
  m_error.clear();
  m_error_line = 0;
  m_show_listing = false;
  {
    std::lock_guard lock(m_mutex);
    m_pending_output.clear();
    m_pending_error.reset();
    m_pending_done = false;
  }
  const std::string chunk = m_path.empty() ? "untitled.lua" : m_path;
  const std::string text = m_text;  // what the editor holds, saved or not
  lua::RunOptions o;
  o.script = app.script_options();
  o.script.timeout_s = 0;  // the panel has Stop
  o.script.interrupted = &m_interrupt;
  m_thread = std::thread([this, chunk, text, o]() mutable {
    PrintSink sink{&m_mutex, &m_pending_output};
    o.setup = [&sink](lua_State* L) {
      lua_pushlightuserdata(L, &sink);
      lua_pushcclosure(L, console_print, 1);
      lua_setglobal(L, "print");
    };
    Status st;
    try {
      st = lua::run_string(text, chunk, o);
    } catch (const std::exception& e) {
      st = make_error(ErrorCode::internal, e.what());
    }
    std::lock_guard lock(m_mutex);
    if (!st) m_pending_error = st.message();
    m_pending_done = true;
  });
  app.message(Message::Level::info, "running " + chunk);
}

void LuaPanel::draw(App& app) {
  // Collect what the script thread produced.
  {
    std::lock_guard lock(m_mutex);
    m_output += m_pending_output;
    m_pending_output.clear();
    if (m_pending_done) {
      m_pending_done = false;
      m_running = false;
      if (m_pending_error) {
        m_error = *m_pending_error;
        m_error_line = lua_error_line(m_error, m_path.empty() ? "untitled.lua" : m_path);
        m_show_listing = m_error_line > 0;
        app.message(Message::Level::error, m_error.substr(0, m_error.find('\n')));
      }
      m_pending_error.reset();
    }
  }
  static char path_buf[256];
  std::snprintf(path_buf, sizeof(path_buf), "%s", m_path.c_str());
  ImGui::SetNextItemWidth(ui(300));
  if (ImGui::InputTextWithHint("##luapath", "script.lua", path_buf, sizeof(path_buf))) m_path = path_buf;
  same_line_if_room(button_width("Open"));
  if (ImGui::Button("Open")) {
    Status st = open(m_path);
    if (!st) app.message(Message::Level::error, st.message());
  }
  same_line_if_room(button_width("Save*"));
  if (ImGui::Button(m_modified ? "Save*" : "Save")) {
    if (m_path.empty()) {
      app.message(Message::Level::error, "give the script a file name first");
    } else {
      Status st = write_file_atomic(m_path, m_text);
      if (st) m_modified = false;
      app.message(st ? Message::Level::info : Message::Level::error, st ? "saved " + m_path : st.message());
    }
  }
  same_line_if_room(button_width("Run"));
  ImGui::BeginDisabled(m_running);
  if (ImGui::Button("Run")) run(app);
  ImGui::EndDisabled();
  same_line_if_room(button_width("Stop"));
  ImGui::BeginDisabled(!m_running);
  if (ImGui::Button("Stop")) m_interrupt = true;
  ImGui::EndDisabled();
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("long tl operations stop after their current run");
  same_line_if_room(check_width("listing"));
  ImGui::Checkbox("listing", &m_show_listing);
  if (m_running) {
    same_line_if_room(ImGui::CalcTextSize("running...").x);
    ImGui::TextDisabled("running...");
  }

  const float console_h = std::max(120.0f, ImGui::GetContentRegionAvail().y * 0.35f);
  const ImVec2 editor(-1, ImGui::GetContentRegionAvail().y - console_h - 8);
  if (m_show_listing) {
    // Read-only listing with line numbers and the error line marked.
    ImGui::BeginChild("##lualisting", editor, true);
    std::istringstream in(m_text);
    int n = 0;
    for (std::string line; std::getline(in, line);) {
      ++n;
      if (n == m_error_line) {
        ImVec2 p = ImGui::GetCursorScreenPos();
        ImGui::GetWindowDrawList()->AddRectFilled(
            p, ImVec2(p.x + ImGui::GetContentRegionAvail().x, p.y + ImGui::GetTextLineHeightWithSpacing()),
            IM_COL32(130, 30, 30, 200));
        if (ImGui::GetScrollMaxY() > 0 && ImGui::IsWindowAppearing()) ImGui::SetScrollHereY();
      }
      line_number(static_cast<std::size_t>(n), "0000");
      ImGui::TextUnformatted(line.c_str());
    }
    ImGui::EndChild();
  } else if (ImGui::InputTextMultiline("##luaeditor", &m_text, editor, ImGuiInputTextFlags_AllowTabInput)) {
    m_modified = true;
    m_error_line = 0;
  }
  ImGui::BeginChild("##luaconsole", ImVec2(-1, console_h), true, ImGuiWindowFlags_HorizontalScrollbar);
  ImGui::TextUnformatted(m_output.c_str());
  if (!m_error.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, error_color());
    ImGui::TextUnformatted(m_error.c_str());
    ImGui::PopStyleColor();
  }
  if (m_running && ImGui::GetScrollY() >= ImGui::GetScrollMaxY()) ImGui::SetScrollHereY(1.0f);
  ImGui::EndChild();
}

}  // namespace tl::gui
