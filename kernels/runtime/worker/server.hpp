// The worker process's request loop (`tilelab worker`) and the request kinds it serves.
#pragma once

#include <string>
#include <vector>

#include "runtime/worker/protocol.hpp"

namespace tl {

struct WorkerServeOptions {
  int in_fd = 0;
  int out_fd = 1;
  int protocol_version = kWorkerProtocolVersion;
};

// The `tilelab worker` main loop: handshake, then requests until stdin closes. Returns the process exit code
// (3 after a sticky CUDA error, which the worker reports and then exits on, so its poisoned context dies).
int serve_worker(const WorkerServeOptions& options = {});

// The request kinds the worker serves, for `tilelab worker --help` and tests.
//   ping, device, launch, sweep, ceilings, shutdown,
//   sim.sleep {seconds}, sim.crash {how: abort|segv|exit, status}, sim.sticky, sim.stream {count, interval_ms},
//   sim.echo {payload} (+ blobs echoed), sim.garbage {how: magic|short|json|huge}
std::vector<std::string> worker_request_kinds();

}  // namespace tl
