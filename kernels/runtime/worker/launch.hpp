// Launching a compiled kernel: plain-data launch specs, their wire form, and the worker's CUDA execution path.
#pragma once

// The parent describes a launch as plain data — code image + lowered kernel name + geometry + buffers + arguments
// + timing — and the worker executes it: load the image (cudaLibraryLoadData), fill inputs on the device with the
// seeded fill of runtime/core/numeric.hpp, poison outputs, launch once to check, then time warm-up + repeats with CUDA
// events (L2 flushed before each), and send back per-output samples and the poison count. The parent compares
// the samples with its float64 reference (check_output) after rebuilding the inputs with host_input().

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "runtime/core/check.hpp"
#include "runtime/core/geometry.hpp"
#include "runtime/core/status.hpp"
#include "runtime/spec/baseline.hpp"
#include "runtime/worker/dram_counters.hpp"
#include "runtime/worker/protocol.hpp"

namespace tl {

class WorkerClient;

enum class BufferRole { input, output, inout, scratch };
const char* buffer_role_name(BufferRole r);

struct BufferSpec {
  std::string name;
  DType dtype = DType::f32;
  std::uint64_t count = 0;  // elements
  BufferRole role = BufferRole::input;
  // input / inout / scratch: how it is filled (scratch defaults to zeros). Outputs are poisoned instead.
  Fill fill;
  Blob data;  // the bytes, for Fill::Kind::data (count * dtype_size)
  // output / inout: what comes back. Samples at sample_positions(count, max_samples, sample_seed) always;
  // the whole buffer too when return_all.
  std::uint64_t max_samples = 1u << 16;  // 0 = every element
  std::uint64_t sample_seed = 0x5EED;
  std::uint64_t sample_unit = 1;  // sample whole runs of this many elements (rows); see sample_positions
  bool return_all = false;

  static BufferSpec make(std::string name, DType dtype, std::uint64_t count, BufferRole role = BufferRole::input) {
    BufferSpec b;
    b.name = std::move(name);
    b.dtype = dtype;
    b.count = count;
    b.role = role;
    return b;
  }
  std::uint64_t bytes() const { return count * dtype_size(dtype); }
  bool is_output() const { return role == BufferRole::output || role == BufferRole::inout; }
};

// A TMA descriptor the worker encodes over one of the launch's buffers (cuTensorMapEncodeTiled) and passes by
// value as a 128-byte __grid_constant__ parameter. Dimensions are innermost first, as the driver wants them.
struct TensorMapSpec {
  int buffer = -1;
  std::vector<std::uint64_t> dims;           // elements per dimension, rank 1..5
  std::vector<std::uint64_t> strides_bytes;  // rank - 1 strides (dimension 1 and up), multiples of 16
  std::vector<std::uint32_t> box;            // box size per dimension (the tile a TMA copy moves)
  std::vector<std::uint32_t> element_strides;  // empty = all 1
  int swizzle_bytes = 0;                     // 0 (none), 32, 64 or 128
  int l2_promotion_bytes = 0;                // 0, 64, 128 or 256
  bool oob_fill_nan = false;                 // out-of-bounds elements read as NaN instead of zero
};

struct KernelArg {
  enum class Kind { buffer, i32, u32, i64, u64, f32, f64, tensor_map } kind = Kind::buffer;
  int buffer = -1;  // Kind::buffer: index into LaunchSpec::buffers (passed as its device pointer)
  std::int64_t i = 0;
  double f = 0;
  TensorMapSpec tensor_map;

  static KernelArg of_buffer(int index) { return make(Kind::buffer, index, 0, 0); }
  static KernelArg of_i32(std::int32_t v) { return make(Kind::i32, -1, v, 0); }
  static KernelArg of_u32(std::uint32_t v) { return make(Kind::u32, -1, v, 0); }
  static KernelArg of_i64(std::int64_t v) { return make(Kind::i64, -1, v, 0); }
  static KernelArg of_u64(std::uint64_t v) { return make(Kind::u64, -1, static_cast<std::int64_t>(v), 0); }
  static KernelArg of_f32(float v) { return make(Kind::f32, -1, 0, v); }
  static KernelArg of_f64(double v) { return make(Kind::f64, -1, 0, v); }
  static KernelArg of_tensor_map(TensorMapSpec t) {
    KernelArg a = make(Kind::tensor_map, t.buffer, 0, 0);
    a.tensor_map = std::move(t);
    return a;
  }

