// run_sweep: enumerate, filter, validate, compile ahead on a thread pool, run on a thread per GPU, store, report.
#include "session/sweep.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <limits>
#include <mutex>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "runtime/core/hash.hpp"

namespace tl {

std::string params_text(const ParamMap& params) {
  std::string s;
  for (const auto& [k, v] : params) s += (s.empty() ? "" : ",") + k + "=" + v;
  return s;
}

Result<SweepSpace> parse_sweep_space(const std::string& text) {
  SweepSpace space;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find(';', start);
    if (end == std::string::npos) end = text.size();
    std::string axis = text.substr(start, end - start);
    start = end + 1;
    if (axis.find_first_not_of(" \t") == std::string::npos) continue;
    auto eq = axis.find('=');
    if (eq == std::string::npos || eq == 0)
      return make_error(ErrorCode::invalid_argument, "space axis '" + axis + "' is not NAME=V1,V2,... (axes are separated by ';')");
    std::string name = axis.substr(0, eq);
    name.erase(0, name.find_first_not_of(" \t"));
    name.erase(name.find_last_not_of(" \t") + 1);
    std::vector<std::string> values;
    std::size_t p = eq + 1;
    while (p <= axis.size()) {
      std::size_t q = axis.find(',', p);
      if (q == std::string::npos) q = axis.size();
      std::string v = axis.substr(p, q - p);
      v.erase(0, v.find_first_not_of(" \t"));
      v.erase(v.find_last_not_of(" \t") + 1);
      if (v.empty()) return make_error(ErrorCode::invalid_argument, "space axis '" + name + "' has an empty value");
      values.push_back(v);
      p = q + 1;
    }
    for (const auto& [n, vs] : space)
      if (n == name) return make_error(ErrorCode::invalid_argument, "space axis '" + name + "' is given twice");
    space.emplace_back(name, std::move(values));
  }
  return space;
}

std::string sweep_point_key(const ParamMap& problem, const ParamMap& config) {
  return params_text(problem) + "|" + params_text(config);
}

Result<std::pair<int, int>> parse_shard(const std::string& text) {
  const auto slash = text.find('/');
  int i = -1, n = 0;
  auto number = [](const std::string& s, int& out) {
    if (s.empty() || s.size() > 6 || s.find_first_not_of("0123456789") != std::string::npos) return false;
    out = std::stoi(s);
    return true;
  };
  if (slash == std::string::npos || !number(text.substr(0, slash), i) || !number(text.substr(slash + 1), n) || n < 1 ||
      i >= n)
    return make_error(ErrorCode::invalid_argument, "shard '" + text + "': expected I/N with 0 <= I < N (e.g. 0/4; "
                                                   "$SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT)");
  return std::pair{i, n};
}

std::string sweep_id(const SweepSpec& spec) {
  Hasher128 h;
  h.field("tilelab-sweep-1").field(spec.kernel).field(std::uint64_t(spec.problems.size()));
  for (const auto& p : spec.problems) h.field(params_text(p));
  h.field(std::uint64_t(spec.space.size()));
  for (const auto& [name, values] : spec.space) {
    h.field(name).field(std::uint64_t(values.size()));
    for (const auto& v : values) h.field(v);
  }
  h.field(params_text(spec.base_config));
  // Times from another timer do not rank against events' (launch latency left out, L2 warm inside a graph), so such a
  // sweep is its own; events add nothing, and ids from before the timers stay as they were.
  if (spec.run.timing.timer != Timer::events) h.field(std::string("timer=") + timer_name(spec.run.timing.timer));
  return h.hex().substr(0, 16);
}

const char* point_status_name(PointStatus s) {
  switch (s) {
    case PointStatus::passed: return "passed";
    case PointStatus::failed: return "failed";
    case PointStatus::fault: return "fault";
    case PointStatus::timeout: return "timeout";
    case PointStatus::error: return "error";
    case PointStatus::skipped: return "skipped";
    case PointStatus::filtered: return "filtered";
    case PointStatus::not_run: return "not_run";
    case PointStatus::already_stored: return "already_stored";
  }
  return "?";
}

