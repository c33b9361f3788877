// `tilelab` entry point: parses the command line (CLI11) and dispatches to a subcommand.
#include <cmath>
#include <iostream>
#include <new>
#include <sstream>

#include "app/cli/commands.hpp"
#include "runtime/core/log.hpp"

namespace tl::cli {

int report_error(const std::string& message, int code) {
  std::cerr << "tilelab: error: " << message << '\n';
  return code;
}

namespace {
std::string number_text(double v) {
  std::ostringstream s;
  if (v == std::floor(v) && std::fabs(v) < 1e18) s << static_cast<long long>(v);
  else s << v;
  return s.str();
}
}  // namespace

CLI::Validator in_range(double lo, double hi, const std::string& unit) {
  const std::string range = number_text(lo) + " to " + number_text(hi) + (unit.empty() ? "" : " " + unit);
  return CLI::Validator(
      [lo, hi, range](std::string& text) -> std::string {
        double v = 0;
        if (!CLI::detail::lexical_cast(text, v)) return "'" + text + "' is not a number (expected " + range + ")";
        if (!(v >= lo && v <= hi)) return text + " is out of range (expected " + range + ")";
        return {};
      },
      "[" + range + "]", "in_range");
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
  } catch (const CLI::Success& e) {
    return app.exit(e);  // --help, --version
  } catch (const CLI::ParseError& e) {
    // Every usage error exits 1 (CLI11's own codes, 100-120, would tell a script nothing it can use).
    const auto parsed = app.get_subcommands();
    return tl::cli::report_error(std::string(e.what()) + " (see tilelab " +
                                 (parsed.empty() ? std::string() : parsed.front()->get_name() + " ") + "--help)");
  } catch (const std::bad_alloc&) {
    // what() is "std::bad_alloc", which tells a user nothing: a problem too large for this machine's memory.
    return tl::cli::report_error("out of host memory (std::bad_alloc): the problem, sweep or input is larger than "
                                 "this machine's memory can hold; make it smaller");
  } catch (const std::exception& e) {
    return tl::cli::report_error(e.what());
  }
  return ctx.exit_code;
}
