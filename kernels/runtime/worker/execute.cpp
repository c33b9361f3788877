// One launch in the worker: its buffers filled and poisoned, the kernel launched and timed, its outputs checked on the
// device, the timeline captured; and the worker's launch, sweep and device requests.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <type_traits>

#include <nlohmann/json.hpp>

#include "runtime/core/log.hpp"
#include "runtime/trace/timeline.hpp"
#include "runtime/worker/gpu.hpp"

namespace tl {

namespace detail {
Status parse_launch(const nlohmann::json& j, const Message& m, LaunchSpec& s);
nlohmann::json write_result(const LaunchResult& r, Message& m);
}  // namespace detail

using namespace cuda_detail;

namespace {

Dim3 grid_for(std::uint64_t count) {
  std::uint64_t blocks = (count + 255) / 256;
  std::uint64_t cap = static_cast<std::uint64_t>(std::max(state().info.sm_count, 1)) * 32;
  return {static_cast<std::uint32_t>(std::clamp<std::uint64_t>(blocks, 1, cap)), 1, 1};
}

Status fill_device(void* ptr, const BufferSpec& b) {
  if (b.count == 0) return {};
  auto fill_pattern = [&](std::uint64_t bits) -> Status {
    auto k = builtin_kernel("tl_fill_pattern");
    if (!k) return k.status();
    unsigned long long count = b.count, pattern = bits;
    unsigned size = static_cast<unsigned>(dtype_size(b.dtype));
    void* args[] = {&ptr, &count, &size, &pattern};
    return launch_raw(*k, grid_for(b.count), {256, 1, 1}, 0, {}, args);
  };
  if (b.role == BufferRole::output) return fill_pattern(poison_bits(b.dtype));
  if (b.role == BufferRole::scratch || b.fill.kind == Fill::Kind::zeros) {
    TL_CUDA(cudaMemset(ptr, 0, b.bytes()), "clearing buffer '" + b.name + "'");
    return {};
  }
  switch (b.fill.kind) {
    case Fill::Kind::uniform: {
      auto k = builtin_kernel("tl_fill_uniform");
      if (!k) return k.status();
      unsigned long long count = b.count, seed = b.fill.seed;
      int dtype = static_cast<int>(b.dtype);
      double lo = b.fill.lo, hi = b.fill.hi;
      const Fill::Tiles& x = b.fill.tiles;
      long long rows = x.rows, cols = x.cols, tile_rows = x.tile_rows, tile_cols = x.tile_cols;
      void* args[] = {&ptr, &count, &dtype, &seed, &lo, &hi, &rows, &cols, &tile_rows, &tile_cols};
      return launch_raw(*k, grid_for(b.count), {256, 1, 1}, 0, {}, args);
    }
    case Fill::Kind::constant: {
      std::uint64_t bits = 0;
      store_element(&bits, b.dtype, 0, b.fill.value);
      return fill_pattern(bits);
    }
    case Fill::Kind::kv_fp8: {
      if (dtype_size(b.dtype) != 1)
        return make_error(ErrorCode::invalid_argument, "buffer '" + b.name + "': a kv_fp8 fill needs a 1-byte dtype, not " +
                                                           dtype_name(b.dtype));
      auto k = builtin_kernel("tl_fill_kv_fp8");
      if (!k) return k.status();
      unsigned long long count = b.count, seed = b.fill.seed;
      double lo = b.fill.lo, hi = b.fill.hi;
      void* args[] = {&ptr, &count, &seed, &lo, &hi};
      return launch_raw(*k, grid_for(b.count), {256, 1, 1}, 0, {}, args);
    }
    case Fill::Kind::data:
      TL_CUDA(cudaMemcpy(ptr, b.data.data(), b.bytes(), cudaMemcpyHostToDevice), "uploading buffer '" + b.name + "'");
      return {};
    case Fill::Kind::zeros: break;
  }
  return {};
}

// A buffer kept across launches, grown (contents not kept) to at least `bytes` with `alloc` / `release`.
template <typename Alloc, typename Release>
Status grow_kept(unsigned char*& p, std::size_t& have, std::size_t bytes, Alloc alloc, Release release, const std::string& what) {
  if (bytes <= have) return {};
  if (p) release(p);
  p = nullptr;
  have = 0;
  void* fresh = nullptr;
  TL_CUDA(alloc(&fresh, bytes), "allocating " + std::to_string(bytes) + " bytes of " + what);
  p = static_cast<unsigned char*>(fresh);
  have = bytes;
  return {};
}

// At least `bytes` of the pinned read-back buffer.
Result<unsigned char*> staging_buffer(std::size_t bytes) {
  DeviceState& s = state();
  TL_RETURN_IF_ERROR(grow_kept(s.staging, s.staging_bytes, bytes, [](void** q, std::size_t len) { return cudaMallocHost(q, len); },
                               [](void* q) { cudaFreeHost(q); }, "pinned read-back memory"));
  return s.staging;
}

// An output checked where it lies: its poison counted (outputs only) and its sampled positions gathered on the
// device, then only the counters and the samples copied back. o.positions must be set.
Status check_on_device(const void* data, const BufferSpec& b, OutputResult& o) {
  DeviceState& s = state();
  const std::size_t n = o.positions.size(), size = dtype_size(b.dtype);
  const std::size_t pos_off = 16, sample_off = pos_off + n * 8, bytes = sample_off + n * size;
  TL_RETURN_IF_ERROR(grow_kept(s.check, s.check_bytes, bytes, [](void** q, std::size_t len) { return cudaMalloc(q, len); },
                               [](void* q) { cudaFree(q); }, "device memory for the output check"));
  auto* result = reinterpret_cast<unsigned long long*>(s.check);
  auto* positions = reinterpret_cast<unsigned long long*>(s.check + pos_off);
  void* samples = s.check + sample_off;
  static_assert(sizeof(unsigned long long) == sizeof(std::uint64_t));
  TL_CUDA(cudaMemcpy(positions, o.positions.data(), n * 8, cudaMemcpyHostToDevice), "uploading the sample positions");
  const bool poisoned = b.role == BufferRole::output;
  if (poisoned) {
    TL_CUDA(cudaMemset(result, 0, 8), "clearing the poison counter");
    TL_CUDA(cudaMemset(result + 1, 0xFF, 8), "clearing the poison counter");
    auto k = builtin_kernel("tl_count_pattern");
    if (!k) return k.status();
    unsigned long long count = b.count, bits = poison_bits(b.dtype);
    unsigned sz = static_cast<unsigned>(size);
    void* args[] = {const_cast<void**>(&data), &count, &sz, &bits, &result};
    TL_RETURN_IF_ERROR(launch_raw(*k, grid_for(b.count), {256, 1, 1}, 0, {}, args));
  }
  if (n > 0) {
    auto k = builtin_kernel("tl_gather");
    if (!k) return k.status();
    unsigned long long count = n;
    unsigned sz = static_cast<unsigned>(size);
    void* args[] = {const_cast<void**>(&data), &positions, &count, &sz, &samples};
    TL_RETURN_IF_ERROR(launch_raw(*k, grid_for(n), {256, 1, 1}, 0, {}, args));
  }
  unsigned long long counters[2] = {0, 0};
  if (poisoned) TL_CUDA(cudaMemcpy(counters, result, sizeof(counters), cudaMemcpyDeviceToHost), "reading the poison count");
  o.unwritten.count = counters[0];
  o.unwritten.first = counters[0] > 0 ? counters[1] : 0;
  o.samples.resize(n * size);
  if (n > 0) TL_CUDA(cudaMemcpy(o.samples.data(), samples, n * size, cudaMemcpyDeviceToHost), "reading the samples");
  return {};
}

}  // namespace

namespace {

// The probe build of the kernel, launched with the same parameters into a zeroed probe buffer that its
// `tl_timeline_buffer` global points to. With `timed`, it is first timed alternately with the kernel itself
// (`plain`; same warm-up, repeats and L2 flushes: the probe overhead), whose times go to `kernel_times`; the
// buffer kept is that of one more clean run after an L2 flush.
Result<TimelineCapture> run_timeline(const LaunchSpec& spec, const TimingOptions& timing, void** params,
                                     const std::string& what, const LaunchFn& plain, std::vector<double>& kernel_times) {
  const TimelineLaunch& tl = *spec.timeline;
  auto lib = load_library(tl.image);
  if (!lib) return lib.status().with_context(what + ": the probe build");
  auto ready = ready_kernel(*lib, tl.kernel, spec, state().info, what + ": the probe build");
  if (!ready) return ready.status();
  const LaunchGeometry& g = ready->geometry;
  void* global = nullptr;
  std::size_t global_bytes = 0;
  if (cudaLibraryGetGlobal(&global, &global_bytes, *lib, "tl_timeline_buffer") != cudaSuccess ||
      global_bytes != sizeof(void*)) {
    cudaGetLastError();
    return make_error(ErrorCode::unsupported, what + ": the probe build has no tl_timeline_buffer: its source must "
                                                     "include tile/probe.hpp and be compiled with -DTL_TIMELINE=1");
  }
  const auto blocks = static_cast<std::uint32_t>(g.grid.volume());
  const auto warps = static_cast<std::uint32_t>((g.block.volume() + 31) / 32);
  const std::uint32_t capacity = tl.capacity ? tl.capacity : probe::kDefaultCapacity;
  const std::uint64_t clock_hz = tl.clock_hz ? tl.clock_hz : static_cast<std::uint64_t>(state().info.clock_khz) * 1000;
  probe::ProbeHeader h{};
  h.magic = probe::kMagic;
  h.version = probe::kVersion;
  h.num_blocks = blocks;
  h.warps_per_block = warps;
  h.capacity = capacity;
  h.clock_hz = clock_hz;
  const std::uint64_t bytes = probe::buffer_bytes(blocks, warps, capacity);
  Buffers buf;
  buf.ptrs.push_back(nullptr);
  TL_CUDA(cudaMalloc(&buf.ptrs[0], bytes), what + ": allocating the " + std::to_string(bytes >> 20) +
                                               " MiB timeline buffer (" + std::to_string(blocks) + " blocks x " +
                                               std::to_string(warps) + " warps x " + std::to_string(capacity) + " marks)");
  auto reset = [&]() -> Status {
    TL_CUDA(cudaMemset(buf.ptrs[0], 0, bytes), "clearing the timeline buffer");
    TL_CUDA(cudaMemcpy(buf.ptrs[0], &h, sizeof h, cudaMemcpyHostToDevice), "writing the timeline header");
    return {};
  };
  TL_CUDA(cudaMemcpy(global, &buf.ptrs[0], sizeof(void*), cudaMemcpyHostToDevice), "pointing tl_timeline_buffer at the buffer");
  LaunchFn launch = [&](cudaStream_t stream) { return launch_ready(*ready, params, stream); };
  TimelineCapture capture;
  TL_RETURN_IF_ERROR(reset());
  if (tl.timed && timing.repeat > 0) {
    auto times = timed_runs({plain, launch}, timing, what + " (probes off and on, alternated)");
    if (!times) return times.status();
    kernel_times = std::move((*times)[0]);
    capture.times_ms = std::move((*times)[1]);
    capture.time_ms = compute_stats(capture.times_ms);
    TL_RETURN_IF_ERROR(reset());
  }
  if (timing.flush_l2) TL_RETURN_IF_ERROR(flush_l2());
  TL_RETURN_IF_ERROR(launch(nullptr).with_context(what + " (probes on)"));
  TL_CUDA(cudaDeviceSynchronize(), what + ": the probe run");
  std::vector<std::uint8_t> host(bytes);
  TL_CUDA(cudaMemcpy(host.data(), buf.ptrs[0], bytes, cudaMemcpyDeviceToHost), "reading back the timeline buffer");
  void* null = nullptr;
  TL_CUDA(cudaMemcpy(global, &null, sizeof(void*), cudaMemcpyHostToDevice), "detaching the timeline buffer");
  auto compact = compact_probe_buffer(host.data(), host.size());
  if (!compact) return compact.status();
  capture.buffer = std::move(*compact);
  return capture;
}

}  // namespace

// Wall time of the worker's steps of one launch, logged at debug level (TILELAB_LOG=debug) when the launch ends
// (after its buffers are freed): where a run's time outside the kernel goes.
class Phases {
 public:
  explicit Phases(std::string what) : m_what(std::move(what)) {}
  ~Phases() {
    mark("free");
    log::debug("worker ", m_what, ":", m_text);
  }
  void mark(const char* phase) {
    const auto now = std::chrono::steady_clock::now();
    char buf[64];
    std::snprintf(buf, sizeof(buf), " %s %.2f ms", phase, std::chrono::duration<double, std::milli>(now - m_last).count());
    m_text += buf;
    m_last = now;
  }