RunContext session_run_context(Session& session, const KernelInstance& instance, int gpu) {
  RunContext c;
  if (auto h = kernel_source_hash(session.jit(), instance.source)) c.source_hash = *h;
  if (const auto& d = session.target(gpu).device) {
    c.sm_clock_khz = d->clock_khz;
    c.mem_clock_khz = d->memory_clock_khz;
  }
  return c;
}

// [SECTION] the engine

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::optional<double> record_metric(const RunRecord& r, const std::string& name) {
  if (name == "tflops") return r.tflops;
  if (name == "gbps") return r.gbps;
  if (name == "efficiency") return r.efficiency.value;
  if (name == "median_ms") return r.time_ms.median;
  if (name == "min_ms") return r.time_ms.min;
  return std::nullopt;
}

PointStatus status_of(const RunRecord& r) {
  if (!r.failure) return r.verified ? PointStatus::passed : PointStatus::failed;
  if (r.failure->code == ErrorCode::fault) return PointStatus::fault;
  if (r.failure->code == ErrorCode::timeout) return PointStatus::timeout;
  return PointStatus::error;
}

// Compiles the points of `todo` (indices into `points`) on `jobs` threads, at most `window` ahead of the furthest
// point a GPU has asked for. The destructor stops and joins, so an exception in a callback cannot leave threads
// behind. It keeps its own copy of each point's problem and config: its threads run until it is destroyed, which is
// after run_sweep's result has taken the points (an interrupted sweep's compiles read a moved-from vector: SIGSEGV).
class CompilePool {
 public:
  CompilePool(Session& session, const std::string& kernel, const std::vector<SweepPoint>& points,
              const std::vector<std::size_t>& todo, int jobs)
      : m_session(session), m_kernel(kernel), m_results(todo.size()) {
    m_inputs.reserve(todo.size());
    for (std::size_t i : todo) m_inputs.push_back({points[i].problem, points[i].config});
    m_window = std::size_t(std::max(4 * jobs, 8));
    for (int i = 0; i < jobs && i < static_cast<int>(m_inputs.size()); ++i) m_threads.emplace_back([this] { work(); });
  }
  ~CompilePool() {
    {
      std::lock_guard lock(m_mutex);
      m_stop = true;
    }
    m_cv.notify_all();
    for (auto& t : m_threads) t.join();
  }

  // The compile of the k-th point of `todo`; blocks until it is there. Each k is taken once.
  Result<PreparedKernel> take(std::size_t k) {
    std::unique_lock lock(m_mutex);
    m_consumed = std::max(m_consumed, k);
    m_cv.notify_all();
    m_cv.wait(lock, [&] { return m_results[k].has_value(); });
    Result<PreparedKernel> r = std::move(*m_results[k]);
    m_results[k].reset();
    return r;
  }

 private:
  void work() {
    for (;;) {
      std::size_t k;
      {
        std::unique_lock lock(m_mutex);
        m_cv.wait(lock, [&] { return m_stop || m_next >= m_inputs.size() || m_next < m_consumed + m_window; });
        if (m_stop || m_next >= m_inputs.size()) return;
        k = m_next++;
      }
      const Input& p = m_inputs[k];
      Result<PreparedKernel> r = make_error(ErrorCode::internal, "not compiled");
      try {
        r = m_session.prepare(m_kernel, p.problem, p.config);
      } catch (const std::exception& e) {
        r = make_error(ErrorCode::internal, std::string("compiling: ") + e.what());
      }
      {
        std::lock_guard lock(m_mutex);
        m_results[k] = std::move(r);
      }
      m_cv.notify_all();
    }
  }

  struct Input {
    ParamMap problem, config;
  };
  Session& m_session;
  const std::string m_kernel;
  std::vector<Input> m_inputs;
  std::vector<std::optional<Result<PreparedKernel>>> m_results;
  std::size_t m_next = 0, m_consumed = 0, m_window = 8;
  bool m_stop = false;
  std::mutex m_mutex;
  std::condition_variable m_cv;
  std::vector<std::thread> m_threads;
};

// Hands the compiled points (by their place in `todo`) to the GPUs' threads, to whichever asks first, and the points
// they finish back to the calling thread, which stores and reports them.
class PointQueue {
 public:
  PointQueue(std::size_t count, std::size_t lanes) : m_count(count), m_lanes(lanes) {}

