// `tilelab worker` (hidden): the GPU worker process the CLI and GUI spawn; speaks the protocol on stdin/stdout.
#include "app/cli/commands.hpp"
#include "runtime/worker/server.hpp"

namespace tl::cli {

void add_worker_command(CLI::App& app, Context& ctx) {
  auto* cmd = app.add_subcommand("worker", "Serve GPU requests on stdin/stdout (started by TileLab itself)");
  cmd->group("");  // hidden from --help: users never run it by hand
  auto protocol = std::make_shared<int>(kWorkerProtocolVersion);
  cmd->add_option("--protocol", *protocol, "Speak this protocol version (tests of the version check)");
  cmd->callback([&ctx, protocol] {
    WorkerServeOptions options;
    options.protocol_version = *protocol;
    ctx.exit_code = serve_worker(options);
  });
}

}  // namespace tl::cli
