// The sweep engine: a kernel over problems × a config space, compiled ahead in parallel, run one by one, stored.
#pragma once

// run_sweep enumerates the cartesian product of the space's axes (for each problem), drops points the filter
// refuses, checks every other one with can_implement (an invalid point is stored as "skipped" with the reason),
// compiles the valid ones on `jobs` threads (NVRTC through the Session's Jit and its disk cache) while one thread
// per GPU runs the compiled ones in its own worker, each GPU taking the next point when it is free (host inputs,
// reference and check included, so GPUs never wait for each other). The calling thread stores each result as it
// arrives and hands it to `on_point`. A fault or hang costs that point and a restart of that GPU's worker, nothing
// else. A sweep's id is a hash of its kernel, problems and space (not its GPUs): a rerun skips every point already
// stored under it. The interrupt flag stops the sweep after the runs in flight. Callbacks (filter, on_point) run
// on the calling thread only.
//
// Without a GPU the points are compiled (resources reported) and their runs are "not_run", not stored.

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "runtime/results/results_store.hpp"
#include "session/session.hpp"

namespace tl {

using ParamMap = std::map<std::string, std::string>;

// Axes in the order given (the first varies slowest), each with its values.
using SweepSpace = std::vector<std::pair<std::string, std::vector<std::string>>>;

// "block_M=64,128;block_N=128,256" -> {{block_M, {64, 128}}, {block_N, {128, 256}}}. Errors name the bad part.
Result<SweepSpace> parse_sweep_space(const std::string& text);

struct SweepSpec {
  std::string kernel;
  std::vector<ParamMap> problems = {{}};
  SweepSpace space;
  ParamMap base_config;  // values of parameters the space does not vary (defaults for the rest)
  // Optional: false drops a point before anything else (`why` may say why; dropped points are not stored).
  std::function<bool(const ParamMap& problem, const ParamMap& config, std::string& why)> filter;
  int jobs = 0;          // compile threads; 0 = the machine's cores
  // Timing, samples, timeout; `run.vs` also times that library once per problem, beside its first run (that point's
  // record holds the row). A sweep checks 16384 output positions per point (stratified: every tile of a large
  // output is sampled) rather than a bench's 65536: it ranks many configs, and the float64 reference and the
  // samples' trip from the worker are a sweep's largest cost outside the kernels.
  RunOptions run = [] {
    RunOptions r;
    r.max_samples = 1u << 14;
    return r;
  }();
  bool resume = true;    // skip points stored under the sweep's id
  // This run's slice of the points (`--shard I/N`, a cluster scheduler's array task I of N): the points whose index
  // in the enumeration order is I modulo N; shards = 1 is all. The sweep's id is the whole sweep's, so the shards'
  // stores merge into it (ResultsStore::merge_from).
  int shard = 0, shards = 1;
  // The GPUs it runs on (indices as `tilelab info` lists them), one worker and one thread of runs each. Empty:
  // GPU 0, or compiling only when there is no GPU. All must be of GPU 0's kind: points are compiled once, for it.
  std::vector<int> gpus;
  // Runs one compiled point on GPU `gpu`, on that GPU's thread; unset: session.run(kernel, run) on that GPU. Set,
  // it runs even without a GPU, on GPUs that need not exist (tests: fake GPUs).
  std::function<RunRecord(const PreparedKernel& kernel, int gpu)> runner;
};

// "I/N" (0 <= I < N) -> {I, N}; errors say what was expected.
Result<std::pair<int, int>> parse_shard(const std::string& text);

// "all" -> every GPU of the `count` here (none when count is 0: the sweep compiles only); "0,2" -> {0, 2}. Errors
// name what to fix: not an index, a GPU this machine lacks (`why_none`: why it has none), one given twice.
Result<std::vector<int>> parse_gpus(const std::string& text, int count, const std::string& why_none = "");

// The sweep's id: 16 hex digits of a hash of kernel, problems, space and base config (and the timer unless events).
std::string sweep_id(const SweepSpec& spec);
// What a point is stored under: "M=..,N=..|block_M=..,block_N=.." (problem | config, both as given).
std::string sweep_point_key(const ParamMap& problem, const ParamMap& config);

enum class PointStatus {
  passed,         // ran and matched the reference
  failed,         // ran; verification failed
  fault,          // the kernel faulted (worker restarted)
  timeout,        // the watchdog killed it (worker restarted)
  error,          // run failed otherwise (compile error, worker lost, ...)
  skipped,        // can_implement refused it (stored with the reason)
  filtered,       // the filter dropped it (not stored)
  not_run,        // compiled, but there is no GPU (not stored)
  already_stored  // a previous run of this sweep stored it (resume)
};
const char* point_status_name(PointStatus s);

struct SweepPoint {
  std::size_t index = 0;  // in enumeration order, over all problems
  ParamMap problem, config;
  PointStatus status = PointStatus::error;
  std::string reason;                // skipped/filtered/not_run/error: why
  std::optional<RunRecord> record;   // ran, or tried to (failures included)
  ResourceUsage resources;           // compiled points
  std::uint32_t smem_dynamic = 0;    // the launch's dynamic shared memory (resources holds the static part)
  double compile_ms = 0;
  bool from_cache = false;
  std::int64_t row_id = 0;           // stored row, 0 when not stored
};

struct SweepProgress {
  std::size_t done = 0, total = 0;
};

// What one GPU did in a sweep.
struct SweepGpu {
  int index = 0;
  std::string name;            // the device's (or, for a runner's GPU, its records')
  std::size_t ran = 0, passed = 0;
  int restarts = 0;            // of its worker, after a fault or a hang
  double busy_s = 0;           // in runs
  std::optional<std::size_t> best;  // its best point by the sweep's metric (index into the points)
};

struct SweepSummary {
  std::string id;
  std::vector<SweepGpu> gpus;   // the GPUs it ran on, in the order given (none when it could only compile)
  std::size_t total = 0, ran = 0, passed = 0, failed = 0, skipped = 0, filtered = 0, not_run = 0, resumed = 0;
  std::size_t other_shards = 0;  // points of the sweep left to the other shards (not in `points`)
  std::size_t compiled = 0, compile_cache_hits = 0;
  bool interrupted = false;
  double wall_s = 0;         // the whole sweep
  double kernel_s = 0;       // the kernels' own time: each run's launches (warm-up + timed) at its median
  // (wall × GPUs − kernel time) per run: each GPU's time outside its kernels (compiling waits, worker round trips,
  // verification) per config it ran.
  double overhead_ms = 0;
  double compile_wait_s = 0;  // the GPUs' threads waiting for the compile threads (summed over GPUs)
  double run_s = 0;           // inside the runs (worker round trips, L2 flushes, host inputs and reference, kernels)
  double store_s = 0;         // writing rows
  std::optional<std::size_t> best;  // index into the points given to on_point, by `best_metric`
  std::vector<SweepPoint> points;   // every point, in enumeration order
};

using OnSweepPoint = std::function<void(const SweepPoint& point, const SweepProgress& progress)>;

// The most points one sweep enumerates (each is a few hundred bytes before it runs; days of GPU time after).
inline constexpr long long kMaxSweepPoints = 100000;

// Errors only before the first point: unknown kernel, empty space, more than kMaxSweepPoints points, GPUs that are
// not there or not of GPU 0's kind, a store that cannot record the sweep.
// `store` may be null (nothing stored, nothing resumed).
Result<SweepSummary> run_sweep(Session& session, ResultsStore* store, const SweepSpec& spec,
                               const OnSweepPoint& on_point = {}, const std::atomic<bool>* interrupted = nullptr,
                               const std::string& best_metric = "tflops");

// The row context of a run in this session on GPU `gpu` (source hash, device clocks).
RunContext session_run_context(Session& session, const KernelInstance& instance, int gpu = 0);

// Progress on a FILE: a redrawn bar when it is a terminal, one plain line per point otherwise.
class SweepPrinter {
 public:
  // show_gpu: each point says which GPU ran it (a sweep over several).
  explicit SweepPrinter(std::FILE* out, bool force_plain = false, bool show_gpu = false);
  void point(const SweepPoint& p, const SweepProgress& progress);
  void finish();  // ends the bar's line

 private:
  std::FILE* m_out;
  bool m_tty, m_show_gpu;
  double m_best = 0;
  std::string m_best_text;
};

// "46 regs, 32768 B smem (32768 dynamic), 0 B spills, cached": what a compiled point uses ("" when not compiled).
std::string point_resources_text(const SweepPoint& p);

// A point as JSON: index, kernel, problem, config, status, reason, resources, smem (static + dynamic), smem_static,
// smem_dynamic (bytes), compile_ms, from_cache, row_id and,
// when it ran, the metrics flat (tflops, gbps, efficiency, median_ms, min_ms, max_ms, rel_error, max_abs_error,
// passed, device, gpu: the index of the GPU it ran on) plus the whole "record": the shape tl.sweep returns and the
// heat map reads.
void to_json(nlohmann::json& j, const SweepPoint& p);
// The summary without its points: id, counts, interrupted, wall_s, kernel_s, overhead_ms, best (index or null),
// gpus ([{index, name, ran, passed, restarts, busy_s, best}]).
void to_json(nlohmann::json& j, const SweepSummary& s);

// "block_M=128,block_N=256" from a map.
std::string params_text(const ParamMap& params);

}  // namespace tl