  // The next point to run; none when all are handed out or the sweep is stopping.
  std::optional<std::size_t> claim(const std::atomic<bool>* interrupted) {
    std::lock_guard lock(m_mutex);
    if (m_stop || (interrupted && interrupted->load()) || m_next >= m_count) return std::nullopt;
    return m_next++;
  }
  void finished(std::size_t point) {
    {
      std::lock_guard lock(m_mutex);
      m_finished.push_back(point);
    }
    m_cv.notify_all();
  }
  void lane_done() {
    {
      std::lock_guard lock(m_mutex);
      --m_lanes;
    }
    m_cv.notify_all();
  }
  // The next finished point, waiting for one; none once every GPU's thread has ended and all were taken.
  std::optional<std::size_t> next_finished() {
    std::unique_lock lock(m_mutex);
    m_cv.wait(lock, [&] { return !m_finished.empty() || m_lanes == 0; });
    if (m_finished.empty()) return std::nullopt;
    const std::size_t p = m_finished.front();
    m_finished.pop_front();
    return p;
  }
  void stop() {
    std::lock_guard lock(m_mutex);
    m_stop = true;
  }

 private:
  std::mutex m_mutex;
  std::condition_variable m_cv;
  std::size_t m_count, m_next = 0, m_lanes;
  std::deque<std::size_t> m_finished;
  bool m_stop = false;
};

// One GPU's thread of runs and what it did (read by the calling thread after joining it).
struct Lane {
  SweepGpu gpu;
  bool runs = true;  // false: no GPU and no runner, its points are compiled only
  std::size_t failed = 0, not_run = 0, compiled = 0, cache_hits = 0;
  double compile_wait_s = 0, kernel_s = 0;
  std::thread thread;
};

// Stops and joins the GPUs' threads however run_sweep ends (a store error, an exception in a callback).
class LaneThreads {
 public:
  LaneThreads(PointQueue& queue, std::vector<Lane>& lanes) : m_queue(queue), m_lanes(lanes) {}
  ~LaneThreads() {
    m_queue.stop();
    join();
  }
  void join() {
    for (Lane& l : m_lanes)
      if (l.thread.joinable()) l.thread.join();
  }

 private:
  PointQueue& m_queue;
  std::vector<Lane>& m_lanes;
};

// Every combination of the axes' values (the first axis slowest) over the base config.
std::vector<ParamMap> enumerate_configs(const SweepSpace& space, const ParamMap& base) {
  std::vector<ParamMap> out = {base};
  for (const auto& [name, values] : space) {
    std::vector<ParamMap> next;
    for (const auto& c : out)
      for (const auto& v : values) {
        ParamMap m = c;
        m[name] = v;
        next.push_back(std::move(m));
      }
    out = std::move(next);
  }
  return out;
}

// Indices not below 0 nor `count`, none twice; `why_none` says why there are no GPUs when count is 0.
Status check_gpu_list(const std::vector<int>& gpus, int count, const std::string& why_none) {
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    const int g = gpus[i];
    if (g < 0 || g >= count) {
      std::string has = count == 0   ? "this machine has no GPU" + (why_none.empty() ? "" : " (" + why_none + ")")
                        : count == 1 ? "this machine has 1 GPU (0)"
                                     : "this machine has " + std::to_string(count) + " GPUs (0 to " +
                                           std::to_string(count - 1) + ")";
      return make_error(ErrorCode::invalid_argument, "there is no GPU " + std::to_string(g) + ": " + has);
    }
    if (std::find(gpus.begin(), gpus.begin() + static_cast<std::ptrdiff_t>(i), g) != gpus.begin() + static_cast<std::ptrdiff_t>(i))
      return make_error(ErrorCode::invalid_argument, "GPU " + std::to_string(g) + " is given twice");
  }
  return Status::success();
}

}  // namespace

