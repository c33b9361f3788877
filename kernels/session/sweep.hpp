// The sweep engine: a kernel over problems × a config space, compiled ahead in parallel, run one by one, stored.
#pragma once

// run_sweep enumerates the cartesian product of the space's axes (for each problem), drops points the filter
// refuses, checks every other one with can_implement (an invalid point is stored as "skipped" with the reason),
// compiles the valid ones on `jobs` threads (NVRTC through the Session's Jit and its disk cache) while the calling
// thread runs the compiled ones in order in the worker, stores each result as it arrives and hands it to
// `on_point`. A fault or hang costs that point and a worker restart, nothing else. A sweep's id is a hash of its
// kernel, problems and space: a rerun skips every point already stored under it. The interrupt flag stops the
// sweep after the current run. Callbacks (filter, on_point) run on the calling thread only.
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
  // Runs one compiled point; unset: session.run(kernel, run). Set, it runs even without a GPU (tests, the GUI's
  // own run options).
  std::function<RunRecord(const PreparedKernel& kernel)> runner;
};

// "I/N" (0 <= I < N) -> {I, N}; errors say what was expected.
Result<std::pair<int, int>> parse_shard(const std::string& text);

// The sweep's id: 16 hex digits of a hash of kernel, problems, space and base config.
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

struct SweepSummary {
  std::string id;
  std::size_t total = 0, ran = 0, passed = 0, failed = 0, skipped = 0, filtered = 0, not_run = 0, resumed = 0;
  std::size_t other_shards = 0;  // points of the sweep left to the other shards (not in `points`)
  std::size_t compiled = 0, compile_cache_hits = 0;
  bool interrupted = false;
  double wall_s = 0;         // the whole sweep
  double kernel_s = 0;       // the kernels' own time: each run's launches (warm-up + timed) at its median
  double overhead_ms = 0;    // (wall − kernel time) per run: compiling waits, worker round trips, verification
  double compile_wait_s = 0;  // the runner waiting for the compile threads
  double run_s = 0;           // inside the runs (worker round trips, L2 flushes, host inputs and reference, kernels)
  double store_s = 0;         // writing rows
  std::optional<std::size_t> best;  // index into the points given to on_point, by `best_metric`
  std::vector<SweepPoint> points;   // every point, in enumeration order
};

using OnSweepPoint = std::function<void(const SweepPoint& point, const SweepProgress& progress)>;

// The most points one sweep enumerates (each is a few hundred bytes before it runs; days of GPU time after).
inline constexpr long long kMaxSweepPoints = 100000;

// Errors only before the first point: unknown kernel, empty space, more than kMaxSweepPoints points, a store that
// cannot record the sweep.
// `store` may be null (nothing stored, nothing resumed).
Result<SweepSummary> run_sweep(Session& session, ResultsStore* store, const SweepSpec& spec,
                               const OnSweepPoint& on_point = {}, const std::atomic<bool>* interrupted = nullptr,
                               const std::string& best_metric = "tflops");

// The row context of a run in this session (source hash, device clocks).
RunContext session_run_context(Session& session, const KernelInstance& instance);

// Progress on a FILE: a redrawn bar when it is a terminal, one plain line per point otherwise.
class SweepPrinter {
 public:
  explicit SweepPrinter(std::FILE* out, bool force_plain = false);
  void point(const SweepPoint& p, const SweepProgress& progress);
  void finish();  // ends the bar's line

 private:
  std::FILE* m_out;
  bool m_tty;
  double m_best = 0;
  std::string m_best_text;
};

// "46 regs, 32768 B smem (32768 dynamic), 0 B spills, cached": what a compiled point uses ("" when not compiled).
std::string point_resources_text(const SweepPoint& p);

// A point as JSON: index, kernel, problem, config, status, reason, resources, smem (static + dynamic), smem_static,
// smem_dynamic (bytes), compile_ms, from_cache, row_id and,
// when it ran, the metrics flat (tflops, gbps, efficiency, median_ms, min_ms, max_ms, rel_error, max_abs_error,
// passed, device) plus the whole "record": the shape tl.sweep returns and the heat map reads.
void to_json(nlohmann::json& j, const SweepPoint& p);
// The summary without its points: id, counts, interrupted, wall_s, kernel_s, overhead_ms, best (index or null).
void to_json(nlohmann::json& j, const SweepSummary& s);

// "block_M=128,block_N=256" from a map.
std::string params_text(const ParamMap& params);

}  // namespace tl
