// The desktop app's workspace: open kernel, its config and problem, script, layout SPEC, panels; saved as JSON.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/core/files.hpp"  // write_file_atomic: the workspace, the Lua editor's save, trace exports
#include "runtime/core/status.hpp"

namespace tl::gui {

using KeyValues = std::map<std::string, std::string>;

struct Workspace {
  std::string kernel;                          // the open kernel ("" -> the first one listed)
  std::map<std::string, KeyValues> configs;    // per kernel: the config values set (defaults for the rest)
  std::map<std::string, KeyValues> problems;   // per kernel: the problem values set
  std::string script;                          // the Lua editor's file
  std::string layout_spec;                     // the layout viewer's SPEC ("" -> the viewer's default)
  std::string device_profile;                  // roofline ceilings when this machine has none measured
  std::string tab = "Layouts";                 // the selected panel of the main area
  std::map<std::string, bool> panels;          // panel name -> shown
  float sidebar_width = 380;
  std::string theme = "dark";                  // "dark" or "light": the window and its plots

  bool shown(const std::string& panel) const {
    auto it = panels.find(panel);
    return it == panels.end() || it->second;
  }
  bool operator==(const Workspace&) const = default;
};

nlohmann::json to_json(const Workspace& w);
// Unknown keys are ignored; a wrong type names the key. Errors: parse.
Result<Workspace> workspace_from_json(const nlohmann::json& j);

// Reads FILE. A missing file gives an empty Workspace (first start); a corrupt one an error naming the file and
// what is wrong (the caller keeps the file aside and starts with defaults, so nothing is lost silently).
Result<Workspace> load_workspace(const std::string& path);
// Writes FILE atomically (a temporary file in the same folder, then rename), creating the folder.
Status save_workspace(const std::string& path, const Workspace& w);

// --workspace, else $TILELAB_WORKSPACE, else $XDG_CONFIG_HOME/tilelab/workspace.json, else
// ~/.config/tilelab/workspace.json.
std::string default_workspace_path();
// The ImGui window-state file that goes with a workspace: "dir/workspace.json" -> "dir/workspace.imgui.ini".
std::string imgui_ini_path(const std::string& workspace_path);

}  // namespace tl::gui
