// Runs a Lua script with the `tl` API loaded; errors come back with file:line and a traceback.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "runtime/core/status.hpp"
#include "scripting/lua_context.hpp"

namespace tl::lua {

struct RunOptions {
  std::vector<std::string> args;  // visible to the script as the global `arg` (arg[0] = script path)
  ScriptOptions script;           // session options, results store, interrupt flag shared by the bindings
  // Called on the fresh state after `tl` is loaded, before the script runs: a host adds its own globals
  // (the desktop app's `gui` table, a `print` that writes to its console).
  std::function<void(lua_State*)> setup;
  // Set to the status of os.exit(code) when the script ended by it (sandboxed: the process goes on); a non-zero one
  // is also the returned error.
  int* exit_status = nullptr;
};

// Runs FILE; on a Lua error the Status message is "FILE:LINE: message\nstack traceback:\n...".
Status run_file(const std::string& path, const RunOptions& options = {});
// Runs a chunk of source; `chunk_name` is what error messages call it.
Status run_string(const std::string& source, const std::string& chunk_name, const RunOptions& options = {});

}  // namespace tl::lua
