// The command-line options of a Lua script run, shared by `tilelab run` and `tilelab-gui`: limits and the sandbox.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "runtime/core/status.hpp"
#include "scripting/lua_context.hpp"

namespace tl::lua {

// As parsed: signed and unchecked, so that a negative or zero value gets a message instead of wrapping around.
struct ScriptArgs {
  double timeout_s = 0;
  long long max_instructions = 0;
  long long max_memory_mib = static_cast<long long>(k_default_max_memory_mib);
  std::vector<std::string> allow_write;
  bool unsafe = false;
};

// Adds --timeout, --max-instructions, --max-memory, --allow-write and --unsafe to `cmd`, with `args` as defaults.
void add_script_options(CLI::App& cmd, ScriptArgs& args);

// Checks the values (a message names the option and its valid range) and copies them into `options`.
Status apply_script_args(const ScriptArgs& args, ScriptOptions& options);

}  // namespace tl::lua
