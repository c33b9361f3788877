// The worker process and its parent-side client: spawn, handshake, watchdog, error records, simulated faults.
#include "runtime/worker/client.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <thread>

#include "runtime/core/log.hpp"

extern char** environ;

namespace tl {

// [SECTION] error records

void to_json(nlohmann::json& j, const WorkerError& e) {
  j = {{"code", error_code_name(e.code)},
       {"message", e.message},
       {"request", e.request_kind},
       {"elapsed_s", e.elapsed_s},
       {"pid", e.pid},
       {"worker_lost", e.worker_lost},
       {"stderr_tail", e.stderr_tail}};
  if (e.exit_status >= 0) j["exit_status"] = e.exit_status;
  if (e.signal > 0) {
    j["signal"] = e.signal;
    j["signal_name"] = sigabbrev_np(e.signal) ? std::string("SIG") + sigabbrev_np(e.signal) : "?";
  }
}

namespace {

std::string describe_exit(int exit_status, int sig) {
  if (sig > 0) {
    const char* abbrev = sigabbrev_np(sig);
    std::string s = "killed by signal " + std::to_string(sig);
    if (abbrev) s += std::string(" (SIG") + abbrev + ", " + strsignal(sig) + ")";
    return s;
  }
  if (exit_status >= 0) return "exited with status " + std::to_string(exit_status);
  return "ended for an unknown reason";
}

std::string tail_text(const std::vector<std::string>& tail, std::size_t lines = 3) {
  std::string s;
  std::size_t from = tail.size() > lines ? tail.size() - lines : 0;
  for (std::size_t i = from; i < tail.size(); ++i) {
    if (!s.empty()) s += " | ";
    s += tail[i];
  }
  return s;
}

// Writes to a pipe whose reader may be gone without dying of SIGPIPE, and without touching the process-wide
// disposition: block SIGPIPE in this thread, and swallow the one the write raised.
ssize_t write_nosigpipe(int fd, const void* data, std::size_t size) {
  sigset_t pipe_set, old_set;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_set, &old_set);
  ssize_t n = ::write(fd, data, size);
  int saved = errno;
  if (n < 0 && errno == EPIPE) {
    timespec zero{0, 0};
    while (sigtimedwait(&pipe_set, nullptr, &zero) > 0) {
    }
  }
  pthread_sigmask(SIG_SETMASK, &old_set, nullptr);
  errno = saved;
  return n;
}

int poll_ms(std::chrono::steady_clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
  if (left.count() <= 0) return 0;
  return static_cast<int>(std::min<long long>(left.count() + 1, 60000));
}

std::string self_executable() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return "/proc/self/exe";
  return std::string(buf, static_cast<std::size_t>(n));
}

}  // namespace

// [SECTION] client

WorkerClient::WorkerClient(WorkerOptions options) : m_options(std::move(options)) {
  m_executable = m_options.executable.empty() ? self_executable() : m_options.executable;
}

WorkerClient::~WorkerClient() { stop(); }

WorkerError WorkerClient::record(ErrorCode code, std::string message) const {
  WorkerError e;
  e.code = code;
  e.message = std::move(message);
  e.request_kind = m_current_kind;
  e.elapsed_s = std::chrono::duration<double>(Clock::now() - m_request_start).count();
  e.pid = m_pid;
  e.stderr_tail = m_stderr_tail;
  return e;
}

Status WorkerClient::fail(WorkerError e) {
  m_last_error = std::move(e);
  log::debug("worker: ", m_last_error.message);
  return m_last_error.status();
}

void WorkerClient::close_fds() {
  for (int* fd : {&m_to_worker, &m_from_worker, &m_worker_stderr}) {
    if (*fd >= 0) ::close(*fd);
    *fd = -1;
  }
}