Result<std::vector<int>> parse_gpus(const std::string& text, int count, const std::string& why_none) {
  std::string t = text;
  t.erase(0, t.find_first_not_of(" \t"));
  t.erase(t.find_last_not_of(" \t") + 1);
  std::vector<int> gpus;
  if (t.empty())
    return make_error(ErrorCode::invalid_argument, "no GPU given: expected all, or GPU indices like 0,1 (`tilelab "
                                                   "info` lists the GPUs)");
  if (t == "all") {
    for (int i = 0; i < count; ++i) gpus.push_back(i);
    return gpus;
  }
  std::size_t p = 0;
  while (p <= t.size()) {
    std::size_t q = t.find(',', p);
    if (q == std::string::npos) q = t.size();
    std::string v = t.substr(p, q - p);
    v.erase(0, v.find_first_not_of(" \t"));
    v.erase(v.find_last_not_of(" \t") + 1);
    if (v.empty() || v.size() > 4 || v.find_first_not_of("0123456789") != std::string::npos)
      return make_error(ErrorCode::invalid_argument, "'" + (v.empty() ? text : v) + "' is not a GPU index: expected "
                                                     "all, or GPU indices like 0,1 (`tilelab info` lists the GPUs)");
    gpus.push_back(std::stoi(v));
    p = q + 1;
  }
  TL_RETURN_IF_ERROR(check_gpu_list(gpus, count, why_none));
  return gpus;
}

