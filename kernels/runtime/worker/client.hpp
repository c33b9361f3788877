// The parent's side of the GPU worker process: the client with its watchdog, and its error records.
#pragma once

// All GPU work runs in a `tilelab worker` child, so a kernel that faults (and poisons its CUDA context) or
// hangs costs a restart of that child, never the parent's state. The client sends one request at a time and
// waits for its reply; a watchdog kills a worker that stays silent past the deadline. Whatever went wrong
// becomes an error record (timeout, fault, ...) and the next request starts a fresh worker.

#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/core/status.hpp"
#include "runtime/worker/protocol.hpp"

namespace tl {

struct WorkerOptions {
  // The executable and its arguments; empty executable = this process's own binary (/proc/self/exe).
  std::string executable;
  std::vector<std::string> args = {"worker"};
  // Watchdog: the longest the worker may stay silent during a request. Each progress message restarts it,
  // so a sweep of many launches is bounded per launch, not in total.
  std::chrono::milliseconds timeout{30000};
  std::chrono::milliseconds start_timeout{15000};  // spawn + handshake
  int protocol_version = kWorkerProtocolVersion;   // tests set another to check that mismatches are refused
  std::size_t stderr_lines = 20;                   // how much of the worker's stderr an error record keeps
};

// What went wrong with a request, with enough detail to show or store (the "error record").
struct WorkerError {
  ErrorCode code = ErrorCode::ok;
  std::string message;
  std::string request_kind;
  double elapsed_s = 0;
  int pid = 0;
  int exit_status = -1;  // when the worker exited by itself
  int signal = 0;        // when a signal ended it (SIGKILL from the watchdog included)
  bool worker_lost = false;  // the worker is gone; the next request starts a fresh one
  std::vector<std::string> stderr_tail;

  Status status() const { return {code, message}; }
};
void to_json(nlohmann::json& j, const WorkerError& e);

class WorkerClient {
 public:
  using OnProgress = std::function<void(const Message&)>;

  explicit WorkerClient(WorkerOptions options = {});
  ~WorkerClient();
  WorkerClient(const WorkerClient&) = delete;
  WorkerClient& operator=(const WorkerClient&) = delete;

  // Sends `request` (built with make_request), calls `on_progress` for each progress message, and returns the
  // final reply when it is ok. On failure returns the error (last_error() has the full record). Starts the
  // worker first when none is running. `timeout` overrides the options' watchdog for this request.
  // `on_progress` must not throw.
  Result<Message> call(Message request, const OnProgress& on_progress = {},
                       std::chrono::milliseconds timeout = std::chrono::milliseconds(0));

  const WorkerError& last_error() const { return m_last_error; }
  bool running() const { return m_pid > 0; }
  int pid() const { return m_pid; }
  int starts() const { return m_starts; }  // how many worker processes this client has started
  const nlohmann::json& worker_hello() const { return m_hello; }
  // Starts the worker now (it is otherwise started lazily by call()).
  Status start();
  // Asks the worker to exit (closes its stdin), then kills it if it lingers.
  void stop();

 private:
  using Clock = std::chrono::steady_clock;
  enum class Wait { message, timeout, eof, io_error, garbage };

  Status spawn();
  Status handshake();
  Status send(const Message& m, Clock::time_point deadline, Wait& why);
  Wait receive(Message& out, Clock::time_point deadline, std::string& detail);
  void drain_stderr();
  void take_stderr(const char* data, std::size_t size);
  void reap(bool kill_first, std::chrono::milliseconds grace);
  void close_fds();
  Status fail(WorkerError record);
  WorkerError record(ErrorCode code, std::string message) const;

  WorkerOptions m_options;
  std::string m_executable;
  std::mutex m_mutex;
  int m_pid = -1;
  int m_to_worker = -1, m_from_worker = -1, m_worker_stderr = -1;
  FrameDecoder m_decoder;
  std::vector<std::string> m_stderr_tail;
  std::string m_stderr_partial;
  int m_last_exit_status = -1, m_last_signal = 0;
  std::uint64_t m_next_id = 1;
  int m_starts = 0;
  std::string m_current_kind;
  Clock::time_point m_request_start;
  nlohmann::json m_hello;
  WorkerError m_last_error;
};

}  // namespace tl