void WorkerClient::take_stderr(const char* data, std::size_t size) {
  m_stderr_partial.append(data, size);
  std::size_t start = 0;
  for (std::size_t nl; (nl = m_stderr_partial.find('\n', start)) != std::string::npos; start = nl + 1) {
    std::string line = m_stderr_partial.substr(start, nl - start);
    log::debug("worker[", m_pid, "]: ", line);
    m_stderr_tail.push_back(std::move(line));
    if (m_stderr_tail.size() > m_options.stderr_lines) m_stderr_tail.erase(m_stderr_tail.begin());
  }
  m_stderr_partial.erase(0, start);
  if (m_stderr_partial.size() > 4096) take_stderr("\n", 1);  // a runaway line without newline
}

void WorkerClient::drain_stderr() {
  if (m_worker_stderr < 0) return;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(m_worker_stderr, buf, sizeof(buf));
    if (n > 0) {
      take_stderr(buf, static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) {
      ::close(m_worker_stderr);
      m_worker_stderr = -1;
    }
    return;  // EAGAIN: nothing more for now
  }
}

void WorkerClient::reap(bool kill_first, std::chrono::milliseconds grace) {
  m_last_exit_status = -1;
  m_last_signal = 0;
  if (m_pid <= 0) return;
  if (kill_first) ::kill(m_pid, SIGKILL);
  int status = 0;
  auto deadline = Clock::now() + grace;
  for (;;) {
    pid_t r = ::waitpid(m_pid, &status, WNOHANG);
    if (r == m_pid) break;
    if (r < 0 && errno != EINTR) {
      status = -1;
      break;
    }
    if (Clock::now() >= deadline) {
      ::kill(m_pid, SIGKILL);
      while (::waitpid(m_pid, &status, 0) < 0 && errno == EINTR) {
      }
      break;
    }
    drain_stderr();
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  if (status != -1) {
    if (WIFEXITED(status)) m_last_exit_status = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) m_last_signal = WTERMSIG(status);
  }
  // The last words (an abort message, a CUDA error) are often still in the pipe.
  if (m_worker_stderr >= 0) {
    int flags = fcntl(m_worker_stderr, F_GETFL);
    fcntl(m_worker_stderr, F_SETFL, flags | O_NONBLOCK);
    drain_stderr();
  }
  if (!m_stderr_partial.empty()) take_stderr("\n", 1);
  close_fds();
  m_pid = -1;
  m_decoder.reset();
}

Status WorkerClient::spawn() {
  int to_worker[2], from_worker[2], err[2];
  if (pipe2(to_worker, O_CLOEXEC) != 0) return make_error(ErrorCode::io, std::string("pipe: ") + strerror(errno));
  if (pipe2(from_worker, O_CLOEXEC) != 0) {
    ::close(to_worker[0]), ::close(to_worker[1]);
    return make_error(ErrorCode::io, std::string("pipe: ") + strerror(errno));
  }
  if (pipe2(err, O_CLOEXEC) != 0) {
    for (int fd : {to_worker[0], to_worker[1], from_worker[0], from_worker[1]}) ::close(fd);
    return make_error(ErrorCode::io, std::string("pipe: ") + strerror(errno));
  }
  // 1 MiB pipes (Linux's default limit for a user) instead of 64 KiB: a launch request (the cubin) and its reply
  // (the output samples) each pass in one or two writes instead of a dozen wake-ups of the other side.
  for (int fd : {to_worker[1], from_worker[1]}) (void)fcntl(fd, F_SETPIPE_SZ, 1 << 20);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, to_worker[0], 0);
  posix_spawn_file_actions_adddup2(&actions, from_worker[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err[1], 2);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  // The child starts with default signal handling and nothing blocked, whatever this thread had.
  sigset_t none, defaults;
  sigemptyset(&none);
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGPIPE);
  sigaddset(&defaults, SIGINT);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

  std::vector<std::string> args;
  args.push_back(m_executable);
  args.insert(args.end(), m_options.args.begin(), m_options.args.end());
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  int rc = posix_spawn(&pid, m_executable.c_str(), &actions, &attr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  ::close(to_worker[0]);
  ::close(from_worker[1]);
  ::close(err[1]);
  if (rc != 0) {
    for (int fd : {to_worker[1], from_worker[0], err[0]}) ::close(fd);
    return make_error(ErrorCode::not_found,
                      "cannot start the worker '" + m_executable + "': " + strerror(rc));
  }
  m_pid = pid;
  m_to_worker = to_worker[1];
  m_from_worker = from_worker[0];
  m_worker_stderr = err[0];
  for (int fd : {m_to_worker, m_from_worker, m_worker_stderr}) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  m_decoder.reset();
  m_stderr_tail.clear();
  m_stderr_partial.clear();
  ++m_starts;
  log::debug("worker: started ", m_executable, " (pid ", pid, ")");
  return {};
}

