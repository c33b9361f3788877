// Device ceilings: what this GPU measurably does (HBM, L2, shared memory, FP32, tensor cores), cached per device.
#pragma once

// Efficiency everywhere in TileLab is achieved / ceiling, with ceilings from these micro-benchmarks rather
// than the datasheet. They run in the worker (runtime/worker/ceilings.hpp; the kernels are in
// worker/builtin/ceilings.cuh) and are cached as JSON under the cache directory, one file per device name + PCI
// bus id.

#include <string>

#include <nlohmann/json.hpp>

#include "runtime/core/status.hpp"
#include "runtime/device/device.hpp"

namespace tl {

struct Ceilings {
  std::string device_name, pci_bus_id, arch;
  std::string measured_at;  // UTC, ISO 8601
  std::string tilelab_version;
  double hbm_bytes_per_s = 0;   // device-to-device copy, read + write bytes counted
  double l2_bytes_per_s = 0;    // reads of a working set that fits in L2
  double smem_bytes_per_s = 0;  // shared-memory reads, whole device
  double fp32_flops = 0;        // FMA = 2 flops
  double bf16_tc_flops = 0;     // dense tensor-core rate, f32 accumulate
  double fp16_tc_flops = 0;
  double fp8_tc_flops = 0;      // e4m3; 0 where the chip has no FP8 tensor cores (before sm_89)
  // Tensor-core rates follow the SM clock, which the power cap lowers under sustained load: the bf16 rate above is
  // from short launches (SM clock tc_clock_mhz); the sustained one after seconds of load (wgmma chips only, else 0).
  double tc_clock_mhz = 0;
  double bf16_tc_sustained_flops = 0;
  double tc_sustained_clock_mhz = 0;
  std::string tc_method;        // how the tensor-core rate was measured (mma.sync understates Hopper: no wgmma)
  nlohmann::json details = nlohmann::json::object();  // per benchmark: sizes, launch shape, time stats
};
void to_json(nlohmann::json& j, const Ceilings& c);
void from_json(const nlohmann::json& j, Ceilings& c);

// DIR/ceilings-<device name>-<pci bus id>.json, with the name made file-safe.
std::string ceilings_cache_path(const std::string& cache_dir, const DeviceInfo& device);
Result<Ceilings> load_ceilings(const std::string& path);
Status save_ceilings(const std::string& path, const Ceilings& c);
// Checks the numeric fields of a Ceilings JSON object (names the field and what it holds).
Status validate_ceilings_json(const nlohmann::json& j);

}  // namespace tl
