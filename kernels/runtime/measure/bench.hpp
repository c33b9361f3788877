// The bridge from a prepared kernel (spec + compiled code) to a checked, timed run in the worker: the RunRecord.
#pragma once

// run_instance turns a PreparedKernel into a LaunchSpec, runs it through the worker, rebuilds the inputs on the
// host (the same seeded bits the worker wrote), evaluates the spec's float64 reference at the sampled output
// positions and compares. Whatever goes wrong after the kernel is prepared — a fault, a hang, a worker that died,
// a reference that threw — ends up in RunRecord::failure; run_instance never throws.

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "runtime/core/status.hpp"
#include "runtime/device/ceilings.hpp"
#include "runtime/results/run_record.hpp"
#include "runtime/spec/kernel_spec.hpp"
#include "runtime/spec/registry.hpp"
#include "runtime/trace/timeline.hpp"
#include "runtime/worker/client.hpp"
#include "runtime/worker/launch.hpp"

namespace tl {

// ArgSpec tensors become buffers (same fill, role in -> input, out -> output, inout -> inout) passed by pointer;
// scalars become KernelArg::of_* of their dtype. Errors (unsupported) on a scalar dtype a kernel cannot take by
// value here (f16, bf16, fp8).
Result<LaunchSpec> to_launch_spec(const KernelInstance& instance, const CompiledKernel& compiled,
                                  TimingOptions timing = {});

// What checking a run computes from the problem alone — host copies of the inputs (the same seeded bits the worker
// wrote) and the float64 reference at the sampled positions — kept for the next run of the same problem, so a
// sweep's configs pay only for their own kernel. One cache per thread of runs; it holds one problem at a time.
struct ReferenceCache {
  std::string key;  // kernel, problem and argument specs (fills included)
  ReferenceInputs inputs;
  struct Output {
    std::vector<std::uint64_t> positions;
    std::vector<double> reference;
  };
  std::map<std::string, Output> outputs;
};

struct RunOptions {
  TimingOptions timing;
  int device = 0;                        // the GPU it runs on (the worker selects it by index)
  std::chrono::milliseconds timeout{0};  // watchdog for the launch; 0 = the worker's default
  std::uint64_t max_samples = 1u << 16;  // output positions checked against the reference (0 = all)
  const Ceilings* ceilings = nullptr;    // this device's measured ceilings, for the efficiency (optional)
  bool keep_data = false;                // keep inputs, whole outputs and the reference values (for --dump)
  std::string vs;                        // "cublas", "cudnn": also time the spec's library baseline in the same worker
  // Record a pipeline timeline: after the timed runs, the probe build (PreparedKernel::timeline, from
  // add_timeline_build) runs once more with a probe buffer; RunRecord::timeline gets it decoded.
  bool timeline = false;
  bool timeline_timed = false;          // also time the probe build, alternated with the kernel (RunRecord::timeline_time_ms)
  std::uint32_t timeline_capacity = 0;  // marks per warp; 0: the spec's probe_capacity, else probe::kDefaultCapacity
  ReferenceCache* reference_cache = nullptr;  // optional: reuse inputs and reference across runs of one problem
};

// Compiles the probe build of `kernel` (its JIT options plus -DTL_TIMELINE=1: a cache entry of its own) into
// kernel.timeline. Errors: compile, unsupported (a spec that lists no probes).
Status add_timeline_build(const Jit& jit, PreparedKernel& kernel, JitOptions options = {});
// The pipeline depth `instance` was built with, for its timeline's stage statistics: the config's num_stages, or
// where that is 0 (auto) the depth the spec chose, read from the kernel's template argument in its name expression
// (".num_stages = N"); 0 (unknown) for a kernel without the parameter.
int built_stages(const KernelInstance& instance);

// The baseline `vs` ("cublas", "cudnn") of an instance, checked against its tensors (names, dtypes, sizes). Errors:
// invalid_argument for an unknown `vs`, unsupported for a kernel without that library's equivalent. A problem the
// library cannot run (cudnn: a head dim over 256) still gets its spec: the worker reports the refusal as its row.
Result<BaselineSpec> baseline_for(const KernelInstance& instance, const std::string& vs);
// Its first checks alone, from the validated values (no instance: nothing built): `vs` is a library and the spec has
// that library's equivalent for this problem and config. Errors as baseline_for's.
Status baseline_available(const KernelSpec& spec, const Values& problem, const Values& config, const std::string& vs);
// The library `vs` takes for this instance ("cublas", "cudnn"), "" when it has no baseline.
std::string baseline_of(const KernelInstance& instance);

// Output `output`'s reference at `indices`: the spec's reference, on several threads in chunks of whole sampling
// units when the spec allows it (KernelSpec::reference_thread_safe); the values are those of one call.
Result<std::vector<double>> compute_reference(const KernelInstance& instance, const ReferenceInputs& inputs,
                                              const std::string& output, const std::vector<std::int64_t>& indices);

RunRecord run_instance(WorkerClient& worker, const PreparedKernel& kernel, const RunOptions& options = {});

}  // namespace tl
