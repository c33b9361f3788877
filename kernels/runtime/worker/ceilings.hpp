// The device's ceilings through the worker: asked for by the parent (cached per device), measured by the worker.
#pragma once

#include <functional>
#include <string>

#include "runtime/core/status.hpp"
#include "runtime/device/ceilings.hpp"
#include "runtime/device/device.hpp"
#include "runtime/worker/channel.hpp"
#include "runtime/worker/client.hpp"

namespace tl {

// Parent side: the cached ceilings of `device`, or measured through the worker (and cached) when there are none
// or `refresh`. `on_bench` sees each benchmark's result as it streams in (name, value, unit).
using OnBench = std::function<void(const std::string& name, double value, const std::string& unit)>;
Result<Ceilings> device_ceilings(WorkerClient& worker, const DeviceInfo& device, const std::string& cache_dir,
                                 bool refresh, const OnBench& on_bench = {});

// Worker side: measure on `device` in this process; `on_bench` streams results (the worker forwards them).
Result<Ceilings> measure_ceilings(int device, const OnBench& on_bench = {});
Result<Message> serve_ceilings(const Message& request, WorkerChannel& channel);

}  // namespace tl
