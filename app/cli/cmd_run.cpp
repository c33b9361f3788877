// `tilelab run FILE.lua [args...]`: runs a Lua experiment; a Lua error prints file:line and a traceback.
#include <chrono>

#include "app/cli/commands.hpp"
#include "app/cli/run_support.hpp"
#include "scripting/lua_runner.hpp"

namespace tl::cli {
namespace {

struct RunArgs {
  std::string script;
  std::vector<std::string> args;
  std::string kernels_dir, cache_dir, db;
  double timeout_s = 0, launch_timeout_s = 30;
  std::uint64_t max_instructions = 0;
  bool unsafe = false;
};

}  // namespace

void add_run_command(CLI::App& app, Context& ctx) {
  auto* cmd = app.add_subcommand("run", "Run a Lua script (the tl API) headless");
  auto a = std::make_shared<RunArgs>();
  cmd->add_option("script", a->script, "Lua file to run")->required();
  cmd->add_option("args", a->args, "Arguments passed to the script as arg[1..n]");
  cmd->add_flag("--unsafe", a->unsafe, "Allow os.execute, io.popen, package.loadlib and C modules (off: a sandbox)");
  cmd->add_option("--timeout", a->timeout_s, "Stop the script after this many seconds (0: no limit)")->capture_default_str();
  cmd->add_option("--max-instructions", a->max_instructions,
                  "Stop the script after this many Lua VM instructions (0: no limit)")->capture_default_str();
  cmd->add_option("--launch-timeout", a->launch_timeout_s, "Seconds one kernel launch may take before the watchdog "
                                                           "kills it")->capture_default_str();
  cmd->add_option("--kernels-dir", a->kernels_dir, "Read kernel sources from DIR");
  cmd->add_option("--db", a->db, "Results store for tl.sweep and tl.results (default: $TILELAB_DB or "
                                  "~/.local/share/tilelab/results.db)");
  cmd->add_option("--cache-dir", a->cache_dir, "Kernel and ceilings cache directory (default: $TILELAB_CACHE_DIR or "
                                               "~/.cache/tilelab)");
  cmd->prefix_command();  // everything after the script belongs to the script
  cmd->callback([&ctx, cmd, a] {
    lua::RunOptions options;
    options.args = a->args;
    for (const auto& extra : cmd->remaining()) options.args.push_back(extra);
    options.script.unsafe = a->unsafe;
    options.script.db_path = a->db;
    options.script.timeout_s = a->timeout_s;
    options.script.max_instructions = a->max_instructions;
    options.script.session.kernels_dir = a->kernels_dir;
    options.script.session.cache_dir = a->cache_dir;
    options.script.session.timeout = std::chrono::milliseconds(static_cast<long long>(a->launch_timeout_s * 1000));
    // Ctrl-C: the hook raises "interrupted" at its next check; long operations stop after the current run.
    InterruptScope interrupt;
    options.script.interrupted = interrupt.flag();
    Status status = lua::run_file(a->script, options);
    ctx.exit_code = status.ok() ? 0 : report_error(status.message());
  });
}

}  // namespace tl::cli
