// Shared by `tilelab bench` and `tilelab test`: result tables.
#pragma once

#include <atomic>
#include <csignal>
#include <string>
#include <vector>

#include "runtime/bench.hpp"
#include "session.hpp"

namespace tl::cli {

// One row per record: time, rates, efficiency, errors, verdict, resources.
void print_run_table(const std::vector<RunRecord>& records);

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