 private:
  static KernelArg make(Kind k, int buffer, std::int64_t i, double f) {
    KernelArg a;
    a.kind = k;
    a.buffer = buffer;
    a.i = i;
    a.f = f;
    return a;
  }
};

// Bytes the kernel parameter takes: 4 (i32, u32, f32), 128 (a tensor map), else 8 (pointers, 64-bit scalars).
std::size_t param_bytes(const KernelArg& a);
// A launch's arguments against the kernel's parameter sizes in order (from its PTX, or cudaFuncGetParamInfo):
// the count and each size must agree, or the error names the kernel and the first difference.
Status check_param_sizes(const std::string& kernel, const std::vector<KernelArg>& args,
                         const std::vector<std::size_t>& sizes);

// How a timed run's time is taken. A run is one launch after an L2 flush (flush_l2), whatever the timer.
//   events: a CUDA event pair around the launch: the GPU's time from the first event to the second, which for a
//           kernel of a few microseconds includes the launch's own latency.
//   cupti:  the kernel's start and end from CUPTI's activity records (CONCURRENT_KERNEL), of the launch's kernels
//           only (the L2 flush and everything outside the launch excluded); libcupti opened at run time.
//   graph:  N launches captured into a CUDA graph; a run is one replay between events, divided by N. The L2 is
//           flushed before each replay, not between the launches inside it: launches 2..N find a warm L2.
enum class Timer { events, cupti, graph };
const char* timer_name(Timer t);
// "events", "cupti" or "graph"; invalid_argument naming the valid ones otherwise.
Result<Timer> parse_timer(const std::string& name);
// What the L2 flush covered with this timer, as the run record says it.
const char* l2_flush_text(Timer t, bool flush_l2);

inline constexpr int kMaxGraphLaunches = 10000;
// Launches per graph when none is given: enough that a replay lasts about 2 ms (one launch's time measured with
// events, its latency included, so for a short kernel N is a little low), at least 1 and at most 1000.
int graph_launches_for(double launch_ms);

struct TimingOptions {
  int warmup = 3;
  int repeat = 20;        // 0: run once for correctness, no timing
  bool flush_l2 = true;   // read a buffer twice the L2 size before each timed run (outside what is timed)
  bool measure_dram = false;  // one more launch under CUPTI for its DRAM bytes (runtime/worker/dram_counters.hpp)
  Timer timer = Timer::events;
  int graph_launches = 0;  // Timer::graph: launches per graph, 1..kMaxGraphLaunches; 0: graph_launches_for
};
// An error naming the field when a timing option is out of range (graph_launches, or graph_launches without
// Timer::graph).
Status check_timing(const TimingOptions& timing);

// A timeline capture after the timed runs: the probe build of the same kernel (compiled with -DTL_TIMELINE=1)
// launched with the same arguments and a zeroed probe buffer (tile/probe.hpp) that its `tl_timeline_buffer` global
// points to; the buffer comes back trimmed to the longest warp segment.
struct TimelineLaunch {
  Blob image;
  std::string kernel;              // lowered name in the probe build
  std::uint32_t capacity = 0;      // marks per warp segment
  std::uint64_t clock_hz = 0;      // 0: the device's SM clock
  bool timed = false;              // also time the probe build like the kernel (probe overhead, same conditions)
};

struct LaunchSpec {
  std::string label;    // shown in messages ("gemm.simt block_M=128 ...")
  Blob image;           // cubin, fatbin, or NUL-terminated PTX
  std::string kernel;   // the lowered (mangled) name, as nvrtcGetLoweredName gives it
  LaunchGeometry geometry;
  // Launched before each launch of `kernel` (checked, timed, probed), same kernel and arguments: its grid, block and
  // dynamic shared memory (KernelSpec::pre_launch).
  std::optional<LaunchGeometry> pre;
  std::vector<BufferSpec> buffers;
  std::vector<KernelArg> args;
  TimingOptions timing;
  int device = 0;
  // Also run this vendor-library equivalent after the kernel's timed runs, with the same timing.
  std::optional<BaselineSpec> baseline;
  std::optional<TimelineLaunch> timeline;
};

struct OutputResult {
  std::string name;
  DType dtype = DType::f32;
  std::uint64_t count = 0;
  UnwrittenCount unwritten;
  std::vector<std::uint64_t> positions;
  Blob samples;  // the output at `positions`, raw elements of `dtype`
  Blob data;     // the whole buffer when return_all was set
};

struct KernelAttributes {
  int registers = 0;
  int static_smem = 0;
  int local_bytes = 0;  // per thread (spills + stack)
  int const_bytes = 0;
  int max_threads_per_block = 0;
  int binary_version = 0;  // the SASS arch the image provided (90 = sm_90)
};

struct TimelineCapture {
  Blob buffer;                   // the probe buffer (empty when `error` says why there is none)
  Stats time_ms;                 // TimelineLaunch::timed: the probe build's runs
  std::vector<double> times_ms;
  std::string error;             // the capture failed but the kernel's own results stand
};

struct LaunchResult {
  std::vector<OutputResult> outputs;
  Stats time_ms;                // per launch, after warm-up
  std::vector<double> times_ms; // every timed run, in order
  KernelAttributes attributes;
  std::string device_name;
  bool l2_flushed = false;
  int graph_launches = 0;       // Timer::graph: the launches per graph the times were divided by
  std::optional<BaselineResult> baseline;  // when the spec asked for one
  std::optional<TimelineCapture> timeline;  // when the spec asked for one
  std::optional<DramTraffic> dram;         // when the timing asked for it (measured, or why not)
};

// --- parent side -------------------------------------------------------------------------------------------

Message make_launch_request(const LaunchSpec& spec);
Result<LaunchResult> parse_launch_reply(const Message& reply);
// One launch through the worker; errors are the worker's records (fault, timeout, cuda, no_device, ...).
Result<LaunchResult> run_launch(WorkerClient& worker, const LaunchSpec& spec,
                                std::chrono::milliseconds timeout = std::chrono::milliseconds(0));

// Several launches in one request; each result (or error) streams back as it completes. A faulting item is
// reported and the sweep goes on, unless the fault was sticky: then the worker exits and run_sweep returns the
// record; items after it were not run (the caller can resubmit them). The watchdog applies per item.
using SweepItemFn = std::function<void(std::size_t index, Result<LaunchResult> result)>;
Status run_sweep(WorkerClient& worker, const std::vector<LaunchSpec>& specs, const SweepItemFn& on_item,
                 std::chrono::milliseconds timeout = std::chrono::milliseconds(0));

// --- in this process, on the caller's buffers and stream (the Python direct call) ------------------------------

namespace cuda_detail {
struct ReadyKernel;  // gpu.hpp: the loaded kernel, its fitted geometry and pre-launch (CUDA types stay out of here)
}

// A kernel of a LaunchSpec loaded into this process for launches over device buffers the caller owns: no worker,
// no fill, poison, check or timing. A fault in it poisons this process's CUDA context (the caller's own).
class InProcessKernel {
 public:
  // Loads spec.image on device `device` (this process's CUDA runtime selects it) and readies the kernel as the worker
  // does (block, shared memory, persistent grid, parameter sizes). Errors: no_device, unsupported, cuda, not_found.
  static Result<InProcessKernel> load(LaunchSpec spec, int device);
  // One asynchronous launch on `stream` (a cudaStream_t; 0: the legacy default stream) with the device addresses
  // `ptrs` of spec.buffers, in order (16-byte aligned where a tensor map covers them).
  Status launch(const std::vector<void*>& ptrs, void* stream) const;
  const LaunchSpec& spec() const { return m_spec; }
  const LaunchGeometry& geometry() const;  // the spec's, a persistent grid fitted
  int device() const { return m_device; }

 private:
  LaunchSpec m_spec;
  std::shared_ptr<const cuda_detail::ReadyKernel> m_ready;  // what load readied, launched as it is
  int m_device = 0;
};

// The bytes an input buffer held when the kernel ran (the same seeded fill as the device's).
Blob host_input(const BufferSpec& spec);

// The float64 reference value of output element `index`.
using ElementReferenceFn = std::function<double(std::uint64_t index)>;
// Compare an output's samples with the reference at the same positions; never-written elements fail.
Comparison check_output(const OutputResult& out, const ElementReferenceFn& reference, Tolerance tol);

void to_json(nlohmann::json& j, const KernelAttributes& a);
void to_json(nlohmann::json& j, const BaselineResult& b);

}  // namespace tl
