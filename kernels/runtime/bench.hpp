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

#include "runtime/ceilings.hpp"
#include "runtime/kernel_spec.hpp"
#include "runtime/launch.hpp"
#include "runtime/registry.hpp"
#include "runtime/status.hpp"
#include "runtime/timeline.hpp"
#include "runtime/worker.hpp"

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
  std::chrono::milliseconds timeout{0};  // watchdog for the launch; 0 = the worker's default
  std::uint64_t max_samples = 1u << 16;  // output positions checked against the reference (0 = all)
  const Ceilings* ceilings = nullptr;    // this device's measured ceilings, for the efficiency (optional)
  bool keep_data = false;                // keep inputs, whole outputs and the reference values (for --dump)
  std::string vs;                        // "cublas": also time the spec's cuBLAS baseline in the same worker
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

// The baseline `vs` ("cublas") of an instance, checked against its tensors (names, dtypes, sizes). Errors:
// invalid_argument for an unknown `vs`, unsupported for a kernel without a cuBLAS equivalent.
Result<BaselineSpec> baseline_for(const KernelInstance& instance, const std::string& vs);

// One output's check, and (with keep_data) what it was checked on.
struct OutputCheck {
  std::string name;
  DType dtype = DType::f32;
  std::vector<std::int64_t> shape;
  Comparison comparison;
  std::vector<std::uint64_t> positions;  // keep_data: the sampled positions
  std::vector<double> samples;           // keep_data: the output there
  std::vector<double> reference;         // keep_data: the float64 reference there
  Blob data;                             // keep_data: the whole output, raw elements of dtype
};

// Which roofline ceiling binds this kernel, and how close it came.
struct Efficiency {
  std::string bound;     // "memory" or "compute"; empty when no ceilings were available
  std::string ceiling;   // "hbm_copy", "fp32_fma", "bf16_tensor", "fp16_tensor"
  double ceiling_value = 0;  // bytes/s or flop/s
  double value = 0;      // achieved / ceiling, 0..1 (0 when unknown)
};

struct RunFailure {
  ErrorCode code = ErrorCode::ok;
  std::string message;
  std::optional<WorkerError> worker;  // the worker's error record, when the failure came from the worker
};

struct RunRecord {
  std::string kernel, family, name_expression, arch;
  std::map<std::string, std::string> problem, config;
  std::string device;
  LaunchGeometry launch;
  ResourceUsage resources;      // ptxas
  KernelAttributes attributes;  // what the loaded kernel reported on the device
  double flops = 0, min_bytes = 0;
  std::string input_dtype = "f32";  // of the first input tensor: picks the compute ceiling (tensor cores or FP32)
  Stats time_ms;
  double tflops = 0;  // flops / median
  double gbps = 0;    // min_bytes / median, in GB/s (1e9)
  Efficiency efficiency;
  std::vector<OutputCheck> outputs;
  std::vector<HostTensor> inputs;  // keep_data: what the kernel read
  Tolerance tolerance;
  bool verified = false;  // every output passed its comparison
  std::optional<RunFailure> failure;
  std::optional<BaselineResult> baseline;  // RunOptions::vs: the library's run on the same buffers
  std::optional<Timeline> timeline;        // RunOptions::timeline: decoded (regions named by the spec's probes)
  Stats timeline_time_ms;                  // RunOptions::timeline_timed: the probe build's runs
  std::string timeline_error;              // why there is no timeline although one was asked for
  std::optional<DramTraffic> dram;         // RunOptions::timing.measure_dram: measured DRAM bytes, or why not

  bool passed() const { return !failure && verified; }
  // Over all outputs: the largest relative and absolute errors, and the unwritten elements.
  double rel_error() const;
  double max_abs_error() const;
  std::uint64_t unwritten() const;
  // "fault: ...", "timeout: ...", "verification: ..." or "" when passed.
  std::string failure_text() const;
};

// The record of a kernel that never ran (invalid config, compile error): the kernel and the failure.
RunRecord failed_record(const std::string& kernel, const std::map<std::string, std::string>& problem,
                        const std::map<std::string, std::string>& config, const Status& status);

// The binding ceiling from arithmetic intensity (flops / min_bytes) against the ridge point of `c`
// (runtime/roofline.hpp holds the model; this keeps the RunRecord's summary of it).
// `input_dtype` is the type of the first input tensor: GEMMs on 16-bit inputs are compared with the tensor cores.
Efficiency roofline_efficiency(const std::string& family, DType input_dtype, double flops, double min_bytes,
                               double seconds, const Ceilings& c);

// Output `output`'s reference at `indices`: the spec's reference, on several threads in chunks of whole sampling
// units when the spec allows it (KernelSpec::reference_thread_safe); the values are those of one call.
Result<std::vector<double>> compute_reference(const KernelInstance& instance, const ReferenceInputs& inputs,
                                              const std::string& output, const std::vector<std::int64_t>& indices);

RunRecord run_instance(WorkerClient& worker, const PreparedKernel& kernel, const RunOptions& options = {});

void to_json(nlohmann::json& j, const OutputCheck& o);
void to_json(nlohmann::json& j, const Efficiency& e);
void to_json(nlohmann::json& j, const RunRecord& r);

}  // namespace tl
