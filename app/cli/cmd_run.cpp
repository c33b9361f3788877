// `tilelab run FILE.lua [args...]`: runs a Lua experiment; a Lua error prints file:line and a traceback.
#include <atomic>
#include <csignal>

#include "app/cli/commands.hpp"
#include "scripting/lua_runner.hpp"

namespace tl::cli {
namespace {

std::atomic<bool> g_script_interrupted{false};

// The first Ctrl-C asks long operations (tl.sweep) to stop after the current run; a second one ends the process.
extern "C" void on_script_sigint(int) {
  g_script_interrupted.store(true);
  std::signal(SIGINT, SIG_DFL);
}

}  // namespace

void add_run_command(CLI::App& app, Context& ctx) {
  auto* cmd = app.add_subcommand("run", "Run a Lua script (the tl API) headless");
  auto script = std::make_shared<std::string>();
  auto args = std::make_shared<std::vector<std::string>>();
  auto db = std::make_shared<std::string>();
  cmd->add_option("--db", *db, "Results store for tl.sweep and tl.results (default: $TILELAB_DB or ~/.local/share/tilelab/results.db)");
  cmd->add_option("script", *script, "Lua file to run")->required();
  cmd->add_option("args", *args, "Arguments passed to the script as arg[1..n]");
  cmd->prefix_command();  // everything after the script belongs to the script
  cmd->callback([&ctx, cmd, script, args, db] {
    lua::RunOptions options;
    options.script.db_path = *db;
    options.script.interrupted = &g_script_interrupted;
    std::signal(SIGINT, on_script_sigint);
    options.args = *args;
    for (const auto& extra : cmd->remaining()) options.args.push_back(extra);
    Status status = lua::run_file(*script, options);
    ctx.exit_code = status.ok() ? 0 : report_error(status.message());
  });
}

}  // namespace tl::cli
