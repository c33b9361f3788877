// Device discovery through the statically linked CUDA runtime; works (and explains itself) with no driver.
#include "runtime/device/device.hpp"

#include <dlfcn.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <fstream>
#include <thread>

#include <cuda_runtime_api.h>
#include <nvrtc.h>
#include <nlohmann/json.hpp>

namespace tl {

std::string version_string(int v) {
  if (v <= 0) return "none";
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

HostInfo query_host() {
  HostInfo h;
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) == 0) h.hostname = name;
  utsname u{};
  if (uname(&u) == 0) h.os = std::string(u.sysname) + " " + u.release + " " + u.machine;
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.rfind("model name", 0) == 0) {
      auto colon = line.find(':');
      if (colon != std::string::npos) h.cpu = line.substr(line.find_first_not_of(' ', colon + 1));
      break;
    }
  }
  h.cpu_cores = static_cast<int>(std::thread::hardware_concurrency());
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  if (pages > 0 && page > 0) h.memory_bytes = static_cast<std::uint64_t>(pages) * page;
  return h;
}

ToolkitInfo query_toolkit() {
  ToolkitInfo t;
  cudaRuntimeGetVersion(&t.runtime_version);
  if (cudaDriverGetVersion(&t.driver_version) != cudaSuccess) t.driver_version = 0;
  nvrtcVersion(&t.nvrtc_major, &t.nvrtc_minor);
  t.built_with = version_string(CUDART_VERSION);
  return t;
}

namespace {

// The static runtime reports "insufficient driver" when libcuda is simply absent; say what is really wrong.
bool driver_library_present() {
  void* handle = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (!handle) handle = dlopen("libcuda.so.1", RTLD_LAZY);
  if (!handle) return false;
  dlclose(handle);
  return true;
}

int attr(cudaDeviceAttr a, int dev) {
  int v = 0;
  if (cudaDeviceGetAttribute(&v, a, dev) != cudaSuccess) return 0;
  return v;
}

}  // namespace

Result<int> device_count() {
  if (!driver_library_present())
    return make_error(ErrorCode::no_device,
                      "no NVIDIA driver on this machine (libcuda.so.1 not found); compiling works, launching "
                      "kernels needs a GPU");
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    std::string why = std::string("CUDA reports no usable device: ") + cudaGetErrorString(err);
    cudaGetLastError();
    if (err == cudaErrorInsufficientDriver)
      why += " (the driver is older than CUDA " + version_string(CUDART_VERSION) + " that TileLab was built with)";
    return make_error(ErrorCode::no_device, why);
  }
  if (count == 0) return make_error(ErrorCode::no_device, "the NVIDIA driver is present but reports no GPU");
  return count;
}

namespace {

DeviceInfo read_device(int dev) {
  DeviceInfo d;
  d.index = dev;
  cudaDeviceProp p{};
  if (cudaGetDeviceProperties(&p, dev) == cudaSuccess) {
    d.name = p.name;
    d.memory_bytes = p.totalGlobalMem;
    d.l2_bytes = static_cast<std::uint64_t>(p.l2CacheSize);
  }
  d.cc_major = attr(cudaDevAttrComputeCapabilityMajor, dev);
  d.cc_minor = attr(cudaDevAttrComputeCapabilityMinor, dev);
  d.sm_count = attr(cudaDevAttrMultiProcessorCount, dev);
  d.smem_per_block_optin = attr(cudaDevAttrMaxSharedMemoryPerBlockOptin, dev);
  d.smem_per_sm = attr(cudaDevAttrMaxSharedMemoryPerMultiprocessor, dev);
  d.regs_per_sm = attr(cudaDevAttrMaxRegistersPerMultiprocessor, dev);
  d.max_threads_per_sm = attr(cudaDevAttrMaxThreadsPerMultiProcessor, dev);
  d.clock_khz = attr(cudaDevAttrClockRate, dev);
  d.memory_clock_khz = attr(cudaDevAttrMemoryClockRate, dev);
  d.memory_bus_bits = attr(cudaDevAttrGlobalMemoryBusWidth, dev);
  char bus[64] = {};
  if (cudaDeviceGetPCIBusId(bus, sizeof(bus), dev) == cudaSuccess) d.pci_bus_id = bus;
  return d;
}

}  // namespace

SystemInfo query_system() {
  SystemInfo s;
  s.host = query_host();
  s.toolkit = query_toolkit();
  auto count = device_count();
  if (!count) {
    s.why_no_device = count.status().message();
    return s;
  }
  for (int i = 0; i < *count; ++i) s.devices.push_back(read_device(i));
  return s;
}

Result<DeviceInfo> query_device(int index) {
  auto count = device_count();
  if (!count) return count.status();
  if (index < 0 || index >= *count)
    return make_error(ErrorCode::not_found, "device " + std::to_string(index) + " does not exist (this machine has " +
                                                std::to_string(*count) + ")");
  return read_device(index);
}

void to_json(nlohmann::json& j, const HostInfo& v) {
  j = {{"hostname", v.hostname}, {"os", v.os}, {"cpu", v.cpu}, {"cpu_cores", v.cpu_cores},
       {"memory_bytes", v.memory_bytes}};
}

void to_json(nlohmann::json& j, const ToolkitInfo& v) {
  j = {{"cuda_runtime", version_string(v.runtime_version)},
       {"cuda_driver", version_string(v.driver_version)},
       {"nvrtc", std::to_string(v.nvrtc_major) + "." + std::to_string(v.nvrtc_minor)},
       {"built_with", v.built_with}};
}

void to_json(nlohmann::json& j, const DeviceInfo& v) {
  j = {{"index", v.index},
       {"name", v.name},
       {"compute_capability", std::to_string(v.cc_major) + "." + std::to_string(v.cc_minor)},
       {"arch", v.arch()},
       {"sm_count", v.sm_count},
       {"memory_bytes", v.memory_bytes},
       {"l2_bytes", v.l2_bytes},
       {"smem_per_block_optin", v.smem_per_block_optin},
       {"smem_per_sm", v.smem_per_sm},
       {"regs_per_sm", v.regs_per_sm},
       {"max_threads_per_sm", v.max_threads_per_sm},
       {"clock_khz", v.clock_khz},
       {"memory_clock_khz", v.memory_clock_khz},
       {"memory_bus_bits", v.memory_bus_bits},
       {"pci_bus_id", v.pci_bus_id}};
}

void to_json(nlohmann::json& j, const SystemInfo& v) {
  j = {{"host", v.host}, {"toolkit", v.toolkit}, {"devices", v.devices}};
  if (!v.why_no_device.empty()) j["why_no_device"] = v.why_no_device;
}

}  // namespace tl
