// InProcessKernel: a compiled kernel launched in the calling process on its own buffers and stream (no worker).
#include <cuda_runtime_api.h>

#include <map>
#include <memory>
#include <mutex>

#include "runtime/worker/gpu.hpp"

namespace tl {

using namespace cuda_detail;

namespace {

// This process's CUDA runtime keeps its own current device (apart from a framework's runtime in the same process):
// select it before each call that works on `device`.
Status select_device(int device) {
  int current = -1;
  if (cudaGetDevice(&current) == cudaSuccess && current == device) return {};
  TL_CUDA(cudaSetDevice(device), "selecting device " + std::to_string(device));
  return {};
}

// Each device's description, queried once (the persistent grid and the shared-memory check read it per load).
Result<DeviceInfo> device_info(int device) {
  static std::mutex mutex;
  static std::map<int, DeviceInfo> known;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = known.find(device); it != known.end()) return it->second;
  auto info = query_device(device);
  if (!info) return info.status();
  known[device] = *info;
  return *info;
}

}  // namespace

Result<InProcessKernel> InProcessKernel::load(LaunchSpec spec, int device) {
  const std::string what = spec.label.empty() ? spec.kernel : spec.label;
  auto info = device_info(device);
  if (!info) return info.status();
  TL_RETURN_IF_ERROR(select_device(device));
  auto lib = load_library(spec.image);
  if (!lib) return lib.status().with_context(what);
  auto ready = ready_kernel(*lib, spec.kernel, spec, *info, what);
  if (!ready) return ready.status();
  InProcessKernel k;
  k.m_ready = std::make_shared<const ReadyKernel>(std::move(*ready));
  k.m_device = device;
  k.m_spec = std::move(spec);
  return k;
}

Status InProcessKernel::launch(const std::vector<void*>& ptrs, void* stream) const {
  const std::string& what = m_spec.label;
  if (ptrs.size() != m_spec.buffers.size())
    return make_error(ErrorCode::internal, what + ": " + std::to_string(ptrs.size()) + " buffers given for " +
                                               std::to_string(m_spec.buffers.size()));
  TL_RETURN_IF_ERROR(select_device(m_device));
  auto params = pack_params(m_spec, ptrs, what);
  if (!params) return params.status();
  std::vector<void*> pointers = params->pointers();
  return launch_ready(*m_ready, pointers.data(), static_cast<cudaStream_t>(stream)).with_context(what);
}

const LaunchGeometry& InProcessKernel::geometry() const { return m_ready->geometry; }

}  // namespace tl
