// The worker process for real, without a GPU: handshake, simulated timeouts/crashes/sticky faults/garbage,
// streaming, and that the same client keeps working after each failure.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <iterator>

#include "runtime/worker/client.hpp"
#include "runtime/worker/launch.hpp"
#include "runtime/worker/protocol.hpp"
#include "tests/support/gpu.hpp"
#include "tests/support/tilelab_exe.hpp"

namespace tl {
namespace {

using namespace std::chrono_literals;

WorkerOptions options(std::chrono::milliseconds timeout = 5000ms) {
  WorkerOptions o;
  o.executable = test::tilelab_exe();
  o.timeout = timeout;
  return o;
}

// The worker answers a ping with its pid.
int ping(WorkerClient& w) {
  auto r = w.call(make_request("ping"));
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r ? r->header.value("pid", -1) : -1;
}

bool process_exists(int pid) { return pid > 0 && (kill(pid, 0) == 0 || errno != ESRCH); }

TEST(Worker, HandshakeAndPing) {
  WorkerClient w(options());
  ASSERT_TRUE(w.start().ok()) << w.last_error().message;
  EXPECT_EQ(w.worker_hello().value("protocol", -1), kWorkerProtocolVersion);
  int pid = ping(w);
  EXPECT_EQ(pid, w.pid());
  EXPECT_EQ(ping(w), pid);  // the same process serves request after request
  EXPECT_EQ(w.starts(), 1);
  w.stop();
  EXPECT_FALSE(w.running());
  EXPECT_FALSE(process_exists(pid));
}

TEST(Worker, ParentRefusesAWorkerOfAnotherProtocol) {
  WorkerOptions o = options();
  o.args = {"worker", "--protocol", "99"};
  WorkerClient w(o);
  auto r = w.call(make_request("ping"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::unsupported);
  const std::string& msg = r.status().message();
  EXPECT_NE(msg.find("protocol 99"), std::string::npos) << msg;
  EXPECT_NE(msg.find("speaks " + std::to_string(kWorkerProtocolVersion)), std::string::npos) << msg;
  EXPECT_FALSE(w.running());
}

// The worker's own check, at the wire level: a parent that speaks another version is told so.
TEST(Worker, WorkerRefusesAParentOfAnotherProtocol) {
  int to[2], from[2];
  ASSERT_EQ(pipe(to), 0);
  ASSERT_EQ(pipe(from), 0);
  std::string exe = test::tilelab_exe();
  pid_t pid = fork();
  if (pid == 0) {
    dup2(to[0], 0);
    dup2(from[1], 1);
    close(to[1]);
    close(from[0]);
    execl(exe.c_str(), exe.c_str(), "worker", static_cast<char*>(nullptr));
    _exit(127);
  }
  close(to[0]);
  close(from[1]);
  FrameDecoder d;
  auto hello = read_frame(from[0], d);
  ASSERT_TRUE(hello.ok()) << hello.status().message();
  EXPECT_EQ(hello->type(), "hello");
  Message mine;
  mine.header = {{"type", "hello"}, {"protocol", 12345}, {"tilelab", "test"}};
  ASSERT_TRUE(write_frame(to[1], mine).ok());
  auto answer = read_frame(from[0], d);
  ASSERT_TRUE(answer.ok()) << answer.status().message();
  EXPECT_FALSE(answer->header.value("ok", true));
  Status refused = status_from_json(answer->header["error"]);
  EXPECT_EQ(refused.code(), ErrorCode::unsupported);
  EXPECT_NE(refused.message().find("12345"), std::string::npos) << refused.message();
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status));
  EXPECT_NE(WEXITSTATUS(status), 0);
  close(to[1]);
  close(from[0]);
}

TEST(Worker, TimeoutKillsAndTheNextRequestWorks) {
  WorkerClient w(options(500ms));
  int first = ping(w);
  auto t0 = std::chrono::steady_clock::now();
  auto r = w.call(make_request("sim.sleep", {{"seconds", 30}}));
  auto took = std::chrono::steady_clock::now() - t0;
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::timeout);
  EXPECT_LT(took, 5s);
  EXPECT_GE(took, 450ms);
  const WorkerError& e = w.last_error();
  EXPECT_EQ(e.request_kind, "sim.sleep");
  EXPECT_EQ(e.signal, SIGKILL);
  EXPECT_TRUE(e.worker_lost);
  EXPECT_EQ(e.pid, first);
  EXPECT_FALSE(process_exists(first));
  int second = ping(w);
  EXPECT_NE(second, first);
  EXPECT_EQ(w.starts(), 2);
  // A per-call timeout overrides the default.
  auto quick = w.call(make_request("sim.sleep", {{"seconds", 0.2}}), {}, 3000ms);
  EXPECT_TRUE(quick.ok()) << quick.status().message();
}

