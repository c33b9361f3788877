// Timed runs in the worker: warm-up, L2 flushes, and the timers (CUDA events, CUPTI activity, CUDA graph replays).
#include <cuda_runtime_api.h>

#include <algorithm>
#include <functional>
#include <memory>

#include "runtime/worker/gpu.hpp"
#include "runtime/worker/kernel_activity.hpp"

namespace tl::cuda_detail {

// A read (ld.cg, through L2) of twice the L2: every line the last run left, dirty ones written back here, is
// replaced by a clean line of the flush buffer. A write (cudaMemset) would leave the L2 full of dirty lines whose
// write-back the next timed run paid: a read-only kernel (a decode GEMV) wrote back some 21 MB while it read 35.
Status flush_l2() {
  DeviceState& s = state();
  if (!s.flush) {
    s.flush_bytes = std::max<std::size_t>(2 * s.info.l2_bytes, 32u << 20) & ~std::size_t{15};
    TL_CUDA(cudaMalloc(&s.flush, s.flush_bytes + 16), "allocating the L2 flush buffer");
    TL_CUDA(cudaMemset(s.flush, 0, s.flush_bytes + 16), "clearing the L2 flush buffer");
  }
  auto k = builtin_kernel("tl_bench_l2_read");
  if (!k) return k.status();
  const void* src = s.flush;
  unsigned long long n = s.flush_bytes / 16;
  int passes = 1;
  void* sink = static_cast<unsigned char*>(s.flush) + s.flush_bytes;  // the 16 bytes past the read
  void* args[] = {&src, &n, &passes, &sink};
  const unsigned sms = static_cast<unsigned>(std::max(s.info.sm_count, 1));
  const unsigned per_sm = static_cast<unsigned>(std::max(s.info.max_threads_per_sm / 256, 1));
  return launch_raw(*k, {sms * per_sm, 1, 1}, {256, 1, 1}, 0, {}, args).with_context("flushing L2");
}

namespace {

struct EventPair {
  cudaEvent_t start = nullptr, stop = nullptr;
  ~EventPair() {
    if (start) cudaEventDestroy(start);
    if (stop) cudaEventDestroy(stop);
  }
};

// `n` event pairs, created (a vector of them is never resized: the pairs own their events).
Result<std::unique_ptr<EventPair[]>> make_events(std::size_t n) {
  auto events = std::make_unique<EventPair[]>(n);
  for (std::size_t i = 0; i < n; ++i) {
    TL_CUDA(cudaEventCreate(&events[i].start), "creating CUDA events");
    TL_CUDA(cudaEventCreate(&events[i].stop), "creating CUDA events");
  }
  return events;
}

// N launches captured on a stream of their own into an instantiated graph, uploaded and replayed once (a first
// replay pays for the upload).
struct LaunchGraph {
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  ~LaunchGraph() {
    if (exec) cudaGraphExecDestroy(exec);
    if (graph) cudaGraphDestroy(graph);
  }
};

struct OwnStream {
  cudaStream_t stream = nullptr;
  ~OwnStream() {
    if (stream) cudaStreamDestroy(stream);
  }
};

Result<std::unique_ptr<LaunchGraph>> capture_graph(const LaunchFn& launch, int launches, cudaStream_t stream,
                                                   const std::string& what) {
  auto g = std::make_unique<LaunchGraph>();
  TL_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), what + ": capturing a CUDA graph");
  Status captured;
  for (int i = 0; i < launches && captured.ok(); ++i) captured = launch(stream);
  // The capture ends whatever happened, or the stream stays capturing.
  const cudaError_t ended = cudaStreamEndCapture(stream, &g->graph);
  TL_RETURN_IF_ERROR(captured.with_context(what + ": a launch under graph capture"));
  TL_CUDA(ended, what + ": capturing " + std::to_string(launches) + " launches into a CUDA graph");
  TL_CUDA(cudaGraphInstantiate(&g->exec, g->graph, 0), what + ": instantiating the CUDA graph");
  TL_CUDA(cudaGraphUpload(g->exec, stream), what + ": uploading the CUDA graph");
  TL_CUDA(cudaGraphLaunch(g->exec, stream), what + ": the graph's first replay");
  TL_CUDA(cudaStreamSynchronize(stream), what + ": the graph's first replay");
  return g;
}

}  // namespace

Result<Stats> time_runs(const std::function<Status()>& launch, int warmup, int repeat) {
  for (int i = 0; i < warmup; ++i) TL_RETURN_IF_ERROR(launch());
  TL_CUDA(cudaDeviceSynchronize(), "warm-up runs");
  const auto n = static_cast<std::size_t>(std::max(repeat, 1));
  auto events = make_events(n);
  if (!events) return events.status();
  for (std::size_t i = 0; i < n; ++i) {
    TL_CUDA(cudaEventRecord((*events)[i].start), "recording an event");
    TL_RETURN_IF_ERROR(launch());
    TL_CUDA(cudaEventRecord((*events)[i].stop), "recording an event");
  }
  TL_CUDA(cudaDeviceSynchronize(), "timed runs");
  std::vector<double> ms;
  for (std::size_t i = 0; i < n; ++i) {
    float t = 0;
    TL_CUDA(cudaEventElapsedTime(&t, (*events)[i].start, (*events)[i].stop), "reading an event");
    ms.push_back(t);
  }
  return compute_stats(std::move(ms));
}

