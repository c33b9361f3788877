// The worker's request loop: handshake, one request at a time, simulated faults for tests, exit on a sticky error.
#include "runtime/worker/server.hpp"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <thread>

#include "runtime/worker/ceilings.hpp"
#include "runtime/worker/channel.hpp"
#include "runtime/worker/gpu.hpp"

namespace tl {

namespace {

using Handler = std::function<Result<Message>(const Message&, WorkerChannel&, int out_fd)>;

void sleep_seconds(double s) {
  if (s > 0) std::this_thread::sleep_for(std::chrono::duration<double>(s));
}

Result<Message> sim_sleep(const Message& req, WorkerChannel&, int) {
  double s = req.header.value("seconds", 1.0);
  sleep_seconds(s);
  return make_reply(0, {{"slept_s", s}});
}

Result<Message> sim_crash(const Message& req, WorkerChannel&, int) {
  std::string how = req.header.value("how", std::string("abort"));
  std::fprintf(stderr, "tilelab worker: simulated crash (%s)\n", how.c_str());
  std::fflush(stderr);
  if (how == "abort") std::abort();
  if (how == "segv") ::raise(SIGSEGV);
  if (how == "exit") std::_Exit(req.header.value("status", 7));
  return make_error(ErrorCode::invalid_argument, "sim.crash: 'how' is abort, segv or exit");
}

Result<Message> sim_stream(const Message& req, WorkerChannel& channel, int) {
  int count = req.header.value("count", 3);
  double interval = req.header.value("interval_ms", 0.0) / 1000.0;
  for (int i = 0; i < count; ++i) {
    sleep_seconds(interval);
    Blob b(static_cast<std::size_t>(i));
    for (std::size_t k = 0; k < b.size(); ++k) b[k] = static_cast<std::uint8_t>(i + k);
    TL_RETURN_IF_ERROR(channel.progress({{"index", i}, {"of", count}, {"data", 0}}, {std::move(b)}));
  }
  return make_reply(0, {{"count", count}});
}

Result<Message> sim_echo(const Message& req, WorkerChannel&, int) {
  Message reply = make_reply(0, {{"payload", req.header.value("payload", nlohmann::json())}});
  reply.blobs = req.blobs;
  return reply;
}

Result<Message> sim_garbage(const Message& req, WorkerChannel&, int out_fd) {
  std::string how = req.header.value("how", std::string("magic"));
  auto put = [&](const void* p, std::size_t n) { (void)!::write(out_fd, p, n); };
  if (how == "magic") {
    const char junk[] = "this is not a frame\n";
    put(junk, sizeof(junk));
    sleep_seconds(3600);  // a confused worker that keeps running: the parent must not wait for it
  } else if (how == "short") {
    // A frame that announces 1000 header bytes and delivers 10, then the worker dies.
    Blob prefix(kFrameMagic, kFrameMagic + 4);
    std::uint8_t sizes[8] = {0xE8, 0x03, 0, 0, 0, 0, 0, 0};
    prefix.insert(prefix.end(), sizes, sizes + 8);
    put(prefix.data(), prefix.size());
    put("{\"type\":\"r", 10);
    std::_Exit(4);
  } else if (how == "json") {
    Blob frame(kFrameMagic, kFrameMagic + 4);
    const char body[] = "{not json";
    std::uint8_t sizes[8] = {static_cast<std::uint8_t>(sizeof(body) - 1), 0, 0, 0, 0, 0, 0, 0};
    frame.insert(frame.end(), sizes, sizes + 8);
    frame.insert(frame.end(), body, body + sizeof(body) - 1);
    put(frame.data(), frame.size());
    sleep_seconds(3600);
  } else if (how == "huge") {
    Blob prefix(kFrameMagic, kFrameMagic + 4);
    std::uint8_t sizes[8] = {0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0};
    prefix.insert(prefix.end(), sizes, sizes + 8);
    put(prefix.data(), prefix.size());
    sleep_seconds(3600);
  }
  return make_error(ErrorCode::invalid_argument, "sim.garbage: 'how' is magic, short, json or huge");
}

const std::map<std::string, Handler>& handlers() {
  static const std::map<std::string, Handler> table = {
      {"ping", [](const Message&, WorkerChannel&, int) -> Result<Message> {
         return make_reply(0, {{"pid", static_cast<int>(getpid())}});
       }},
      {"device", [](const Message& r, WorkerChannel& c, int) { return serve_device(r, c); }},
      {"launch", [](const Message& r, WorkerChannel& c, int) { return serve_launch(r, c); }},
      {"sweep", [](const Message& r, WorkerChannel& c, int) { return serve_sweep(r, c); }},
      {"ceilings", [](const Message& r, WorkerChannel& c, int) { return serve_ceilings(r, c); }},
      {"sim.sleep", sim_sleep},
      {"sim.crash", sim_crash},
      {"sim.stream", sim_stream},
      {"sim.echo", sim_echo},
      {"sim.garbage", sim_garbage},
  };
  return table;
}

}  // namespace

std::vector<std::string> worker_request_kinds() {
  std::vector<std::string> kinds;
  for (const auto& [k, h] : handlers()) kinds.push_back(k);
  kinds.push_back("sim.sticky");
  kinds.push_back("shutdown");
  return kinds;
}

int serve_worker(const WorkerServeOptions& options) {
  // Ctrl-C at a terminal reaches the whole process group; the parent decides what it means (a sweep stops after
  // the current run), so the run in flight must not die of it here.
  ::signal(SIGINT, SIG_IGN);
  // Die with the parent, even when stuck in a kernel (its watchdog cannot help once it is gone). Not
  // PR_SET_PDEATHSIG: that fires when the spawning *thread* ends, and a GUI may spawn from a short-lived one.
  std::thread([parent = getppid()] {
    for (;;) {
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
      if (getppid() != parent) std::_Exit(5);
    }
  }).detach();
  // Frames own the real stdout; a stray printf anywhere must not corrupt them, so fd 1 becomes stderr.
  int out_fd = options.out_fd;
  if (out_fd == 1) {
    out_fd = fcntl(1, F_DUPFD_CLOEXEC, 3);
    dup2(2, 1);
  }
  int in_fd = options.in_fd;

  Message hello;
  hello.header = {{"type", "hello"},
                  {"protocol", options.protocol_version},
                  {"tilelab", TILELAB_VERSION},
                  {"pid", static_cast<int>(getpid())}};
  if (!write_frame(out_fd, hello).ok()) return 2;
  FrameDecoder decoder;
  auto theirs = read_frame(in_fd, decoder);
  if (!theirs) return theirs.status().code() == ErrorCode::not_found ? 0 : 2;
  int version = theirs->header.value("protocol", -1);
  if (theirs->type() != "hello" || version != options.protocol_version) {
    Status refused = make_error(ErrorCode::unsupported,
                                "protocol mismatch: this worker (TileLab " TILELAB_VERSION ") speaks worker protocol " +
                                    std::to_string(options.protocol_version) + ", the parent (TileLab " +
                                    theirs->header.value("tilelab", std::string("?")) + ") speaks " +
                                    std::to_string(version) + "; run a worker from the same build");
    std::fprintf(stderr, "tilelab worker: %s\n", refused.message().c_str());
    (void)write_frame(out_fd, make_error_reply(0, refused));
    return 2;
  }
  Message ready;
  ready.header = {{"type", "ready"}};
  if (!write_frame(out_fd, ready).ok()) return 2;

  for (;;) {
    auto req = read_frame(in_fd, decoder);
    if (!req) {
      if (req.status().code() == ErrorCode::not_found) return 0;  // the parent closed our stdin
      std::fprintf(stderr, "tilelab worker: %s\n", req.status().message().c_str());
      return 2;
    }
    std::uint64_t id = req->id();
    std::string kind = req->header.value("kind", std::string());
    if (req->type() != "request") {
      (void)write_frame(out_fd, make_error_reply(id, make_error(ErrorCode::internal, "expected a request, got '" +
                                                                                         req->type() + "'")));
      continue;
    }
    if (kind == "shutdown") {
      (void)write_frame(out_fd, make_reply(id));
      return 0;
    }
    if (kind == "sim.sticky") {
      // What the launch path does after an illegal address: report, then exit so the context dies with us.
      Status err = make_error(ErrorCode::fault,
                              "simulated sticky CUDA error: an illegal memory access was encountered "
                              "(cudaErrorIllegalAddress)");
      std::fprintf(stderr, "tilelab worker: %s; exiting\n", err.message().c_str());
      (void)write_frame(out_fd, make_error_reply(id, err, /*fatal=*/true));
      return 3;
    }
    auto it = handlers().find(kind);
    if (it == handlers().end()) {
      (void)write_frame(out_fd, make_error_reply(id, make_error(ErrorCode::invalid_argument,
                                                                "the worker has no request kind '" + kind + "'")));
      continue;
    }
    WorkerChannel channel(out_fd, id);
    Result<Message> result = make_error(ErrorCode::internal, "no result");
    try {
      result = it->second(*req, channel, out_fd);
    } catch (const std::exception& e) {
      result = make_error(ErrorCode::internal, std::string("worker: ") + e.what());
    }
    if (result) {
      Message reply = std::move(result.value());
      reply.header["type"] = "reply";
      reply.header["id"] = id;
      reply.header["ok"] = true;
      if (!write_frame(out_fd, reply).ok()) return 2;
      continue;
    }
    bool fatal = cuda_context_poisoned();
    if (fatal) std::fprintf(stderr, "tilelab worker: %s; exiting\n", result.status().message().c_str());
    if (!write_frame(out_fd, make_error_reply(id, result.status(), fatal)).ok()) return 2;
    if (fatal) return 3;
  }
}

}  // namespace tl
