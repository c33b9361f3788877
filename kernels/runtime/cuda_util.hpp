// Internal to tl_runtime's CUDA files: the worker's device state, built-in kernels, raw launches, event timing.
#pragma once

#include <cuda_runtime_api.h>

#include <functional>

#include "runtime/device.hpp"
#include "runtime/launch.hpp"

namespace tl::cuda_detail {

// Selects the device once per worker process (one worker serves one device) and creates its context.
Status use_device(int index);
const DeviceInfo& current_device();
// A kernel of a built-in fatbin (fills, micro-benchmarks).
Result<cudaKernel_t> builtin_kernel(const char* name, BuiltinImage image = BuiltinImage::portable);
Status launch_raw(cudaKernel_t k, Dim3 grid, Dim3 block, unsigned smem, Dim3 cluster, void** args);
// Times `launch` with CUDA events: `warmup` untimed runs, then `repeat` timed ones; per-run milliseconds.
Result<Stats> time_runs(const std::function<Status()>& launch, int warmup, int repeat);

}  // namespace tl::cuda_detail
