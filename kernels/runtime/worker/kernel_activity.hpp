// Kernel durations from CUPTI's activity records, attributed to timed runs (the cupti timer, Timer::cupti).
#pragma once

// While a KernelActivity lives, CUPTI records every kernel's start and end on the GPU (CONCURRENT_KERNEL) and, for
// the API calls made between begin_run(i) and end_run() on this thread, which run they belong to (an external
// correlation id of kind CUSTOM0, i + 1). A run's time is its kernels' span, first start to last end: the L2 flush
// before it, the fills and anything else launched outside the runs carry no run id and are left out.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "runtime/core/status.hpp"

namespace tl {

// A kernel's activity record: the correlation id of the API call that launched it, its GPU timestamps (ns).
struct KernelSpan {
  std::uint32_t correlation = 0;
  std::uint64_t start_ns = 0, end_ns = 0;
};
// An external correlation record: the API call `correlation` was made inside run id `run` (1-based).
struct RunCorrelation {
  std::uint32_t correlation = 0;
  std::uint64_t run = 0;
};

// Each of `runs` runs' time in ms (the span of its kernels), from the records. Errors (internal) name the first run
// with no kernel (records dropped, or a launch that ran no kernel) and a kernel whose end is before its start.
Result<std::vector<double>> run_times_ms(const std::vector<KernelSpan>& kernels,
                                         const std::vector<RunCorrelation>& correlations, std::size_t runs);

class KernelActivity {
 public:
  // Opens libcupti (cupti_library(): "cupti not found: ..." when it cannot) and enables the activity kinds.
  // Errors: unsupported (no libcupti, no CUPTI headers at build time), cuda (a CUPTI call failed, named).
  static Result<std::unique_ptr<KernelActivity>> start();
  ~KernelActivity();  // disables what start enabled
  KernelActivity(const KernelActivity&) = delete;
  KernelActivity& operator=(const KernelActivity&) = delete;

  // Around the launches of timed run `index` (0-based), on the thread that launches them.
  Status begin_run(std::size_t index);
  Status end_run();
  // With every run finished on the device (synchronized): flushes CUPTI's buffers and times runs 0..runs-1.
  Result<std::vector<double>> run_times(std::size_t runs);

 private:
  KernelActivity() = default;
};

}  // namespace tl