 private:
  std::string m_what, m_text;
  std::chrono::steady_clock::time_point m_last = std::chrono::steady_clock::now();
};

Result<LaunchResult> execute_launch(const LaunchSpec& spec) {
  Phases phases(spec.label.empty() ? spec.kernel : spec.label);
  TL_RETURN_IF_ERROR(use_device(spec.device));
  const DeviceState& dev = state();
  const std::string what = spec.label.empty() ? spec.kernel : spec.label;

  auto lib = load_library(spec.image);
  if (!lib) return lib.status().with_context(what);
  auto ready = ready_kernel(*lib, spec.kernel, spec, dev.info, what);
  if (!ready) return ready.status();
  const cudaFuncAttributes& fa = ready->attributes;
  LaunchResult result;
  result.device_name = dev.info.name;
  result.attributes = {fa.numRegs, static_cast<int>(fa.sharedSizeBytes), static_cast<int>(fa.localSizeBytes),
                       static_cast<int>(fa.constSizeBytes), fa.maxThreadsPerBlock, fa.binaryVersion};
  phases.mark("load");

  Buffers buffers;
  for (const auto& b : spec.buffers) {
    void* p = nullptr;
    if (b.count > 0)
      TL_CUDA(cudaMalloc(&p, b.bytes()), what + ": allocating " + std::to_string(b.bytes()) + " bytes for '" + b.name + "'");
    buffers.ptrs.push_back(p);
  }
  for (std::size_t i = 0; i < spec.buffers.size(); ++i)
    TL_RETURN_IF_ERROR(fill_device(buffers.ptrs[i], spec.buffers[i]));
  TL_CUDA(cudaDeviceSynchronize(), what + ": filling the buffers");
  phases.mark("alloc+fill");

  auto packed = pack_params(spec, buffers.ptrs, what);
  if (!packed) return packed.status();
  std::vector<void*> params = packed->pointers();

  // The checked run: inputs filled, outputs poisoned, one launch.
  LaunchFn launch = [&](cudaStream_t stream) { return launch_ready(*ready, params.data(), stream); };
  TL_RETURN_IF_ERROR(launch(nullptr).with_context(what));
  TL_CUDA(cudaDeviceSynchronize(), what + ": running the kernel");
  phases.mark("checked run");

  Blob baseline_reference;  // the kernel's output the baseline is compared with
  for (std::size_t i = 0; i < spec.buffers.size(); ++i) {
    const BufferSpec& b = spec.buffers[i];
    if (!b.is_output()) continue;
    OutputResult o;
    o.name = b.name;
    o.dtype = b.dtype;
    o.count = b.count;
    o.positions = sample_positions(b.count, b.max_samples, b.sample_seed, b.sample_unit);
    const bool baseline_compares = spec.baseline && b.name == spec.baseline->compared_output();
    if (!b.return_all && !baseline_compares) {
      TL_RETURN_IF_ERROR(check_on_device(buffers.ptrs[i], b, o).with_context(what + ": checking '" + b.name + "'"));
      result.outputs.push_back(std::move(o));
      continue;
    }
    // The whole output is wanted on the host (returned, or compared with the baseline's): read it back once.
    auto host = staging_buffer(b.bytes());
    if (!host) return host.status().with_context(what);
    if (b.bytes() > 0)
      TL_CUDA(cudaMemcpy(*host, buffers.ptrs[i], b.bytes(), cudaMemcpyDeviceToHost), what + ": reading back '" + b.name + "'");
    if (b.role == BufferRole::output) o.unwritten = count_unwritten(*host, b.dtype, b.count);
    std::size_t size = dtype_size(b.dtype);
    o.samples.resize(o.positions.size() * size);
    for (std::size_t j = 0; j < o.positions.size(); ++j)
      std::memcpy(o.samples.data() + j * size, *host + o.positions[j] * size, size);
    if (baseline_compares) baseline_reference.assign(*host, *host + b.bytes());
    if (b.return_all) o.data.assign(*host, *host + b.bytes());
    result.outputs.push_back(std::move(o));
  }

  phases.mark("readback");
  // One timing for everything timed here (the kernel, its probe build, the baseline): a graph's launches are sized
  // on the kernel.
  auto timing = resolve_timing(launch, spec.timing, what);
  if (!timing) return timing.status();
  result.graph_launches = timing->timer == Timer::graph ? timing->graph_launches : 0;
  // A timed timeline run times the kernel alternately with its probe build (run_timeline), not here.
  const bool timed_with_probes = spec.timeline && spec.timeline->timed;
  auto keep_times = [&](std::vector<double> times) {
    result.times_ms = std::move(times);
    result.time_ms = compute_stats(result.times_ms);
    result.l2_flushed = spec.timing.flush_l2;
  };
  if (timing->repeat > 0 && !timed_with_probes) {
    auto times = timed_runs(launch, *timing, what);
    if (!times) return times.status();
    keep_times(std::move(*times));
  }
  phases.mark("timed runs");
  if (spec.timing.measure_dram) {
    // Cold L2 as in the timed runs, then one launch under the profiler; a platform that cannot count says why.
    if (spec.timing.flush_l2) TL_RETURN_IF_ERROR(flush_l2());
    result.dram = measure_dram_traffic([&] { return launch(nullptr); });
    if (cuda_context_poisoned()) return make_error(ErrorCode::fault, what + ": the profiled launch faulted");
  }
  if (spec.baseline) {
    // A baseline that cannot run (no libcublas or libcudnn, a shape cuDNN refuses) is reported beside the kernel's
    // result; a sticky CUDA error is not: the worker has to go.
    auto b = run_baseline(spec, *timing, buffers.ptrs, baseline_reference);
    if (!b && cuda_context_poisoned()) return b.status();
    if (b) {
      result.baseline = std::move(*b);
    } else {
      result.baseline = BaselineResult{};
      result.baseline->name = baseline_library(spec.baseline->kind);
      result.baseline->error = b.status().message();
    }
  }
  if (spec.timeline) {
    std::vector<double> kernel_times;
    auto t = run_timeline(spec, *timing, params.data(), what, launch, kernel_times);
    if (!t && cuda_context_poisoned()) return t.status();
    if (!kernel_times.empty()) keep_times(std::move(kernel_times));
    if (t) {
      result.timeline = std::move(*t);
    } else {
      result.timeline = TimelineCapture{};
      result.timeline->error = t.status().message();
    }
  }
  if (timing->repeat > 0 && result.times_ms.empty()) {  // the probe build failed before its timed runs
    auto times = timed_runs(launch, *timing, what);
    if (!times) return times.status();
    keep_times(std::move(*times));
  }
  phases.mark("baseline/dram/timeline");
  return result;
}

Result<Message> serve_launch(const Message& request, WorkerChannel&) {
  LaunchSpec spec;
  TL_RETURN_IF_ERROR(detail::parse_launch(request.header.value("launch", nlohmann::json()), request, spec));
  auto r = execute_launch(spec);
  if (!r) return r.status();
  Message reply = make_reply(0);
  reply.header["result"] = detail::write_result(*r, reply);
  return reply;
}

Result<Message> serve_sweep(const Message& request, WorkerChannel& channel) {
  const auto& items = request.header.value("items", nlohmann::json::array());
  std::size_t ok = 0, failed = 0;
  for (std::size_t i = 0; i < items.size(); ++i) {
    LaunchSpec spec;
    Status parsed = detail::parse_launch(items[i], request, spec);
    Result<LaunchResult> r = parsed.ok() ? execute_launch(spec) : Result<LaunchResult>(parsed);
    if (!r && cuda_context_poisoned()) return r.status().with_context("sweep item " + std::to_string(i));
    Message m = make_progress(channel.id(), {{"index", i}, {"ok", r.ok()}});
    if (r) {
      m.header["result"] = detail::write_result(*r, m);
      ++ok;
    } else {
      m.header["error"] = status_to_json(r.status());
      ++failed;
    }
    TL_RETURN_IF_ERROR(channel.progress(std::move(m.header), std::move(m.blobs)));
  }
  return make_reply(0, {{"items", items.size()}, {"succeeded", ok}, {"failed", failed}});
}

Result<Message> serve_device(const Message& request, WorkerChannel&) {
  TL_RETURN_IF_ERROR(use_device(request.header.value("device", 0)));
  return make_reply(0, {{"device", state().info}});
}

}  // namespace tl

