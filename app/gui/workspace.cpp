// Workspace JSON, atomic saving and the default locations.
#include "app/gui/workspace.hpp"

#include <cstdlib>
#include <filesystem>

#include "runtime/core/json_read.hpp"

namespace tl::gui {
namespace fs = std::filesystem;

nlohmann::json to_json(const Workspace& w) {
  return {{"format", "tilelab.workspace"}, {"version", 1},          {"kernel", w.kernel},
          {"configs", w.configs},          {"problems", w.problems}, {"script", w.script},
          {"layout_spec", w.layout_spec},  {"device_profile", w.device_profile},
          {"tab", w.tab},                  {"panels", w.panels},     {"sidebar_width", w.sidebar_width},
          {"theme", w.theme}};
}

Result<Workspace> workspace_from_json(const nlohmann::json& j) {
  if (!j.is_object()) return make_error(ErrorCode::parse, "a workspace is a JSON object");
  if (j.contains("format") && j["format"] != "tilelab.workspace")
    return make_error(ErrorCode::parse, "\"format\" is " + j["format"].dump() + ", not \"tilelab.workspace\"");
  Workspace w;
  const char* key = "";
  try {
    auto get = [&](const char* k, auto& into) {
      key = k;
      if (j.contains(k) && !j[k].is_null()) j.at(k).get_to(into);
    };
    get("kernel", w.kernel);
    get("configs", w.configs);
    get("problems", w.problems);
    get("script", w.script);
    get("layout_spec", w.layout_spec);
    get("device_profile", w.device_profile);
    get("tab", w.tab);
    get("panels", w.panels);
    get("sidebar_width", w.sidebar_width);
    get("theme", w.theme);
    if (w.theme != "dark" && w.theme != "light") w.theme = "dark";  // an unknown theme is not worth refusing the file
  } catch (const nlohmann::json::exception& e) {
    return make_error(ErrorCode::parse, std::string("\"") + key + "\" has the wrong type (" + e.what() + ")");
  }
  return w;
}

Result<Workspace> load_workspace(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return Workspace{};
  auto j = read_json_file(path, "workspace");
  if (!j) return j.status();
  auto w = workspace_from_json(*j);
  if (!w) return w.status().with_context("workspace " + path);
  return w;
}

Status save_workspace(const std::string& path, const Workspace& w) {
  return write_file_atomic(path, to_json(w).dump(2) + "\n");
}

std::string default_workspace_path() {
  if (const char* e = std::getenv("TILELAB_WORKSPACE"); e && *e) return e;
  if (const char* x = std::getenv("XDG_CONFIG_HOME"); x && *x) return std::string(x) + "/tilelab/workspace.json";
  const char* home = std::getenv("HOME");
  return std::string(home && *home ? home : ".") + "/.config/tilelab/workspace.json";
}

std::string imgui_ini_path(const std::string& workspace_path) {
  fs::path p(workspace_path);
  return (p.parent_path() / (p.stem().string() + ".imgui.ini")).string();
}

}  // namespace tl::gui
