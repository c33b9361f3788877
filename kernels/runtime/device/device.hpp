// Device discovery: the host, the CUDA toolkit/NVRTC versions, and each GPU's properties (no GPU needed).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "runtime/core/status.hpp"

namespace tl {

struct HostInfo {
  std::string hostname;
  std::string os;        // "Linux 6.1.0 x86_64"
  std::string cpu;       // model name from /proc/cpuinfo
  int cpu_cores = 0;
  std::uint64_t memory_bytes = 0;
};

struct ToolkitInfo {
  int runtime_version = 0;  // cudaRuntimeGetVersion, e.g. 13000
  int driver_version = 0;   // cudaDriverGetVersion, 0 when no driver
  int nvrtc_major = 0, nvrtc_minor = 0;
  std::string built_with;   // CUDA toolkit version TileLab was compiled against
};

struct DeviceInfo {
  int index = 0;
  std::string name;
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  std::uint64_t memory_bytes = 0;
  std::uint64_t l2_bytes = 0;
  int smem_per_block_optin = 0;  // bytes a block may opt in to
  int smem_per_sm = 0;
  int regs_per_sm = 0;
  int max_threads_per_sm = 0;
  int clock_khz = 0;             // max SM clock
  int memory_clock_khz = 0;
  int memory_bus_bits = 0;
  std::string pci_bus_id;

  std::string arch() const { return "sm_" + std::to_string(cc_major * 10 + cc_minor); }
  // Peak DRAM bandwidth from the clocks (datasheet-style; measured ceilings come from the runtime's benches).
  double theoretical_dram_bytes_per_s() const {
    return 2.0 * memory_clock_khz * 1e3 * (memory_bus_bits / 8.0);
  }
};

struct SystemInfo {
  HostInfo host;
  ToolkitInfo toolkit;
  std::vector<DeviceInfo> devices;
  std::string why_no_device;  // empty when at least one device is usable
};

HostInfo query_host();
ToolkitInfo query_toolkit();
// Never fails: with no driver or no device, `devices` is empty and `why_no_device` says why.
SystemInfo query_system();
// How many GPUs this process sees (CUDA_VISIBLE_DEVICES applies), or a no_device error naming the reason.
Result<int> device_count();
// One device, or a no_device error naming the reason.
Result<DeviceInfo> query_device(int index = 0);

std::string version_string(int cuda_version);  // 13000 -> "13.0"

void to_json(nlohmann::json& j, const HostInfo& v);
void to_json(nlohmann::json& j, const ToolkitInfo& v);
void to_json(nlohmann::json& j, const DeviceInfo& v);
void to_json(nlohmann::json& j, const SystemInfo& v);

}  // namespace tl