TEST(Worker, CrashesBecomeFaultRecords) {
  WorkerClient w(options());
  struct Case {
    const char* how;
    int signal;
    int exit_status;
  };
  for (Case c : {Case{"abort", SIGABRT, -1}, Case{"segv", SIGSEGV, -1}, Case{"exit", 0, 7}}) {
    SCOPED_TRACE(c.how);
    int before = ping(w);
    auto r = w.call(make_request("sim.crash", {{"how", c.how}, {"status", 7}}));
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), ErrorCode::fault);
    const WorkerError& e = w.last_error();
    EXPECT_EQ(e.signal, c.signal);
    EXPECT_EQ(e.exit_status, c.exit_status);
    EXPECT_EQ(e.pid, before);
    EXPECT_TRUE(e.worker_lost);
    ASSERT_FALSE(e.stderr_tail.empty());
    EXPECT_NE(e.stderr_tail.back().find("simulated crash"), std::string::npos) << e.stderr_tail.back();
    EXPECT_NE(e.message.find("simulated crash"), std::string::npos) << e.message;  // last words in the message
    if (c.signal) {
      EXPECT_NE(e.message.find("signal"), std::string::npos) << e.message;
    }
    nlohmann::json j = e;
    EXPECT_EQ(j["code"], "fault");
    EXPECT_EQ(j["request"], "sim.crash");
    EXPECT_EQ(j.contains("signal_name"), c.signal != 0);
    EXPECT_NE(ping(w), before);
    EXPECT_EQ(w.last_error().code, ErrorCode::ok);  // the record describes the last call
  }
  EXPECT_EQ(w.starts(), 4);
}

TEST(Worker, StickyErrorIsReportedThenTheWorkerExits) {
  WorkerClient w(options());
  int before = ping(w);
  auto r = w.call(make_request("sim.sticky"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::fault);
  EXPECT_NE(r.status().message().find("illegal memory access"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("fresh worker"), std::string::npos);
  EXPECT_EQ(w.last_error().exit_status, 3);
  EXPECT_TRUE(w.last_error().worker_lost);
  EXPECT_FALSE(w.running());
  EXPECT_FALSE(process_exists(before));
  EXPECT_NE(ping(w), before);
}

TEST(Worker, GarbageFramesAreRefusedQuickly) {
  WorkerClient w(options(20000ms));
  for (const char* how : {"magic", "json", "huge"}) {
    SCOPED_TRACE(how);
    int before = ping(w);
    auto t0 = std::chrono::steady_clock::now();
    auto r = w.call(make_request("sim.garbage", {{"how", how}}));
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), ErrorCode::internal);
    EXPECT_NE(r.status().message().find("malformed frame"), std::string::npos) << r.status().message();
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 10s);  // not the watchdog: the frame itself was refused
    EXPECT_FALSE(process_exists(before));
    EXPECT_NE(ping(w), before);
  }
  // A frame cut short by the worker's death.
  auto r = w.call(make_request("sim.garbage", {{"how", "short"}}));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::fault);
  EXPECT_NE(r.status().message().find("middle of a message"), std::string::npos) << r.status().message();
  EXPECT_EQ(w.last_error().exit_status, 4);
  ping(w);
}

