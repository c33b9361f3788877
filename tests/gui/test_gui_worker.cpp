// The desktop app is its own GPU worker: its Session starts `/proc/self/exe worker`, so tilelab-gui must speak the
// worker protocol (it once answered "The following argument was not expected: worker" and no GUI run could start).
#include <gtest/gtest.h>

#include "runtime/worker/client.hpp"
#include "runtime/worker/protocol.hpp"

namespace tl {
namespace {

TEST(GuiWorker, TheGuiBinaryServesTheWorkerProtocol) {
  WorkerOptions o;
  o.executable = TL_GUI_EXE;
  o.timeout = std::chrono::milliseconds(10000);
  WorkerClient w(o);
  ASSERT_TRUE(w.start().ok()) << w.last_error().message;
  EXPECT_EQ(w.worker_hello().value("protocol", -1), kWorkerProtocolVersion);
  auto r = w.call(make_request("ping"));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->header.value("pid", -1), w.pid());
  w.stop();
}

TEST(GuiWorker, ProtocolFlagReachesTheWorker) {
  WorkerOptions o;
  o.executable = TL_GUI_EXE;
  o.args = {"worker", "--protocol", "99"};
  WorkerClient w(o);
  auto r = w.call(make_request("ping"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::unsupported);
}

}  // namespace
}  // namespace tl