Result<TimingOptions> resolve_timing(const LaunchFn& launch, TimingOptions timing, const std::string& what) {
  TL_RETURN_IF_ERROR(check_timing(timing));
  if (timing.timer != Timer::graph || timing.graph_launches > 0 || timing.repeat <= 0) return timing;
  // Three launches back to back between one event pair (the module is loaded and warm: the checked run came first).
  constexpr int kSizing = 3;
  auto events = make_events(1);
  if (!events) return events.status();
  TL_RETURN_IF_ERROR(launch(nullptr).with_context(what));
  TL_CUDA(cudaEventRecord((*events)[0].start), "recording an event");
  for (int i = 0; i < kSizing; ++i) TL_RETURN_IF_ERROR(launch(nullptr).with_context(what));
  TL_CUDA(cudaEventRecord((*events)[0].stop), "recording an event");
  TL_CUDA(cudaEventSynchronize((*events)[0].stop), what + ": sizing the CUDA graph");
  float ms = 0;
  TL_CUDA(cudaEventElapsedTime(&ms, (*events)[0].start, (*events)[0].stop), "reading an event");
  timing.graph_launches = graph_launches_for(ms / kSizing);
  return timing;
}

// Warm-up, then `repeat` runs each after its own L2 flush (outside what is timed), timed by the timer.
// Timed runs of several launches, alternated run by run (A, B, A, B, ...): launches compared with each other (a
// kernel and its probe build) see the same clocks and temperature, which drift over a long run (an H100 at 8192^3
// slows by ~10% within a few hundred launches).
Result<std::vector<std::vector<double>>> timed_runs(const std::vector<LaunchFn>& launches, const TimingOptions& timing,
                                                    const std::string& what) {
  if (timing.timer == Timer::graph && timing.graph_launches <= 0)
    return make_error(ErrorCode::internal, what + ": the graph timer's launches per graph were not resolved");
  for (int i = 0; i < timing.warmup; ++i)
    for (const auto& launch : launches) TL_RETURN_IF_ERROR(launch(nullptr).with_context(what));
  TL_CUDA(cudaDeviceSynchronize(), what + ": warm-up runs");
  const std::size_t n = launches.size(), runs = static_cast<std::size_t>(timing.repeat) * n;

  // What one timed run runs: the launch, or one replay of its graph of N launches.
  std::vector<std::function<Status()>> run;
  OwnStream capture;
  std::vector<std::unique_ptr<LaunchGraph>> graphs;
  if (timing.timer == Timer::graph) {
    TL_CUDA(cudaStreamCreateWithFlags(&capture.stream, cudaStreamNonBlocking), what + ": creating a capture stream");
    for (const LaunchFn& launch : launches) {
      auto g = capture_graph(launch, timing.graph_launches, capture.stream, what);
      if (!g) return g.status();
      graphs.push_back(std::move(*g));
      run.push_back([&, exec = graphs.back()->exec]() -> Status {
        TL_CUDA(cudaGraphLaunch(exec, nullptr), what + ": replaying the CUDA graph");
        return {};
      });
    }
  } else {
    for (const LaunchFn& launch : launches) run.push_back([&launch] { return launch(nullptr); });
  }

  std::unique_ptr<KernelActivity> activity;
  std::unique_ptr<EventPair[]> events;
  if (timing.timer == Timer::cupti) {
    auto started = KernelActivity::start();
    if (!started) return started.status();
    activity = std::move(*started);
  } else {
    auto made = make_events(runs);
    if (!made) return made.status();
    events = std::move(*made);
  }
  for (std::size_t i = 0; i < runs; ++i) {
    if (timing.flush_l2) TL_RETURN_IF_ERROR(flush_l2());
    if (activity) TL_RETURN_IF_ERROR(activity->begin_run(i));
    else TL_CUDA(cudaEventRecord(events[i].start), "recording an event");
    TL_RETURN_IF_ERROR(run[i % n]().with_context(what));
    if (activity) TL_RETURN_IF_ERROR(activity->end_run());
    else TL_CUDA(cudaEventRecord(events[i].stop), "recording an event");
  }
  TL_CUDA(cudaDeviceSynchronize(), what + ": timed runs");

  std::vector<double> ms(runs);
  if (activity) {
    auto times = activity->run_times(runs);
    if (!times) return times.status().with_context(what);
    ms = std::move(*times);
  } else {
    const double per_run = timing.timer == Timer::graph ? timing.graph_launches : 1;
    for (std::size_t i = 0; i < runs; ++i) {
      float t = 0;
      TL_CUDA(cudaEventElapsedTime(&t, events[i].start, events[i].stop), "reading an event");
      ms[i] = t / per_run;
    }
  }
  std::vector<std::vector<double>> times(n);
  for (std::size_t i = 0; i < runs; ++i) times[i % n].push_back(ms[i]);
  return times;
}

Result<std::vector<double>> timed_runs(const LaunchFn& launch, const TimingOptions& timing, const std::string& what) {
  auto times = timed_runs(std::vector<LaunchFn>{launch}, timing, what);
  if (!times) return times.status();
  return std::move(times->front());
}

}  // namespace tl::cuda_detail
