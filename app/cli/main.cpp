// `tilelab` entry point: parses the command line (CLI11) and dispatches to a subcommand.
#include <iostream>

#include "app/cli/commands.hpp"
#include "runtime/log.hpp"

namespace tl::cli {

int report_error(const std::string& message, int code) {
  std::cerr << "tilelab: error: " << message << '\n';
  return code;
}

}  // namespace tl::cli

int main(int argc, char** argv) {
  CLI::App app{"TileLab: an interactive workbench for GPU kernels (layouts, JIT, verification, timing, plots)",
               "tilelab"};
  app.set_version_flag("--version", std::string("tilelab ") + TILELAB_VERSION);
  app.require_subcommand(1);
  bool verbose = false;
  app.add_flag("-v,--verbose", verbose, "Log what TileLab is doing to stderr");
  app.parse_complete_callback([&] {
    if (verbose) tl::log::set_level(tl::log::Level::debug);
  });

  tl::cli::Context ctx;
  ctx.argv0 = argv[0];
  tl::cli::add_info_command(app, ctx);
  tl::cli::add_run_command(app, ctx);
  tl::cli::add_gui_command(app, ctx);
  tl::cli::add_layout_command(app, ctx);
  tl::cli::add_banks_command(app, ctx);
  tl::cli::add_kernels_command(app, ctx);
  tl::cli::add_compile_command(app, ctx);
  tl::cli::add_worker_command(app, ctx);
  tl::cli::add_bench_command(app, ctx);
  tl::cli::add_test_command(app, ctx);
  tl::cli::add_timeline_command(app, ctx);
  tl::cli::add_roofline_command(app, ctx);
  tl::cli::add_sweep_command(app, ctx);
  tl::cli::add_results_command(app, ctx);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const std::exception& e) {
    return tl::cli::report_error(e.what());
  }
  return ctx.exit_code;
}