Status WorkerClient::send(const Message& m, Clock::time_point deadline, Wait& why) {
  Blob frame = encode_frame(m);
  std::size_t done = 0;
  while (done < frame.size()) {
    ssize_t n = write_nosigpipe(m_to_worker, frame.data() + done, frame.size() - done);
    if (n > 0) {
      done += static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EPIPE) {
      why = Wait::eof;
      return make_error(ErrorCode::fault, "the worker closed its input");
    }
    if (n < 0 && errno != EAGAIN) {
      why = Wait::io_error;
      return make_error(ErrorCode::io, std::string("writing to the worker: ") + strerror(errno));
    }
    // The pipe is full: wait until the worker reads, keeping its stderr drained so it cannot block on it.
    pollfd fds[2] = {{m_to_worker, POLLOUT, 0}, {m_worker_stderr, POLLIN, 0}};
    int timeout = poll_ms(deadline);
    if (timeout == 0) {
      why = Wait::timeout;
      return make_error(ErrorCode::timeout, "the worker stopped reading its input");
    }
    int r = ::poll(fds, m_worker_stderr >= 0 ? 2 : 1, timeout);
    if (r < 0 && errno != EINTR) {
      why = Wait::io_error;
      return make_error(ErrorCode::io, std::string("poll: ") + strerror(errno));
    }
    if (r > 0 && (fds[1].revents & (POLLIN | POLLHUP))) drain_stderr();
  }
  return {};
}

WorkerClient::Wait WorkerClient::receive(Message& out, Clock::time_point deadline, std::string& detail) {
  std::uint8_t buf[1 << 16];
  for (;;) {
    auto next = m_decoder.next();
    if (!next) {
      detail = next.status().message();
      return Wait::garbage;
    }
    if (next->has_value()) {
      out = std::move(**next);
      return Wait::message;
    }
    int timeout = poll_ms(deadline);
    if (timeout == 0) return Wait::timeout;
    pollfd fds[2] = {{m_from_worker, POLLIN, 0}, {m_worker_stderr, POLLIN, 0}};
    int r = ::poll(fds, m_worker_stderr >= 0 ? 2 : 1, timeout);
    if (r < 0) {
      if (errno == EINTR) continue;
      detail = std::string("poll: ") + strerror(errno);
      return Wait::io_error;
    }
    if (r > 0 && m_worker_stderr >= 0 && (fds[1].revents & (POLLIN | POLLHUP))) drain_stderr();
    if (r > 0 && (fds[0].revents & (POLLIN | POLLHUP | POLLERR))) {
      ssize_t n = ::read(m_from_worker, buf, sizeof(buf));
      if (n > 0) {
        m_decoder.feed(buf, static_cast<std::size_t>(n));
      } else if (n == 0) {
        if (m_decoder.pending() > 0)
          detail = "it died in the middle of a message (" + std::to_string(m_decoder.pending()) + " bytes of it arrived)";
        return Wait::eof;
      } else if (errno != EAGAIN && errno != EINTR) {
        detail = std::string("reading from the worker: ") + strerror(errno);
        return Wait::io_error;
      }
    }
  }
}

