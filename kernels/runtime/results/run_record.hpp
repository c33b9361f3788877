// What one run of a kernel instance leaves: the RunRecord (launch, resources, times, checks, efficiency, failure).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "runtime/core/check.hpp"
#include "runtime/core/dtype.hpp"
#include "runtime/core/geometry.hpp"
#include "runtime/core/status.hpp"
#include "runtime/device/ceilings.hpp"
#include "runtime/jit/compiled.hpp"
#include "runtime/spec/kernel_spec.hpp"
#include "runtime/trace/timeline.hpp"
#include "runtime/worker/client.hpp"
#include "runtime/worker/launch.hpp"

namespace tl {

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
  int gpu = -1;                 // the index of the GPU it ran on (-1: it never reached one)
  LaunchGeometry launch;
  ResourceUsage resources;      // ptxas
  KernelAttributes attributes;  // what the loaded kernel reported on the device
  double flops = 0, min_bytes = 0;
  std::string input_dtype = "f32";  // of the first input tensor: picks the compute ceiling (tensor cores or FP32)
  bool tensor_cores = false;        // KernelSpec::tensor_cores: held to the tensor-core roof on 16-/8-bit inputs
  Stats time_ms;
  std::vector<double> times_ms;  // the timed runs, in launch order (time_ms's samples)
  Timer timer = Timer::events;  // how time_ms (and the baseline's) was taken (TimingOptions::timer)
  int graph_launches = 0;       // Timer::graph: launches per replayed graph (times are a replay's / this)
  bool l2_flushed = true;       // TimingOptions::flush_l2 (with the graph timer: before each replay only)
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
// (results/roofline.hpp holds the model; this keeps the RunRecord's summary of it). `input_dtype` is the type of
// the first input tensor: a kernel whose math runs on the tensor cores (KernelSpec::tensor_cores) on 16- or 8-bit
// inputs is compared with the tensor cores.
Efficiency roofline_efficiency(bool tensor_cores, DType input_dtype, double flops, double min_bytes, double seconds,
                               const Ceilings& c);

void to_json(nlohmann::json& j, const OutputCheck& o);
void to_json(nlohmann::json& j, const Efficiency& e);
void to_json(nlohmann::json& j, const RunRecord& r);

}  // namespace tl
