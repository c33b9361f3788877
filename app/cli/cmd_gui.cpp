// `tilelab gui [...]`: starts the desktop app, a sibling executable, so the CLI itself never links GL.
#include <unistd.h>

#include <filesystem>
#include <vector>

#include "app/cli/commands.hpp"

namespace tl::cli {

void add_gui_command(CLI::App& app, Context& ctx) {
  auto* cmd = app.add_subcommand("gui", "Open the desktop workbench (needs a display; tilelab gui --help lists its "
                                      "options)");
  // Every option, --help included, is the app's: handed to tilelab-gui untouched, which lists them all.
  cmd->set_help_flag();
  cmd->allow_extras();
  cmd->callback([&ctx, cmd] {
    std::error_code ec;
    auto self = std::filesystem::canonical("/proc/self/exe", ec);
    std::filesystem::path gui = (ec ? std::filesystem::path(ctx.argv0) : self).parent_path() / "tilelab-gui";
    if (!std::filesystem::exists(gui)) {
      ctx.exit_code = report_error("the desktop app was not built (" + gui.string() +
                                   " is missing); configure with -DTL_BUILD_GUI=ON");
      return;
    }
    std::vector<std::string> args{gui.string()};
    for (const auto& extra : cmd->remaining()) args.push_back(extra);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(gui.c_str(), argv.data());
    ctx.exit_code = report_error("could not start " + gui.string());
  });
}

}  // namespace tl::cli