Result<SweepSummary> run_sweep(Session& session, ResultsStore* store, const SweepSpec& spec, const OnSweepPoint& on_point,
                               const std::atomic<bool>* interrupted, const std::string& best_metric) {
  const auto t0 = Clock::now();
  auto found = session.registry().find(spec.kernel);
  if (!found) return found.status();
  for (const auto& [name, values] : spec.space) {
    if (values.empty()) return make_error(ErrorCode::invalid_argument, "space axis '" + name + "' has no values");
    if (!(*found)->config.find(name))
      return make_error(ErrorCode::invalid_argument, "space axis '" + name + "' is not a config parameter of " +
                                                         spec.kernel + " (see `tilelab kernels`)");
  }
  if (spec.problems.empty()) return make_error(ErrorCode::invalid_argument, "a sweep needs at least one problem");
  double size = static_cast<double>(spec.problems.size());
  for (const auto& [name, values] : spec.space) size *= static_cast<double>(values.size());
  if (size > kMaxSweepPoints)
    return make_error(ErrorCode::invalid_argument,
                      "the sweep has " + std::to_string(static_cast<long long>(size)) + " points (problems x every "
                      "axis); a sweep runs at most " + std::to_string(kMaxSweepPoints) +
                      ": narrow an axis, or split it into several sweeps");
  // A runner's GPUs need not exist (tests); real ones must, and be of GPU 0's kind: the points compile for it.
  const bool can_run = session.has_device() || static_cast<bool>(spec.runner);
  TL_RETURN_IF_ERROR(check_gpu_list(spec.gpus, spec.runner ? std::numeric_limits<int>::max() : session.gpu_count(),
                                    session.target().why_no_device));
  if (!spec.runner && session.has_device())
    for (int g : spec.gpus) {
      const DeviceInfo& d0 = *session.target().device;
      const RunTarget& t = session.target(g);
      if (!t.device) return make_error(ErrorCode::no_device, "GPU " + std::to_string(g) + ": " + t.why_no_device);
      if (t.device->arch() != d0.arch())
        return make_error(ErrorCode::invalid_argument,
                          "GPU " + std::to_string(g) + " (" + t.device->name + ", " + t.device->arch() +
                              ") is not of GPU 0's kind (" + d0.name + ", " + d0.arch() + "): a sweep compiles its "
                              "points once, for GPU 0; pick GPUs of one kind (`tilelab info` lists them)");
    }

  SweepSummary sum;
  sum.id = sweep_id(spec);
  std::set<std::string> stored;
  if (store) {
    nlohmann::json problems = spec.problems, space = nlohmann::json::array();
    for (const auto& [name, values] : spec.space) space.push_back({{"name", name}, {"values", values}});
    TL_RETURN_IF_ERROR(store->begin_sweep(sum.id, spec.kernel, problems, space));
    if (spec.resume) {
      auto done = store->sweep_points(sum.id);
      if (!done) return done.status();
      stored = std::move(*done);
    }
  }

  // Enumerate and classify everything that needs no compile, on this thread (the filter may be Lua).
  const std::vector<ParamMap> configs = enumerate_configs(spec.space, spec.base_config);
  std::vector<SweepPoint>& points = sum.points;
  std::vector<RunContext> contexts;  // each point's row context; a GPU's thread fills in those of its runs
  std::vector<std::size_t> todo;
  if (spec.shards < 1 || spec.shard < 0 || spec.shard >= spec.shards)
    return make_error(ErrorCode::invalid_argument, "shard " + std::to_string(spec.shard) + "/" +
                                                       std::to_string(spec.shards) + ": expected I/N with 0 <= I < N");
  std::size_t enumerated = 0;
  for (const auto& problem : spec.problems)
    for (const auto& config : configs) {
      if (enumerated++ % static_cast<std::size_t>(spec.shards) != static_cast<std::size_t>(spec.shard)) {
        ++sum.other_shards;
        continue;
      }
      SweepPoint p;
      p.index = points.size();
      p.problem = problem;
      p.config = config;
      RunContext ctx;
      ctx.sweep_id = sum.id;
      ctx.point_key = sweep_point_key(problem, config);
      std::string why;
      if (stored.count(ctx.point_key)) {
        p.status = PointStatus::already_stored;
      } else if (spec.filter && !spec.filter(problem, config, why)) {
        p.status = PointStatus::filtered;
        p.reason = why.empty() ? "filter" : why;
      } else if (auto inst = session.instantiate(spec.kernel, problem, config); !inst) {
        p.status = PointStatus::skipped;
        p.reason = inst.status().message();
        p.record = failed_record(spec.kernel, problem, config, inst.status());
        ctx.status = "skipped";
      } else {
        todo.push_back(p.index);
      }
      points.push_back(std::move(p));
      contexts.push_back(std::move(ctx));
    }
  sum.total = points.size();

  const int jobs = spec.jobs > 0 ? spec.jobs : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  CompilePool pool(session, spec.kernel, points, todo, jobs);
  // Launches of one point: the warm-up and each timed run (a graph replay runs graph_launches of them).
  auto launches = [&](const RunRecord& r) {
    const int per_run = r.timer == Timer::graph ? std::max(1, r.graph_launches) : 1;
    return spec.run.timing.repeat > 0 ? spec.run.timing.warmup + spec.run.timing.repeat * per_run : 1;
  };
  // The library (`vs`) runs once per problem, beside the first run of that problem on any GPU: its row does not
  // depend on the config. A run that brings no library row back (a fault) leaves the problem to the next one.
  std::set<std::string> baselined;
  std::mutex baselined_mutex;
  if (!spec.run.vs.empty() && !spec.problems.empty())
    if (auto inst = session.instantiate(spec.kernel, spec.problems.front(), spec.base_config))
      if (auto b = baseline_for(*inst, spec.run.vs); !b) return b.status();

  // One thread per GPU, each running whichever compiled point is next, end to end: its worker call, the host inputs
  // and float64 reference (cached per problem, per thread) and the check.
  // Without a GPU (and no runner) one thread takes the compiles and reports what they use.
  const std::vector<int> gpus = spec.gpus.empty() || !can_run ? std::vector<int>{0} : spec.gpus;
  PointQueue queue(todo.size(), gpus.size());
  auto lane_main = [&](Lane& lane) {
    const int g = lane.gpu.index;
    WorkerClient* worker = lane.runs ? &session.worker(g) : nullptr;
    const bool was_running = worker && worker->running();
    const int starts0 = worker ? worker->starts() : 0;
    if (lane.runs)
      if (const auto& d = session.target(g).device) lane.gpu.name = d->name;
    ReferenceCache reference_cache;
    RunOptions options = spec.run;
    options.device = g;
    options.reference_cache = &reference_cache;
    while (const std::optional<std::size_t> k = queue.claim(interrupted)) {
      SweepPoint& p = points[todo[*k]];
      RunContext& ctx = contexts[p.index];
      try {
        const auto wait0 = Clock::now();
        Result<PreparedKernel> prepared = pool.take(*k);
        lane.compile_wait_s += seconds_since(wait0);
        if (!prepared) {
          p.status = PointStatus::error;
          p.reason = prepared.status().message();
          p.record = failed_record(spec.kernel, p.problem, p.config, prepared.status());
          ++lane.failed;
        } else {
          ++lane.compiled;
          p.resources = prepared->compiled.resources;
          p.smem_dynamic = prepared->instance.launch.dynamic_smem;
          p.compile_ms = prepared->compiled.compile_ms;
          p.from_cache = prepared->compiled.from_cache;
          if (p.from_cache) ++lane.cache_hits;
          const RunContext base = session_run_context(session, prepared->instance, g);
          ctx.source_hash = base.source_hash;
          ctx.sm_clock_khz = base.sm_clock_khz;
          ctx.mem_clock_khz = base.mem_clock_khz;
          if (!lane.runs) {
            p.status = PointStatus::not_run;
            p.reason = "no GPU: " + session.target().why_no_device;
            ++lane.not_run;
          } else {
            const auto run0 = Clock::now();
            const std::string problem_key = sweep_point_key(p.problem, {});
            bool with_library = false;
            if (!spec.run.vs.empty()) {
              std::lock_guard lock(baselined_mutex);
              with_library = baselined.insert(problem_key).second;
            }
            options.vs = with_library ? spec.run.vs : "";
            RunRecord r = spec.runner ? spec.runner(*prepared, g) : session.run(*prepared, options);
            if (with_library && !r.baseline) {
              std::lock_guard lock(baselined_mutex);
              baselined.erase(problem_key);
            }
            lane.gpu.busy_s += seconds_since(run0);
            r.gpu = g;
            if (lane.gpu.name.empty()) lane.gpu.name = r.device;
            p.status = status_of(r);
            if (r.failure || !r.verified) p.reason = r.failure_text();
            ++lane.gpu.ran;
            if (p.status == PointStatus::passed) ++lane.gpu.passed;
            else ++lane.failed;
            lane.kernel_s += r.time_ms.median * 1e-3 * launches(r);
            p.record = std::move(r);
          }
        }
      } catch (const std::exception& e) {  // a runner's own exception: that point's error, on this thread
        p.status = PointStatus::error;
        p.reason = std::string("running the point: ") + e.what();
        p.record = failed_record(spec.kernel, p.problem, p.config, make_error(ErrorCode::internal, p.reason));
        ++lane.failed;
      }
      queue.finished(p.index);
    }
    if (worker) {
      const int started = worker->starts() - starts0;
      lane.gpu.restarts = std::max(0, started - (was_running || started == 0 ? 0 : 1));
    }
    queue.lane_done();
  };

  std::vector<Lane> lanes(gpus.size());
  LaneThreads lane_threads(queue, lanes);
  for (std::size_t i = 0; i < lanes.size(); ++i) {
    lanes[i].gpu.index = gpus[i];
    lanes[i].runs = can_run;
    lanes[i].thread = std::thread(lane_main, std::ref(lanes[i]));
  }

  // Stores and reports each point on this thread.
  SweepProgress progress{0, points.size()};
  // The best point (value, index) over all GPUs, and each GPU's own: chips of one model can rank some configs
  // differently, so a sweep over several says what each found.
  struct Best {
    double value = 0;
    std::optional<std::size_t> index;
  };
  Best best;
  std::map<int, Best> best_on_gpu;
  const bool higher_better = metric_higher_is_better(best_metric);
  auto consider = [&](Best& b, double v, std::size_t index) {
    // Ties go to the earlier point, whichever GPU finished first.
    if (!b.index || (higher_better ? v > b.value : v < b.value) || (v == b.value && index < *b.index)) b = {v, index};
  };
  auto report = [&](SweepPoint& p) -> Status {
    if (store && p.record) {
      const auto store0 = Clock::now();
      auto id = store->insert(*p.record, contexts[p.index]);
      sum.store_s += seconds_since(store0);
      if (!id) return id.status().with_context("sweep " + sum.id + " stopped at point " + std::to_string(p.index));
      p.row_id = *id;
    }
    if (p.status == PointStatus::passed && p.record)
      if (const auto v = record_metric(*p.record, best_metric)) {
        consider(best, *v, p.index);
        consider(best_on_gpu[p.record->gpu], *v, p.index);
      }
    ++progress.done;
    if (on_point) on_point(p, progress);
    return Status::success();
  };
  // Points that need no GPU are reported after the point before them (in enumeration order), so one GPU reports in
  // that order; the GPUs' points as they finish.
  std::vector<char> queued(points.size(), 0);
  for (std::size_t i : todo) queued[i] = 1;
  auto report_run_free_from = [&](std::size_t i) -> Status {
    for (; i < points.size() && !queued[i]; ++i) {
      if (interrupted && interrupted->load()) break;
      SweepPoint& p = points[i];
      if (p.status == PointStatus::already_stored) ++sum.resumed;
      else if (p.status == PointStatus::filtered) ++sum.filtered;
      else if (p.status == PointStatus::skipped) ++sum.skipped;
      TL_RETURN_IF_ERROR(report(p));
    }
    return Status::success();
  };
  TL_RETURN_IF_ERROR(report_run_free_from(0));
  while (const std::optional<std::size_t> i = queue.next_finished()) {
    TL_RETURN_IF_ERROR(report(points[*i]));
    TL_RETURN_IF_ERROR(report_run_free_from(*i + 1));
  }
  lane_threads.join();

  for (const Lane& l : lanes) {
    sum.ran += l.gpu.ran;
    sum.passed += l.gpu.passed;
    sum.failed += l.failed;
    sum.not_run += l.not_run;
    sum.compiled += l.compiled;
    sum.compile_cache_hits += l.cache_hits;
    sum.compile_wait_s += l.compile_wait_s;
    sum.run_s += l.gpu.busy_s;
    sum.kernel_s += l.kernel_s;
    if (!l.runs) continue;
    sum.gpus.push_back(l.gpu);
    sum.gpus.back().best = best_on_gpu[l.gpu.index].index;
  }
  sum.best = best.index;
  sum.interrupted = progress.done < points.size();
  sum.wall_s = seconds_since(t0);
  if (sum.ran > 0)
    sum.overhead_ms = (sum.wall_s * double(sum.gpus.size()) - sum.kernel_s) * 1e3 / double(sum.ran);
  return sum;
}

