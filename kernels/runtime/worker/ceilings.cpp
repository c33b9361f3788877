// Device ceilings through the worker: the parent asks for them (device_ceilings, cached), the worker runs the
// built-in micro-benchmarks and turns their times into rates.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <ctime>

#include "runtime/core/log.hpp"
#include "runtime/worker/ceilings.hpp"
#include "runtime/worker/client.hpp"
#include "runtime/worker/gpu.hpp"

namespace tl {

namespace {

using namespace cuda_detail;

constexpr int kWarmup = 2;
constexpr int kRepeat = 10;
constexpr double kSustainS = 3.0;  // seconds of tensor load before the sustained measurement

std::string utc_now() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

struct DeviceMemory {
  void* p = nullptr;
  ~DeviceMemory() {
    if (p) cudaFree(p);
  }
};

Status alloc(DeviceMemory& m, std::size_t bytes, const char* what) {
  cudaError_t e = cudaMalloc(&m.p, bytes);
  if (e != cudaSuccess) return cuda_status(e, std::string("allocating ") + what);
  return {};
}

// One benchmark: times `launch`, converts `amount` (bytes or flops per run) to a rate from the median run.
Result<double> bench(const char* name, double amount, const char* unit, nlohmann::json shape,
                     const std::function<Status()>& launch, Ceilings& c, const OnBench& on_bench) {
  auto stats = time_runs(launch, kWarmup, kRepeat);
  if (!stats) return stats.status().with_context(name);
  double rate = amount / (stats->median * 1e-3);
  shape["amount_per_run"] = amount;
  shape["time_ms"] = *stats;
  shape["rate"] = rate;
  shape["unit"] = unit;
  c.details[name] = std::move(shape);
  if (on_bench) on_bench(name, rate, unit);
  return rate;
}

}  // namespace

Result<Ceilings> measure_ceilings(int device, const OnBench& on_bench) {
  TL_RETURN_IF_ERROR(use_device(device));
  const DeviceInfo& d = current_device();
  Ceilings c;
  c.device_name = d.name;
  c.pci_bus_id = d.pci_bus_id;
  c.arch = d.arch();
  c.measured_at = utc_now();
  c.tilelab_version = TILELAB_VERSION;
  c.tc_method = d.cc_major == 9 && d.cc_minor == 0
                    ? "the better of mma.sync (m16n8k16 bf16/f16, m16n8k32 e4m3) and wgmma (m64n256k16 bf16/f16, "
                      "m64n256k32 e4m3, operands in shared memory, 2 warpgroups per SM), f32 accumulate"
                    : "mma.sync (m16n8k16 bf16/f16, m16n8k32 e4m3), f32 accumulate";

  const unsigned sms = static_cast<unsigned>(std::max(d.sm_count, 1));
  const unsigned blocks_per_sm = static_cast<unsigned>(std::max(d.max_threads_per_sm / 256, 1));
  DeviceMemory sink;
  TL_RETURN_IF_ERROR(alloc(sink, 4096 * sizeof(float), "the benchmark sink"));
  float* sink_p = static_cast<float*>(sink.p);

  {  // HBM: a copy far larger than L2, read + write bytes counted; the better of two access patterns.
    std::size_t bytes = std::min<std::size_t>(1ull << 30, d.memory_bytes / 8) & ~std::size_t{255};
    DeviceMemory src, dst;
    TL_RETURN_IF_ERROR(alloc(src, bytes, "the copy source"));
    TL_RETURN_IF_ERROR(alloc(dst, bytes, "the copy destination"));
    if (cudaError_t e = cudaMemset(src.p, 0x3C, bytes); e != cudaSuccess) return cuda_status(e, "filling the copy source");
    unsigned long long n = bytes / 16;
    void* args[] = {&src.p, &dst.p, &n};
    auto copy = [&](const char* name, const char* kernel, Dim3 grid) -> Result<double> {
      auto k = builtin_kernel(kernel);
      if (!k) return k.status();
      return bench(name, 2.0 * bytes, "B/s", {{"bytes", bytes}, {"grid", grid.x}, {"block", 256}},
                   [&] { return launch_raw(*k, grid, {256, 1, 1}, 0, {}, args); }, c, on_bench);
    };
    auto strided = copy("hbm_copy", "tl_bench_copy", {sms * blocks_per_sm, 1, 1});
    if (!strided) return strided.status();
    auto flat = copy("hbm_copy_flat", "tl_bench_copy_flat", {static_cast<unsigned>((n + 255) / 256), 1, 1});
    if (!flat) return flat.status();
    c.hbm_bytes_per_s = std::max(*strided, *flat);
  }
  {  // L2: a quarter of L2, re-read many times (L1 bypassed).
    std::size_t bytes = std::max<std::size_t>(d.l2_bytes / 4, 1u << 20) & ~std::size_t{255};
    DeviceMemory src;
    TL_RETURN_IF_ERROR(alloc(src, bytes, "the L2 working set"));
    if (cudaError_t e = cudaMemset(src.p, 0x3C, bytes); e != cudaSuccess) return cuda_status(e, "filling the L2 set");
    auto k = builtin_kernel("tl_bench_l2_read");
    if (!k) return k.status();
    unsigned long long n = bytes / 16;
    int passes = static_cast<int>(std::clamp<std::size_t>((4ull << 30) / bytes, 1, 4096));
    void* args[] = {&src.p, &n, &passes, &sink_p};
    Dim3 grid{sms * blocks_per_sm, 1, 1};
    auto r = bench("l2_read", static_cast<double>(bytes) * passes, "B/s",
                   {{"bytes", bytes}, {"passes", passes}, {"grid", grid.x}, {"block", 256}},
                   [&] { return launch_raw(*k, grid, {256, 1, 1}, 0, {}, args); }, c, on_bench);
    if (!r) return r.status();
    c.l2_bytes_per_s = *r;
  }
  {  // Shared memory: 8 blocks of 256 per SM, 8 conflict-free 16-byte loads per thread per iteration.
    auto k = builtin_kernel("tl_bench_smem");
    if (!k) return k.status();
    int iters = 4096;
    void* args[] = {&iters, &sink_p};
    Dim3 grid{sms * 8, 1, 1};
    double bytes = static_cast<double>(grid.x) * 256 * iters * 8 * 16;
    auto r = bench("smem_read", bytes, "B/s", {{"iters", iters}, {"grid", grid.x}, {"block", 256}},
                   [&] { return launch_raw(*k, grid, {256, 1, 1}, 0, {}, args); }, c, on_bench);
    if (!r) return r.status();
    c.smem_bytes_per_s = *r;
  }
  {  // FP32: full occupancy, 8 independent FMA chains per thread.
    auto k = builtin_kernel("tl_bench_fma");
    if (!k) return k.status();
    int iters = 16384;
    float b = 0.999f, cc = 0.001f;
    void* args[] = {&iters, &b, &cc, &sink_p};
    Dim3 grid{sms * blocks_per_sm, 1, 1};
    double flops = static_cast<double>(grid.x) * 256 * iters * 8 * 2;
    auto r = bench("fp32_fma", flops, "FLOP/s", {{"iters", iters}, {"grid", grid.x}, {"block", 256}},
                   [&] { return launch_raw(*k, grid, {256, 1, 1}, 0, {}, args); }, c, on_bench);
    if (!r) return r.status();
    c.fp32_flops = *r;
  }
  // Tensor cores through mma.sync: 32 warps per SM, 8 accumulator chains per warp.
  auto mma = [&](const char* name, const char* kernel, double flops_per_mma, double& out) -> Status {
    auto k = builtin_kernel(kernel);
    if (!k) return k.status();
    int iters = 4096;
    void* args[] = {&iters, &sink_p};
    Dim3 grid{sms * 8, 1, 1};
    double flops = static_cast<double>(grid.x) * 4 * iters * 8 * flops_per_mma;
    auto r = bench(name, flops, "FLOP/s", {{"iters", iters}, {"grid", grid.x}, {"block", 128}, {"chains", 8}},
                   [&] { return launch_raw(*k, grid, {128, 1, 1}, 0, {}, args); }, c, on_bench);
    if (!r) return r.status();
    out = std::max(out, *r);
    return {};
  };
  if (d.cc_major >= 8) {
    TL_RETURN_IF_ERROR(mma("mma_bf16", "tl_bench_mma_bf16", 2.0 * 16 * 8 * 16, c.bf16_tc_flops));
    TL_RETURN_IF_ERROR(mma("mma_f16", "tl_bench_mma_f16", 2.0 * 16 * 8 * 16, c.fp16_tc_flops));
  }
  if (d.cc_major * 10 + d.cc_minor >= 89)
    TL_RETURN_IF_ERROR(mma("mma_e4m3", "tl_bench_mma_e4m3", 2.0 * 16 * 8 * 32, c.fp8_tc_flops));
  // Through wgmma (sm_90a only): one block of 2 warpgroups per SM, 4 wgmma per iteration per warpgroup. The kernel
  // sums its SM cycles and nanoseconds over the launches, so each rate comes with the mean clock it was reached at
  // and with FLOP per SM per clock from the cycles alone (clock-independent: 4096 is the H100's bf16 maximum).
  DeviceMemory clock;
  TL_RETURN_IF_ERROR(alloc(clock, 2 * sizeof(unsigned long long), "the clock readout"));
  // load_before_s > 0: keep the kernel busy that long first (the sustained measurement).
  auto wgmma = [&](const char* name, const char* kernel, double flops_per_wgmma, double& out, double* clock_mhz,
                   double load_before_s = 0) -> Status {
    auto k = builtin_kernel(kernel, BuiltinImage::sm90a);
    if (!k) return k.status();
    int iters = 8192;
    void* args[] = {&iters, &sink_p, &clock.p};
    Dim3 grid{sms, 1, 1};
    const double flops_per_block = 2.0 * iters * 4 * flops_per_wgmma;
    const auto start = std::chrono::steady_clock::now();
    while (std::chrono::steady_clock::now() - start < std::chrono::duration<double>(load_before_s)) {
      for (int i = 0; i < 20; ++i) TL_RETURN_IF_ERROR(launch_raw(*k, grid, {256, 1, 1}, 0, {}, args));
      if (cudaError_t e = cudaDeviceSynchronize(); e != cudaSuccess) return cuda_status(e, "the sustained tensor load");
    }
    if (cudaError_t e = cudaMemset(clock.p, 0, 2 * sizeof(unsigned long long)); e != cudaSuccess)
      return cuda_status(e, "zeroing the clock readout");
    auto r = bench(name, flops_per_block * grid.x, "FLOP/s",
                   {{"iters", iters}, {"grid", grid.x}, {"block", 256}, {"instr", "m64n256"}},
                   [&] { return launch_raw(*k, grid, {256, 1, 1}, 0, {}, args); }, c, on_bench);
    if (!r) return r.status();
    unsigned long long cycles_ns[2] = {0, 0};
    if (cudaError_t e = cudaMemcpy(cycles_ns, clock.p, sizeof(cycles_ns), cudaMemcpyDeviceToHost); e != cudaSuccess)
      return cuda_status(e, "reading the benchmark's clock");
    const double cycles = static_cast<double>(cycles_ns[0]), ns = static_cast<double>(cycles_ns[1]);
    const double mhz = ns > 0 ? 1e3 * cycles / ns : 0;
    c.details[name]["sm_clock_mhz"] = mhz;
    if (load_before_s > 0) c.details[name]["load_before_s"] = load_before_s;
    if (cycles > 0) c.details[name]["flop_per_sm_clock"] = flops_per_block * (kWarmup + kRepeat) / cycles;
    out = std::max(out, *r);
    if (clock_mhz) *clock_mhz = mhz;
    return {};
  };
  if (d.cc_major == 9 && d.cc_minor == 0) {
    TL_RETURN_IF_ERROR(wgmma("wgmma_bf16", "tl_bench_wgmma_bf16", 2.0 * 64 * 256 * 16, c.bf16_tc_flops, &c.tc_clock_mhz));
    TL_RETURN_IF_ERROR(wgmma("wgmma_f16", "tl_bench_wgmma_f16", 2.0 * 64 * 256 * 16, c.fp16_tc_flops, nullptr));
    TL_RETURN_IF_ERROR(wgmma("wgmma_e4m3", "tl_bench_wgmma_e4m3", 2.0 * 64 * 256 * 32, c.fp8_tc_flops, nullptr));
    // The rate above comes from a few 5 ms launches, near the boost clock. Under minutes of load the power cap
    // holds the clock lower (on the H100 SXM, 700 W: ~1590 against ~1740 MHz), and a long-running GEMM sees that
    // roof: keep the bf16 chain busy for kSustainS first, then measure it again.
    TL_RETURN_IF_ERROR(wgmma("wgmma_bf16_sustained", "tl_bench_wgmma_bf16", 2.0 * 64 * 256 * 16,
                             c.bf16_tc_sustained_flops, &c.tc_sustained_clock_mhz, kSustainS));
  }
  return c;
}

Result<Message> serve_ceilings(const Message& request, WorkerChannel& channel) {
  Status stream_error;
  auto c = measure_ceilings(request.header.value("device", 0), [&](const std::string& name, double v, const std::string& unit) {
    Status s = channel.progress({{"bench", name}, {"value", v}, {"unit", unit}});
    if (!s.ok()) stream_error = s;
  });
  if (!c) return c.status();
  TL_RETURN_IF_ERROR(stream_error);
  return make_reply(0, {{"ceilings", *c}});
}

Result<Ceilings> device_ceilings(WorkerClient& worker, const DeviceInfo& device, const std::string& cache_dir,
                                 bool refresh, const OnBench& on_bench) {
  std::string path = ceilings_cache_path(cache_dir, device);
  if (!refresh) {
    auto cached = load_ceilings(path);
    if (cached) return cached;
    log::debug(cached.status().message(), "; measuring");
  }
  auto reply = worker.call(
      make_request("ceilings", {{"device", device.index}}),
      [&](const Message& p) {
        if (on_bench)
          on_bench(p.header.value("bench", std::string()), p.header.value("value", 0.0),
                   p.header.value("unit", std::string()));
      },
      std::chrono::milliseconds(120000));
  if (!reply) return reply.status().with_context("measuring the device ceilings");
  Ceilings c = reply->header.value("ceilings", nlohmann::json::object()).get<Ceilings>();
  if (Status s = save_ceilings(path, c); !s.ok()) log::warn("ceilings not cached: ", s.message());
  return c;
}

}  // namespace tl
