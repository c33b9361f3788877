// --timeout, --max-instructions, --max-memory, --allow-write, --unsafe: declared once, checked once.
#include "scripting/lua_options.hpp"

#include <cmath>

namespace tl::lua {
namespace {

constexpr long long k_min_memory_mib = 16;
constexpr long long k_max_memory_mib = 1 << 20;  // 1 TiB

std::string number_text(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", v);
  return text;
}

}  // namespace

void add_script_options(CLI::App& cmd, ScriptArgs& args) {
  cmd.add_option("--timeout", args.timeout_s, "Stop the script after this many seconds (0: no limit)")
      ->capture_default_str();
  cmd.add_option("--max-instructions", args.max_instructions,
                 "Stop the script after this many Lua VM instructions (0: no limit)")
      ->capture_default_str();
  cmd.add_option("--max-memory", args.max_memory_mib, "Memory the script's Lua values may take, in MiB (" +
                                                          std::to_string(k_min_memory_mib) + " to " +
                                                          std::to_string(k_max_memory_mib) + ")")
      ->capture_default_str();
  cmd.add_option("--allow-write", args.allow_write,
                 "Let the script write files under DIR too (besides the current directory); repeatable")
      ->type_name("DIR")
      ->allow_extra_args(false);  // one folder per --allow-write: the script and its arguments follow
  cmd.add_flag("--unsafe", args.unsafe,
               "No sandbox: processes, C modules, the debug library, binary chunks and writes anywhere");
}

Status apply_script_args(const ScriptArgs& args, ScriptOptions& options) {
  if (!std::isfinite(args.timeout_s) || args.timeout_s < 0)
    return make_error(ErrorCode::invalid_argument,
                      "--timeout " + number_text(args.timeout_s) + ": must be a number of seconds >= 0 (0: no limit)");
  if (args.max_instructions < 0)
    return make_error(ErrorCode::invalid_argument, "--max-instructions " + std::to_string(args.max_instructions) +
                                                       ": must be a count >= 0 (0: no limit)");
  if (args.max_memory_mib < k_min_memory_mib || args.max_memory_mib > k_max_memory_mib)
    return make_error(ErrorCode::invalid_argument, "--max-memory " + std::to_string(args.max_memory_mib) +
                                                       ": must be from " + std::to_string(k_min_memory_mib) +
                                                       " to " + std::to_string(k_max_memory_mib) + " MiB");
  options.timeout_s = args.timeout_s;
  options.max_instructions = static_cast<std::uint64_t>(args.max_instructions);
  options.max_memory_mib = static_cast<std::uint64_t>(args.max_memory_mib);
  options.allow_write = args.allow_write;
  options.unsafe = args.unsafe;
  return Status::success();
}

}  // namespace tl::lua
