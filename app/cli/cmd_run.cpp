// `tilelab run FILE.lua [args...]`: runs a Lua experiment; a Lua error prints file:line and a traceback.
#include <chrono>
#include <cmath>

#include "app/cli/commands.hpp"
#include "app/cli/run_support.hpp"
#include "scripting/lua_options.hpp"
#include "scripting/lua_runner.hpp"

namespace tl::cli {
namespace {

constexpr int k_exit_interrupted = 128 + SIGINT;  // what a shell reports for a process ended by Ctrl-C

struct RunArgs {
  std::string script;
  std::vector<std::string> args;
  std::string kernels_dir, cache_dir, db;
  double launch_timeout_s = 30;
  lua::ScriptArgs limits;
};

}  // namespace

void add_run_command(CLI::App& app, Context& ctx) {
  auto* cmd = app.add_subcommand("run", "Run a Lua script (the tl API) headless, in a sandbox");
  auto a = std::make_shared<RunArgs>();
  cmd->add_option("script", a->script, "Lua file to run")->required();
  cmd->add_option("args", a->args, "Arguments passed to the script as arg[1..n]");
  lua::add_script_options(*cmd, a->limits);
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
    if (Status st = lua::apply_script_args(a->limits, options.script); !st) {
      ctx.exit_code = report_error(st.message());
      return;
    }
    if (!std::isfinite(a->launch_timeout_s) || a->launch_timeout_s <= 0 || a->launch_timeout_s > 86400) {
      ctx.exit_code = report_error("--launch-timeout " + format_number(a->launch_timeout_s, "%g") +
                                   ": must be a number of seconds above 0, at most 86400");
      return;
    }
    options.args = a->args;
    for (const auto& extra : cmd->remaining()) options.args.push_back(extra);
    options.script.db_path = a->db;
    options.script.session.kernels_dir = a->kernels_dir;
    options.script.session.cache_dir = a->cache_dir;
    options.script.session.timeout = std::chrono::milliseconds(static_cast<long long>(a->launch_timeout_s * 1000));
    // Ctrl-C: the hook raises "interrupted" at its next check; long operations stop after the current run (a sweep
    // stores what it ran), and the process exits 130 as if the signal had ended it.
    InterruptScope interrupt;
    options.script.interrupted = interrupt.flag();
    int exit_status = -1;  // os.exit(code) ends the script with its status, after the run's cleanup
    options.exit_status = &exit_status;
    Status status = lua::run_file(a->script, options);
    if (exit_status >= 0) ctx.exit_code = exit_status;
    else if (!status.ok()) ctx.exit_code = report_error(status.message());
    if (interrupt.flag()->load()) ctx.exit_code = k_exit_interrupted;
  });
}

}  // namespace tl::cli