Status WorkerClient::handshake() {
  auto deadline = Clock::now() + m_options.start_timeout;
  std::string detail;
  Message hello;
  Wait w = receive(hello, deadline, detail);
  auto lost = [&](ErrorCode code, std::string what) {
    bool timed_out = code == ErrorCode::timeout;
    reap(timed_out || code == ErrorCode::internal || code == ErrorCode::unsupported, std::chrono::milliseconds(2000));
    WorkerError e = record(code, std::move(what));
    e.exit_status = m_last_exit_status;
    e.signal = m_last_signal;
    e.stderr_tail = m_stderr_tail;
    e.worker_lost = true;
    if (!timed_out && code != ErrorCode::unsupported) e.message += " (" + describe_exit(m_last_exit_status, m_last_signal) + ")";
    if (!m_stderr_tail.empty()) e.message += "; its last words: " + tail_text(m_stderr_tail);
    return fail(std::move(e));
  };
  if (w == Wait::timeout) return lost(ErrorCode::timeout, "the worker did not say hello within the start timeout");
  if (w == Wait::garbage) return lost(ErrorCode::internal, "the worker's greeting is not a protocol frame: " + detail +
                                                               " (is '" + m_executable + "' a TileLab worker?)");
  if (w != Wait::message) return lost(ErrorCode::fault, "the worker ended before saying hello");
  if (hello.type() != "hello" || !hello.header.contains("protocol"))
    return lost(ErrorCode::internal, "the worker's first message is not a hello");
  int theirs = hello.header.value("protocol", -1);
  if (theirs != m_options.protocol_version)
    return lost(ErrorCode::unsupported,
                "protocol mismatch: the worker '" + m_executable + "' (TileLab " +
                    hello.header.value("tilelab", std::string("?")) + ") speaks worker protocol " +
                    std::to_string(theirs) + ", this TileLab speaks " + std::to_string(m_options.protocol_version) +
                    "; run a worker from the same build");
  Message mine;
  mine.header = {{"type", "hello"}, {"protocol", m_options.protocol_version}, {"tilelab", TILELAB_VERSION}};
  Wait why = Wait::message;
  if (Status s = send(mine, deadline, why); !s.ok())
    return lost(why == Wait::timeout ? ErrorCode::timeout : ErrorCode::fault, "handshake: " + s.message());
  Message ready;
  w = receive(ready, deadline, detail);
  if (w == Wait::timeout) return lost(ErrorCode::timeout, "the worker did not confirm the handshake");
  if (w != Wait::message) return lost(ErrorCode::fault, "the worker ended during the handshake");
  if (ready.type() == "reply" && !ready.header.value("ok", true)) {
    Status refused = status_from_json(ready.header["error"]);
    return lost(refused.code(), "the worker refused the handshake: " + refused.message());
  }
  if (ready.type() != "ready") return lost(ErrorCode::internal, "the worker answered the hello with '" + ready.type() + "'");
  m_hello = hello.header;
  return {};
}

Status WorkerClient::start() {
  std::lock_guard lock(m_mutex);
  if (m_pid > 0) return {};
  m_current_kind = "start";
  m_request_start = Clock::now();
  if (Status s = spawn(); !s.ok()) return fail(record(s.code(), s.message()));
  return handshake();
}

void WorkerClient::stop() {
  std::lock_guard lock(m_mutex);
  if (m_pid <= 0) return;
  if (m_to_worker >= 0) {
    ::close(m_to_worker);  // EOF on its stdin: the worker's loop ends
    m_to_worker = -1;
  }
  reap(false, std::chrono::milliseconds(1000));
}