TEST(Worker, StreamsProgressBeforeTheReply) {
  WorkerClient w(options(1000ms));
  std::vector<int> seen;
  std::vector<std::size_t> sizes;
  // 6 x 300 ms is longer than the 1 s watchdog: each message restarts it.
  auto r = w.call(make_request("sim.stream", {{"count", 6}, {"interval_ms", 300}}), [&](const Message& m) {
    seen.push_back(m.header.value("index", -1));
    sizes.push_back(m.blobs.empty() ? 999 : m.blobs[0].size());
  });
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->header.value("count", 0), 6);
  EXPECT_EQ(seen, (std::vector<int>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(sizes, (std::vector<std::size_t>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(w.starts(), 1);
}

TEST(Worker, LargeBlobsEchoIntact) {
  WorkerClient w(options());
  Message m = make_request("sim.echo", {{"payload", {{"a", 1}}}});
  Blob big(24u << 20);  // far beyond a pipe's buffer, both ways
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<std::uint8_t>((i * 2654435761u) >> 13);
  m.add_blob(big);
  m.add_blob({1, 2, 3});
  auto r = w.call(m);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->blobs.size(), 2u);
  EXPECT_TRUE(r->blobs[0] == big);
  EXPECT_EQ(r->blobs[1], (Blob{1, 2, 3}));
  EXPECT_EQ(r->header["payload"]["a"], 1);
}

TEST(Worker, AWorkerThatDiedWhileIdleIsReplacedQuietly) {
  WorkerClient w(options());
  int before = ping(w);
  ASSERT_EQ(kill(before, SIGKILL), 0);
  usleep(200000);  // let it become a zombie
  int after = ping(w);
  EXPECT_NE(after, before);
  EXPECT_GT(after, 0);
}

// Running and not a zombie (a reparented zombie may wait for a PID 1 that never reaps it).
bool alive(int pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  auto paren = text.rfind(')');
  return paren != std::string::npos && paren + 2 < text.size() && text[paren + 2] != 'Z';
}

TEST(Worker, TheWorkerDiesWithItsParent) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  pid_t parent = fork();
  if (parent == 0) {
    WorkerClient w(options());
    int pid = w.start().ok() ? w.pid() : -1;
    (void)!write(fds[1], &pid, sizeof(pid));
    (void)w.call(make_request("sim.sleep", {{"seconds", 60}}));  // busy: stdin EOF alone would not end it
    _exit(0);
  }
  int worker = -1;
  ASSERT_EQ(read(fds[0], &worker, sizeof(worker)), static_cast<ssize_t>(sizeof(worker)));
  usleep(200000);
  kill(parent, SIGKILL);  // no goodbye: the worker must notice on its own
  waitpid(parent, nullptr, 0);
  ASSERT_GT(worker, 0);
  bool gone = false;
  for (int i = 0; i < 100 && !gone; ++i) {
    gone = !alive(worker);
    if (!gone) usleep(50000);
  }
  EXPECT_TRUE(gone) << "worker " << worker << " outlived its parent";
  close(fds[0]);
  close(fds[1]);
}

TEST(Worker, UnknownRequestIsAnErrorNotACrash) {
  WorkerClient w(options());
  int before = ping(w);
  auto r = w.call(make_request("no.such.kind"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::invalid_argument);
  EXPECT_FALSE(w.last_error().worker_lost);
  EXPECT_EQ(ping(w), before);
}

TEST(Worker, MissingExecutableSaysSo) {
  WorkerOptions o = options();
  o.executable = "/nonexistent/tilelab";
  WorkerClient w(o);
  auto r = w.call(make_request("ping"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("/nonexistent/tilelab"), std::string::npos) << r.status().message();
}

// With no GPU, a launch goes all the way to the worker and comes back saying why it cannot run.
TEST(Worker, LaunchWithoutGpuSaysWhy) {
  if (test::no_gpu_reason().empty()) GTEST_SKIP() << "this machine has a GPU; the GPU tests cover launching";
  WorkerClient w(options());
  LaunchSpec spec;
  spec.image = {1, 2, 3};
  spec.kernel = "k";
  spec.buffers.push_back(BufferSpec::make("x", DType::f32, 16));
  spec.args.push_back(KernelArg::of_buffer(0));
  auto r = run_launch(w, spec);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::no_device);
  EXPECT_FALSE(w.last_error().worker_lost);
  auto c = w.call(make_request("ceilings"));
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), ErrorCode::no_device);
}

}  // namespace
}  // namespace tl
