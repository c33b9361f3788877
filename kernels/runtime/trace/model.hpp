// Model timelines: what a pipeline would look like on a device, simulated per block from rates (no GPU needed).
#pragma once

#include <string>
#include <vector>

#include "runtime/core/status.hpp"
#include "runtime/device/ceilings.hpp"
#include "runtime/device/device.hpp"
#include "runtime/trace/timeline.hpp"

namespace tl {

// What a model timeline is parameterised with. Defaults are H100 SXM-class figures (not measurements): 132 SMs,
// 1.755 GHz, 3.0e12 B/s HBM, 10e12 B/s L2, 850e12 flop/s 16-bit wgmma, 500e12 flop/s mma.sync, 600 ns load latency.
struct ModelDevice {
  int num_sms = 132;
  double clock_hz = 1.755e9;
  double hbm_bytes_per_s = 3.0e12;
  double l2_bytes_per_s = 10e12;       // tile loads: panel rasterization makes most of them L2 hits
  double wgmma_flops = 850e12;         // 16-bit dense, fp32 accumulate
  double mma_sync_flops = 500e12;
  double load_latency_ns = 600;        // issue to first byte landing (TMA or cp.async)
  double issue_cycles = 32;            // issuing one stage's loads
  double barrier_cycles = 20;          // a wait whose barrier is already complete
  double epilogue_fixed_ns = 200;      // converting and storing a tile, before its bytes move
  std::string source = "H100-class defaults (no measured ceilings)";
};

// The defaults, with measured ceilings and the device's SM count and clock where given.
ModelDevice model_device(const Ceilings* ceilings = nullptr, const DeviceInfo* device = nullptr);

// Per-stage costs of a GEMM pipeline in ns, derived from a ModelDevice (exposed so tests can feed round numbers).
struct GemmModelCosts {
  double issue_ns = 0;      // producer: issuing one stage's loads
  double barrier_ns = 0;    // a satisfied wait
  double latency_ns = 0;    // load latency
  double transfer_ns = 0;   // one stage's bytes at the SM's share of the load bandwidth
  double mma_ns = 0;        // one k-tile of MMAs of one consumer (wgmma) or of the block (mma.sync)
  double epilogue_ns = 0;   // one consumer's (wgmma) or the block's (mma) output tile
};

// About 100 bytes each in memory and 170 in a Chrome trace (an 8192^3 gemm.wgmma model has 2.4M); the pipeline's
// behaviour shows in far fewer tiles.
inline constexpr double kMaxModelEvents = 1 << 22;
// Ok when a model of `kernel` at `problem` with about `events` events fits kMaxModelEvents; else invalid_argument
// saying to model a smaller problem. Models call it from the config, before anything is simulated.
Status check_model_events(double events, const std::string& kernel, const std::string& problem);

struct GemmWgmmaModel {
  int stages = 3, consumers = 2, k_steps = 1;
  std::vector<int> tiles_per_block = {1};  // one entry per block (persistent grid)
};
// The pipelines simulated on each block (kernels' KernelSpec::model_timeline hooks build them from a config):
// producer/consumer (a producer warp issuing TMA loads per stage, CONSUMERS warpgroups running wgmma per k-tile on
// the SM's shared tensor cores, the epilogue, barrier waits) and cp.async (every warp issues the loads of a stage
// ahead, waits for the current one, runs its MMAs). The results have model = true.
Timeline model_gemm_wgmma(const GemmWgmmaModel& m, const GemmModelCosts& c, const std::vector<std::string>& regions);

struct GemmMmaModel {
  int stages = 4, warps = 8, k_steps = 1, blocks = 1, blocks_per_sm = 1, num_sms = 1;
};
Timeline model_gemm_mma(const GemmMmaModel& m, const GemmModelCosts& c, const std::vector<std::string>& regions);

}  // namespace tl
