// RunRecord: its summaries over the outputs, the record of a kernel that never ran, its efficiency and its JSON.
#include "runtime/results/run_record.hpp"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "runtime/results/roofline.hpp"

namespace tl {

double RunRecord::rel_error() const {
  double e = 0;
  for (const auto& o : outputs) e = std::max(e, o.comparison.rel_error);
  return e;
}

double RunRecord::max_abs_error() const {
  double e = 0;
  for (const auto& o : outputs) e = std::max(e, o.comparison.max_abs_error);
  return e;
}

std::uint64_t RunRecord::unwritten() const {
  std::uint64_t n = 0;
  for (const auto& o : outputs) n += o.comparison.unwritten;
  return n;
}

std::string RunRecord::failure_text() const {
  if (failure) return std::string(error_code_name(failure->code)) + ": " + failure->message;
  if (verified) return "";
  for (const auto& o : outputs)
    if (!o.comparison.passed) return "verification: " + o.name + ": " + o.comparison.reason;
  return "verification: no output was checked";
}

RunRecord failed_record(const std::string& kernel, const std::map<std::string, std::string>& problem,
                        const std::map<std::string, std::string>& config, const Status& status) {
  RunRecord r;
  r.kernel = kernel;
  r.problem = problem;
  r.config = config;
  r.failure = RunFailure{status.code(), status.message(), std::nullopt};
  return r;
}

Efficiency roofline_efficiency(bool tensor_cores, DType input_dtype, double flops, double min_bytes, double seconds,
                               const Ceilings& c) {
  auto model = Roofline::from_ceilings(c);
  if (seconds <= 0 || !model) return Efficiency{};
  auto b = roofline_bound(*model, compute_ceiling_for(*model, tensor_cores, input_dtype), flops, min_bytes);
  if (!b) return Efficiency{};
  // predicted / measured equals achieved / binding ceiling on either side of the ridge.
  return Efficiency{b->bound, b->ceiling, b->ceiling_value, b->predicted_s / seconds};
}

void to_json(nlohmann::json& j, const OutputCheck& o) {
  j = {{"name", o.name}, {"dtype", dtype_name(o.dtype)}, {"shape", o.shape}, {"comparison", o.comparison}};
}

void to_json(nlohmann::json& j, const Efficiency& e) {
  j = {{"bound", e.bound}, {"ceiling", e.ceiling}, {"ceiling_value", e.ceiling_value}, {"value", e.value}};
}

void to_json(nlohmann::json& j, const RunRecord& r) {
  j = {{"kernel", r.kernel},
       {"family", r.family},
       {"name_expression", r.name_expression},
       {"arch", r.arch},
       {"problem", r.problem},
       {"config", r.config},
       {"device", r.device},
       {"gpu", r.gpu >= 0 ? nlohmann::json(r.gpu) : nlohmann::json()},
       {"launch", r.launch},
       {"resources", r.resources},
       {"attributes", r.attributes},
       {"flops", r.flops},
       {"min_bytes", r.min_bytes},
       {"input_dtype", r.input_dtype},
       {"tensor_cores", r.tensor_cores},
       {"time_ms", r.time_ms},
       {"timer", timer_name(r.timer)},
       {"l2_flush", l2_flush_text(r.timer, r.l2_flushed)},
       {"tflops", r.tflops},
       {"gbps", r.gbps},
       {"efficiency", r.efficiency},
       {"outputs", r.outputs},
       {"tolerance", r.tolerance},
       {"rel_error", r.rel_error()},
       {"max_abs_error", r.max_abs_error()},
       {"unwritten", r.unwritten()},
       {"verified", r.verified},
       {"passed", r.passed()}};
  if (!r.times_ms.empty()) j["times_ms"] = r.times_ms;
  if (r.timer == Timer::graph) j["graph_launches"] = r.graph_launches;
  if (r.baseline) {
    nlohmann::json b = *r.baseline;
    const double ms = r.baseline->time_ms.median;
    b["tflops"] = ms > 0 ? r.flops / (ms * 1e-3) * 1e-12 : 0.0;
    // The kernel's throughput over the library's (> 1: the kernel is faster), from the medians.
    b["speedup"] = ms > 0 && r.time_ms.median > 0 ? ms / r.time_ms.median : 0.0;
    j["baseline"] = std::move(b);
  }
  if (r.timeline || !r.timeline_error.empty()) {
    nlohmann::json t = {{"error", r.timeline_error}, {"time_ms", r.timeline_time_ms}};
    if (r.timeline) {
      t["events"] = r.timeline->events.size();
      t["blocks"] = r.timeline->blocks.size();
      t["dropped_marks"] = r.timeline->dropped_marks();
      t["duration_ns"] = r.timeline->duration_ns;
    }
    if (r.timeline_time_ms.median > 0 && r.time_ms.median > 0)
      t["overhead"] = r.timeline_time_ms.median / r.time_ms.median - 1;
    j["timeline"] = std::move(t);
  }
  if (r.dram) j["dram"] = *r.dram;
  if (r.failure) {
    nlohmann::json f = {{"code", error_code_name(r.failure->code)}, {"message", r.failure->message}};
    if (r.failure->worker) f["worker"] = *r.failure->worker;
    j["failure"] = std::move(f);
  } else {
    j["failure"] = nullptr;
  }
}

}  // namespace tl