void to_json(nlohmann::json& j, const SweepPoint& p) {
  j = {{"index", p.index},
       {"problem", typed_params(p.problem)},
       {"config", typed_params(p.config)},
       {"status", point_status_name(p.status)},
       {"reason", p.reason},
       {"resources", p.resources},
       {"smem", std::max(0, p.resources.shared_static_bytes) + static_cast<std::int64_t>(p.smem_dynamic)},
       {"smem_static", std::max(0, p.resources.shared_static_bytes)},
       {"smem_dynamic", p.smem_dynamic},
       {"compile_ms", p.compile_ms},
       {"from_cache", p.from_cache},
       {"row_id", p.row_id}};
  if (!p.record) return;
  const RunRecord& r = *p.record;
  j["kernel"] = r.kernel;
  j["device"] = r.device;
  j["gpu"] = r.gpu >= 0 ? nlohmann::json(r.gpu) : nlohmann::json();
  j["tflops"] = r.tflops;
  j["gbps"] = r.gbps;
  j["efficiency"] = r.efficiency.value;
  j["median_ms"] = r.time_ms.median;
  j["min_ms"] = r.time_ms.min;
  j["max_ms"] = r.time_ms.max;
  j["rel_error"] = r.rel_error();
  j["max_abs_error"] = r.max_abs_error();
  j["passed"] = r.passed();
  j["record"] = r;
}

