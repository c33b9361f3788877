// Measured DRAM traffic of one kernel launch, read from CUPTI's range profiler in the worker (libcupti opened at run time).
#pragma once

// The roofline's ideal point uses the kernel's minimum bytes; this is what the launch really moved (re-reads
// that missed L2, spills, write-allocate), so the plot can show ideal against actual intensity. libcupti is
// dlopen'ed like libcublas (TileLab never links it); where it is missing, too old, the GPU is not supported or
// profiling is restricted to admins, the result says why and the record keeps only the ideal point.

#include <functional>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "runtime/core/status.hpp"

namespace tl {

struct DramTraffic {
  bool measured = false;
  double read_bytes = 0, write_bytes = 0;  // dram__bytes_read.sum, dram__bytes_write.sum of one launch
  std::string reason;                      // why not measured
};

// JSON form used in RunRecord's "dram": {"measured": true, "read_bytes", "write_bytes", "source": "cupti"} or
// {"measured": false, "reason": "..."}.
void to_json(nlohmann::json& j, const DramTraffic& d);
void from_json(const nlohmann::json& j, DramTraffic& d);

// Worker side, with the kernel's device current: runs `launch` once more under the range profiler (kernel replay:
// CUPTI saves and restores memory between passes) and reads the two DRAM counters. Never fails: a platform that
// cannot measure gives measured = false with the reason. `launch` returning an error is passed on in `reason`.
DramTraffic measure_dram_traffic(const std::function<Status()>& launch);

}  // namespace tl
