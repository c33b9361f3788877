// A Session: everything running library (and user) kernels needs — target device, JIT + cache, the worker.
#pragma once

// The CLI commands, the Lua `tl` API and the GUI all run kernels the same way: find the GPU (or why there is
// none), compile through one Jit over the kernel sources, and launch in one worker process that is started on
// first use and restarted after a fault. A Session holds those; it owns no results (see the results store).
// GPU 0 is the session's target; a sweep over several GPUs runs each in a worker of its own (worker(gpu)), so a
// fault on one restarts only that GPU's worker. One thread per GPU may use that GPU's worker and run() at once.

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "runtime/device/ceilings.hpp"
#include "runtime/device/device.hpp"
#include "runtime/jit/cache.hpp"
#include "runtime/jit/jit.hpp"
#include "runtime/measure/bench.hpp"
#include "runtime/spec/kernel_spec.hpp"
#include "runtime/spec/registry.hpp"
#include "runtime/worker/client.hpp"

namespace tl {

struct RunTarget {
  std::optional<DeviceInfo> device;  // empty: no usable GPU
  std::string why_no_device;
  DeviceLimits limits;               // the device's, else sm_90a's (what CI compiles for)
  std::optional<Ceilings> ceilings;  // cached measured ceilings of the device, when `tilelab info --measure` ran
};

std::string resolve_cache_dir(const std::string& cache_dir);  // "" -> default_cache_dir()

// Device `index`, its limits and cached ceilings (looked up under cache_dir; never measured here).
RunTarget find_run_target(const std::string& cache_dir, int index = 0);

struct CeilingsSource {
  Ceilings ceilings;
  std::string from;  // said to the user: which file or device they came from
};

// The ceilings a roofline is drawn against: the device profile `profile` when given; else this machine's GPU 0
// (cached, measured through `worker` — a fresh one when null — when not); else a cached ceilings file under
// cache_dir (preferring one measured on the device the run records name). Errors: not_found when there are
// none (callers add how to pass a profile), or the profile's or the measurement's error.
Result<CeilingsSource> find_ceilings(const std::string& profile, const std::string& cache_dir,
                                     const std::vector<nlohmann::json>& records, WorkerClient* worker = nullptr);

struct SessionOptions {
  std::string kernels_dir;  // "" -> kernel_sources() rules (env, build tree, embedded)
  std::string cache_dir;    // "" -> $TILELAB_CACHE_DIR or ~/.cache/tilelab
  std::chrono::milliseconds timeout{30000};  // watchdog per launch
  WorkerOptions worker;     // executable/args (tests point these at another binary); timeout is overridden
};

class Session {
 public:
  // Errors only when the kernel sources cannot be found (a --kernels-dir without kernels).
  static Result<std::unique_ptr<Session>> open(SessionOptions options = {});

  const RunTarget& target() const { return m_gpu0->target; }  // GPU 0's
  bool has_device() const { return m_gpu0->target.device.has_value(); }
  // GPUs this process sees (0 when none: target().why_no_device says why).
  int gpu_count() const { return m_gpu_count; }
  // GPU `index` (looked up on first use; one that does not exist has why_no_device saying so).
  const RunTarget& target(int gpu);
  const std::string& cache_dir() const { return m_cache_dir; }
  Registry& registry();
  Jit& jit() { return *m_jit; }

  // Schema checks and can_implement against this target's limits; no compile.
  Result<KernelInstance> instantiate(const std::string& kernel, const std::map<std::string, std::string>& problem,
                                     const std::map<std::string, std::string>& config) const;
  // instantiate + compile for the target's arch.
  Result<PreparedKernel> prepare(const std::string& kernel, const std::map<std::string, std::string>& problem,
                                 const std::map<std::string, std::string>& config, JitOptions options = {}) const;

  // Runs on GPU options.device in its worker (started on first use). Fills in the ceilings and the timeout when
  // the options leave them unset. Without that GPU the record's failure says why; never throws.
  RunRecord run(const PreparedKernel& kernel, RunOptions options = {});

  // One checked, timed run from names and key=value maps, as `tilelab bench` and the Lua `:run` do it: validate
  // (schemas, can_implement; before asking for a GPU, so a config that could never run says so anywhere), check
  // the baseline `options.vs`, require a device, compile (and the probe build when options.timeline), run.
  // Errors before the run come back as the Status: not_found, invalid_argument/unsupported (prefixed
  // "invalid problem/config: "), no_device ("cannot run K: no GPU: ..."), compile. The run's own failures
  // (fault, timeout, verification) are in the record.
  struct Bench {
    PreparedKernel prepared;
    RunRecord record;
  };
  Result<Bench> bench(const std::string& kernel, const std::map<std::string, std::string>& problem,
                      const std::map<std::string, std::string>& config, RunOptions options);

  WorkerClient& worker(int gpu = 0);  // the worker that runs on GPU `gpu`

  // The device's measured ceilings: the cached ones, else measured now in the worker and cached (on disk and for
  // the efficiency of this session's later runs). Errors: no_device, or what the measurement hit.
  Result<Ceilings> ceilings();

 private:
  struct Gpu {
    RunTarget target;
    std::unique_ptr<WorkerClient> worker;
  };
  Session() = default;
  Gpu& gpu(int index);  // made on first use

  SessionOptions m_options;
  std::string m_cache_dir;
  std::unique_ptr<KernelCache> m_cache;
  std::unique_ptr<Jit> m_jit;
  int m_gpu_count = 0;
  std::mutex m_gpus_mutex;     // guards the map's shape; each Gpu is used by one thread at a time
  std::map<int, Gpu> m_gpus;   // nodes never move: references to them stay valid
  Gpu* m_gpu0 = nullptr;
};

}  // namespace tl
