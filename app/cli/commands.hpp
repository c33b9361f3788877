// Each `tilelab` subcommand registers itself here; its callback stores the process exit code.
#pragma once

#include <CLI/CLI.hpp>

namespace tl::cli {

struct Context {
  int exit_code = 0;
  std::string argv0;  // path of this executable, to find sibling binaries (tilelab-gui)
};

void add_info_command(CLI::App& app, Context& ctx);
void add_run_command(CLI::App& app, Context& ctx);
void add_gui_command(CLI::App& app, Context& ctx);
void add_layout_command(CLI::App& app, Context& ctx);
void add_banks_command(CLI::App& app, Context& ctx);
void add_kernels_command(CLI::App& app, Context& ctx);
void add_compile_command(CLI::App& app, Context& ctx);
void add_worker_command(CLI::App& app, Context& ctx);
void add_bench_command(CLI::App& app, Context& ctx);
void add_test_command(CLI::App& app, Context& ctx);
void add_timeline_command(CLI::App& app, Context& ctx);
void add_roofline_command(CLI::App& app, Context& ctx);
void add_sweep_command(CLI::App& app, Context& ctx);
void add_results_command(CLI::App& app, Context& ctx);

// Prints "tilelab: error: MESSAGE" to stderr and returns the exit code to use.
int report_error(const std::string& message, int code = 1);

// A numeric option's check: a number in [lo, hi]. CLI11 puts the option's name before the message
// ("--jobs: 0 is out of range (expected 1 to 1024)") and the command exits 1 before it runs.
CLI::Validator in_range(double lo, double hi, const std::string& unit = {});

}  // namespace tl::cli
