// What the commands that run kernels share: session options, the result table, Ctrl-C.
#include "app/cli/run_support.hpp"

#include <cmath>
#include <cstdio>

#include "app/cli/commands.hpp"

namespace tl::cli {

void add_session_options(CLI::App* cmd, SessionArgs& a) {
  cmd->add_option("--timeout", a.timeout_s, "Seconds one run may take before the watchdog kills it")
      ->capture_default_str()
      ->check(in_range(0.1, 86400, "s"));
  cmd->add_option("--kernels-dir", a.kernels_dir, "Read kernel sources from DIR");
  cmd->add_option("--cache-dir", a.cache_dir, "Kernel and ceilings cache directory (default: $TILELAB_CACHE_DIR or ~/.cache/tilelab)");
}

void add_timer_options(CLI::App* cmd, TimingOptions& timing) {
  cmd->add_option_function<std::string>(
         "--timer", [&timing](const std::string& name) { timing.timer = parse_timer(name).value(); },
         "How each timed run is timed: events (a CUDA event pair around the launch, its latency included; default), "
         "cupti (the kernels' start to end from CUPTI activity records; libcupti opened at run time, "
         "$TL_CUPTI_LIBRARY), graph (N launches in a CUDA graph, a replay's time / N; L2 flushed before each replay "
         "only)")
      ->check(CLI::Validator(
          [](std::string& name) {
            auto t = parse_timer(name);
            return t ? std::string() : t.status().message();
          },
          "events|cupti|graph", "timer"));
  cmd->add_option("--graph-launches", timing.graph_launches,
                  "Launches per CUDA graph with --timer graph (default: as many as take about 2 ms, at most 1000)")
      ->check(in_range(1, kMaxGraphLaunches));
}

Status check_timer_options(const TimingOptions& timing) {
  if (timing.graph_launches != 0 && timing.timer != Timer::graph)
    return make_error(ErrorCode::invalid_argument, std::string("--graph-launches is for --timer graph (the timer is ") +
                                                       timer_name(timing.timer) + ")");
  return check_timing(timing);
}

std::string timer_summary(const RunRecord& r) {
  std::string s = std::string("timer: ") + timer_name(r.timer) + ", median " +
                  format_number(r.time_ms.median * 1e3, "%.3f") + " us per kernel";
  switch (r.timer) {
    case Timer::events: s += " (a CUDA event pair around each launch, launch latency included"; break;
    case Timer::cupti: s += " (each launch's kernels, start to end, from CUPTI activity records"; break;
    case Timer::graph:
      s += " (" + std::to_string(r.graph_launches) + " launches per CUDA graph, a replay's time / " +
           std::to_string(r.graph_launches);
      break;
  }
  return s + "; L2 flushed " + l2_flush_text(r.timer, r.l2_flushed) + ")";
}

Result<std::unique_ptr<Session>> open_session(const SessionArgs& a) {
  SessionOptions so;
  so.kernels_dir = a.kernels_dir;
  so.cache_dir = a.cache_dir;
  so.timeout = std::chrono::milliseconds(static_cast<long long>(a.timeout_s * 1000));
  return Session::open(so);
}

std::string format_number(double v, const char* fmt) {
  if (std::isinf(v)) return "inf";
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

void print_run_table(const std::vector<RunRecord>& records) {
  std::printf("%-12s %9s %9s %9s %8s %8s %6s %9s %9s %-6s %4s %7s %6s\n", "kernel", "median_ms", "min_ms", "max_ms",
              "TFLOP/s", "GB/s", "eff", "rel_err", "max_abs", "result", "regs", "smem_B", "spills");
  for (const RunRecord& r : records) {
    const bool timed = r.time_ms.count > 0;
    auto t = [&](double v) { return timed ? format_number(v, "%.4f") : std::string("-"); };
    const std::string eff = r.efficiency.bound.empty() ? "-" : format_number(100 * r.efficiency.value, "%.0f%%");
    const bool checked = !r.outputs.empty();
    const int smem = std::max(0, r.resources.shared_static_bytes) + static_cast<int>(r.launch.dynamic_smem);
    const int spills = std::max(0, r.resources.spill_store_bytes) + std::max(0, r.resources.spill_load_bytes);
    std::printf("%-12s %9s %9s %9s %8s %8s %6s %9s %9s %-6s %4d %7d %6d\n", r.kernel.c_str(), t(r.time_ms.median).c_str(),
                t(r.time_ms.min).c_str(), t(r.time_ms.max).c_str(),
                timed && r.flops > 0 ? format_number(r.tflops, "%.2f").c_str() : "-",
                timed ? format_number(r.gbps, "%.0f").c_str() : "-", timed ? eff.c_str() : "-",
                checked ? format_number(r.rel_error(), "%.2e").c_str() : "-",
                checked ? format_number(r.max_abs_error(), "%.2e").c_str() : "-", r.passed() ? "PASS" : "FAIL",
                r.resources.registers, smem, spills);
  }
}

// The library's row under the kernel's (same columns), and how the two compare.
void print_baseline(const RunRecord& r) {
  const BaselineResult& b = *r.baseline;
  if (!b.error.empty()) {
    std::printf("%-12s not run: %s\n", b.name.c_str(), b.error.c_str());
    return;
  }
  const bool timed = b.time_ms.count > 0 && b.time_ms.median > 0;
  auto t = [&](double v) { return timed ? format_number(v, "%.4f") : std::string("-"); };
  const double tflops = timed ? r.flops / (b.time_ms.median * 1e-3) * 1e-12 : 0;
  const double gbps = timed ? r.min_bytes / (b.time_ms.median * 1e-3) * 1e-9 : 0;
  std::printf("%-12s %9s %9s %9s %8s %8s %6s %9s\n", b.name.c_str(), t(b.time_ms.median).c_str(), t(b.time_ms.min).c_str(),
              t(b.time_ms.max).c_str(), timed && r.flops > 0 ? format_number(tflops, "%.2f").c_str() : "-",
              timed ? format_number(gbps, "%.0f").c_str() : "-", "-", format_number(b.rel_vs_kernel, "%.2e").c_str());
  if (timed && r.time_ms.median > 0)
    std::printf("%s / %s = %.2fx throughput (rel diff %.1e; the %s row's rel_err is against %s)\n", r.kernel.c_str(),
                b.name.c_str(), b.time_ms.median / r.time_ms.median, b.rel_vs_kernel, b.name.c_str(), r.kernel.c_str());
  else
    std::printf("%s vs %s: rel diff %.1e (not timed)\n", r.kernel.c_str(), b.name.c_str(), b.rel_vs_kernel);
}

namespace {
std::atomic<bool> g_interrupted{false};
extern "C" void tl_cli_on_sigint(int) {
  g_interrupted.store(true);
  std::signal(SIGINT, SIG_DFL);
}
}  // namespace

InterruptScope::InterruptScope() {
  g_interrupted.store(false);
  m_previous = std::signal(SIGINT, tl_cli_on_sigint);
}
InterruptScope::~InterruptScope() { std::signal(SIGINT, m_previous); }
const std::atomic<bool>* InterruptScope::flag() const { return &g_interrupted; }

}  // namespace tl::cli
