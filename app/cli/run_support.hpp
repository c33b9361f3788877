// Shared by the commands that run kernels (bench, test, sweep, timeline): their session options, result tables,
// Ctrl-C.
#pragma once

#include <atomic>
#include <csignal>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "runtime/measure/bench.hpp"
#include "session/session.hpp"

namespace tl::cli {

// What every command that opens a Session takes: where sources and caches are, how long one run may take.
struct SessionArgs {
  explicit SessionArgs(double default_timeout_s = 30) : timeout_s(default_timeout_s) {}
  std::string kernels_dir, cache_dir;
  double timeout_s;
};
// Adds --timeout, --kernels-dir and --cache-dir to `cmd`.
void add_session_options(CLI::App* cmd, SessionArgs& a);
// The session of these options; the error's message is what to print.
Result<std::unique_ptr<Session>> open_session(const SessionArgs& a);

// Adds --timer and --graph-launches (how timed runs are timed: TimingOptions::timer) to `cmd`, into `timing`.
void add_timer_options(CLI::App* cmd, TimingOptions& timing);
// After parsing: an error naming the option when the two do not go together (--graph-launches without --timer graph).
Status check_timer_options(const TimingOptions& timing);
// "timer: graph (...)": how a record's times were taken, in one line.
std::string timer_summary(const RunRecord& r);

// One row per record: time, rates, efficiency, errors, verdict, resources.
void print_run_table(const std::vector<RunRecord>& records);
// The record's library baseline (`--vs`) as a row under print_run_table's (same columns), and how the two compare.
void print_baseline(const RunRecord& r);

// "1.23e-05", "-" for 0 when `dash_zero`.
std::string format_number(double v, const char* fmt = "%.3g");

// While alive, the first Ctrl-C sets flag() (long work — a script, a sweep — stops after the current step); a
// second one ends the process as usual. The previous SIGINT handler comes back with the destructor.
class InterruptScope {
 public:
  InterruptScope();
  ~InterruptScope();
  InterruptScope(const InterruptScope&) = delete;
  InterruptScope& operator=(const InterruptScope&) = delete;
  const std::atomic<bool>* flag() const;

 private:
  void (*m_previous)(int);
};

}  // namespace tl::cli