Result<Message> WorkerClient::call(Message request, const OnProgress& on_progress, std::chrono::milliseconds timeout) {
  std::lock_guard lock(m_mutex);
  m_current_kind = request.header.value("kind", std::string("?"));
  m_request_start = Clock::now();
  m_last_error = {};
  if (m_pid > 0) {
    // A worker that died while idle (OOM killer, a stray signal) never saw this request: replace it quietly.
    int status = 0;
    if (::waitpid(m_pid, &status, WNOHANG) == m_pid) {
      log::debug("worker: pid ", m_pid, " ended while idle; starting another");
      m_pid = -1;
      close_fds();
      m_decoder.reset();
    }
  }
  if (m_pid <= 0) {
    if (Status s = spawn(); !s.ok()) return fail(record(s.code(), s.message()));
    if (Status s = handshake(); !s.ok()) return s;
  }
  auto watchdog = timeout.count() > 0 ? timeout : m_options.timeout;
  std::uint64_t id = m_next_id++;
  request.header["id"] = id;
  request.header["type"] = "request";

  // The worker is gone (or must go): collect how it ended and build the record.
  auto lose = [&](ErrorCode code, std::string what, bool kill_it, bool say_how_it_ended = false) {
    int pid = m_pid;
    reap(kill_it, std::chrono::milliseconds(kill_it ? 5000 : 2000));
    WorkerError e = record(code, std::move(what));
    e.pid = pid;
    e.exit_status = m_last_exit_status;
    e.signal = m_last_signal;
    e.stderr_tail = m_stderr_tail;
    e.worker_lost = true;
    if (say_how_it_ended) e.message += ": " + describe_exit(e.exit_status, e.signal);
    if (!m_stderr_tail.empty()) e.message += "; its last words: " + tail_text(m_stderr_tail);
    e.message += "; the next request starts a fresh worker";
    return fail(std::move(e));
  };
  auto seconds = [](std::chrono::milliseconds ms) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.3g s", ms.count() / 1000.0);
    return std::string(buf);
  };

  Wait why = Wait::message;
  if (Status s = send(request, Clock::now() + watchdog, why); !s.ok()) {
    if (why == Wait::timeout)
      return lose(ErrorCode::timeout, "'" + m_current_kind + "' timed out: the worker did not read the request within " +
                                          seconds(watchdog) + "; killed it",
                  true);
    return lose(ErrorCode::fault, "the worker died before taking '" + m_current_kind + "'", false, true);
  }

  for (;;) {
    Message m;
    std::string detail;
    Wait w = receive(m, Clock::now() + watchdog, detail);
    switch (w) {
      case Wait::message: break;
      case Wait::timeout:
        return lose(ErrorCode::timeout,
                    "'" + m_current_kind + "' timed out: no answer within " + seconds(watchdog) +
                        " (a kernel that never finishes?); killed the worker (pid " + std::to_string(m_pid) + ")",
                    true);
      case Wait::garbage:
        return lose(ErrorCode::internal, "during '" + m_current_kind + "' the worker sent " + detail + "; killed it",
                    true);
      case Wait::io_error:
        return lose(ErrorCode::io, "during '" + m_current_kind + "': " + detail, true);
      case Wait::eof:
        return lose(ErrorCode::fault,
                    "the worker died during '" + m_current_kind + "'" + (detail.empty() ? "" : " (" + detail + ")"),
                    false, true);
    }
    if (m.id() != id)
      return lose(ErrorCode::internal,
                  "the worker answered request " + std::to_string(m.id()) + " while " + std::to_string(id) +
                      " was pending (protocol error); killed it",
                  true);
    if (m.type() == "progress") {
      if (on_progress) on_progress(m);
      continue;  // the watchdog restarts with the next wait
    }
    if (m.type() != "reply")
      return lose(ErrorCode::internal, "the worker sent an unexpected '" + m.type() + "' message; killed it", true);
    if (m.header.value("ok", false)) return m;

    Status err = status_from_json(m.header.value("error", nlohmann::json()));
    if (m.header.value("fatal", false)) {
      // A sticky error: the worker said what happened and exits; its poisoned context goes with it.
      int pid = m_pid;
      reap(false, std::chrono::milliseconds(3000));
      WorkerError e = record(err.code(), err.message() +
                                             " (the worker's CUDA context is unusable after this error; it exited, "
                                             "the next request starts a fresh worker)");
      e.pid = pid;
      e.exit_status = m_last_exit_status;
      e.signal = m_last_signal;
      e.stderr_tail = m_stderr_tail;
      e.worker_lost = true;
      return fail(std::move(e));
    }
    return fail(record(err.code(), err.message()));
  }
}

}  // namespace tl
