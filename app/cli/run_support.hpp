// Shared by `tilelab bench` and `tilelab test`: the GPU to run on (or why none), sources + cache, result tables.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/bench.hpp"
#include "runtime/cache.hpp"
#include "runtime/ceilings.hpp"
#include "runtime/device.hpp"
#include "runtime/jit.hpp"
#include "runtime/kernel_spec.hpp"

namespace tl::cli {

struct RunTarget {
  std::optional<DeviceInfo> device;  // empty: no usable GPU
  std::string why_no_device;
  DeviceLimits limits;               // the device's, else sm_90a's (what CI compiles for)
  std::optional<Ceilings> ceilings;  // cached measured ceilings of the device, when `tilelab info --measure` ran
};

// Device 0, its limits and cached ceilings (looked up under cache_dir; never measured here).
RunTarget find_run_target(const std::string& cache_dir);

// A JIT over the kernel sources (--kernels-dir rules) with the disk cache at cache_dir.
struct JitSetup {
  std::unique_ptr<KernelCache> cache;
  std::unique_ptr<Jit> jit;
};
Result<JitSetup> make_jit(const std::string& kernels_dir, const std::string& cache_dir);

std::string resolve_cache_dir(const std::string& cache_dir);

// One row per record: time, rates, efficiency, errors, verdict, resources.
void print_run_table(const std::vector<RunRecord>& records);

// "1.23e-05", "-" for 0 when `dash_zero`.
std::string format_number(double v, const char* fmt = "%.3g");

}  // namespace tl::cli