void to_json(nlohmann::json& j, const SweepSummary& s) {
  j = {{"id", s.id},           {"total", s.total},         {"ran", s.ran},
       {"passed", s.passed},   {"failed", s.failed},       {"skipped", s.skipped},
       {"filtered", s.filtered}, {"not_run", s.not_run},   {"resumed", s.resumed}, {"other_shards", s.other_shards},
       {"compiled", s.compiled}, {"compile_cache_hits", s.compile_cache_hits},
       {"interrupted", s.interrupted}, {"wall_s", s.wall_s}, {"kernel_s", s.kernel_s},
       {"overhead_ms", s.overhead_ms}, {"compile_wait_s", s.compile_wait_s}, {"run_s", s.run_s},
       {"store_s", s.store_s}};
  j["best"] = s.best ? nlohmann::json(*s.best) : nlohmann::json();
  j["gpus"] = nlohmann::json::array();
  for (const SweepGpu& g : s.gpus)
    j["gpus"].push_back({{"index", g.index}, {"name", g.name}, {"ran", g.ran}, {"passed", g.passed},
                         {"restarts", g.restarts}, {"busy_s", g.busy_s},
                         {"best", g.best ? nlohmann::json(*g.best) : nlohmann::json()}});
}

// [SECTION] printing

SweepPrinter::SweepPrinter(std::FILE* out, bool force_plain, bool show_gpu)
    : m_out(out), m_tty(!force_plain && isatty(fileno(out))), m_show_gpu(show_gpu) {}

std::string point_resources_text(const SweepPoint& p) {
  if (p.resources.registers < 0) return {};
  const int smem_static = std::max(0, p.resources.shared_static_bytes);
  std::string text = std::to_string(p.resources.registers) + " regs, " +
                     std::to_string(static_cast<std::int64_t>(smem_static) + p.smem_dynamic) + " B smem";
  if (p.smem_dynamic > 0)
    text += smem_static > 0 ? " (" + std::to_string(smem_static) + " static + " + std::to_string(p.smem_dynamic) + " dynamic)"
                            : " (" + std::to_string(p.smem_dynamic) + " dynamic)";
  text += ", " + std::to_string(std::max(0, p.resources.spill_store_bytes) + std::max(0, p.resources.spill_load_bytes)) +
          " B spills";
  return text + (p.from_cache ? ", cached" : "");
}

void SweepPrinter::point(const SweepPoint& p, const SweepProgress& progress) {
  const RunRecord* r = p.record ? &*p.record : nullptr;
  std::string what = point_status_name(p.status);
  // Points that compiled but did not run (no GPU, or stored before) say what they use, on a terminal too.
  if (p.status == PointStatus::not_run || p.status == PointStatus::already_stored)
    if (const std::string res = point_resources_text(p); !res.empty()) what += " (" + res + ")";
  if (p.status == PointStatus::passed && r) {
    // TFLOP/s for kernels that count flops, GB/s for the rest.
    const double rate = r->flops > 0 ? r->tflops : r->gbps;
    char buf[64];
    if (r->flops > 0) std::snprintf(buf, sizeof buf, "%.1f TFLOP/s, %.4f ms", r->tflops, r->time_ms.median);
    else std::snprintf(buf, sizeof buf, "%.0f GB/s, %.4f ms", r->gbps, r->time_ms.median);
    what = buf;
    if (rate > m_best) {
      m_best = rate;
      m_best_text = what.substr(0, what.find(','));
    }
  }
  const std::string config = params_text(p.config) + (m_show_gpu && r && r->gpu >= 0 ? " on GPU " + std::to_string(r->gpu) : "");
  if (m_tty) {
    // A compiled point that could not run (no GPU) keeps a line of its own above the bar: its resources are the
    // sweep's result.
    if (p.status == PointStatus::not_run)
      std::fprintf(m_out, "\r\033[K  %s %s: %s\n", params_text(p.problem).c_str(), params_text(p.config).c_str(),
                   what.c_str());
    const int width = 30;
    const int filled = progress.total ? static_cast<int>(width * progress.done / progress.total) : width;
    std::fprintf(m_out, "\r\033[K[%s%s] %zu/%zu  %s%s%s%s: %s", std::string(filled, '#').c_str(),
                 std::string(width - filled, '.').c_str(), progress.done, progress.total,
                 m_best_text.empty() ? "" : "best ", m_best_text.c_str(), m_best_text.empty() ? "" : "  ",
                 config.c_str(), what.c_str());
    if (p.status == PointStatus::fault || p.status == PointStatus::timeout || p.status == PointStatus::error)
      std::fprintf(m_out, "\n  %s\n", p.reason.c_str());
  } else {
    std::fprintf(m_out, "[%zu/%zu] %s %s: %s", progress.done, progress.total, params_text(p.problem).c_str(),
                 config.c_str(), what.c_str());
    if (p.status != PointStatus::not_run && p.status != PointStatus::already_stored && !p.reason.empty())
      std::fprintf(m_out, ": %s", p.reason.c_str());
    std::fputc('\n', m_out);
  }
  std::fflush(m_out);
}

void SweepPrinter::finish() {
  if (m_tty) std::fputc('\n', m_out);
  std::fflush(m_out);
}

}  // namespace tl
