// Device ceilings, parent side: JSON form and the per-device cache file.
#include "runtime/device/ceilings.hpp"

#include <cctype>
#include <cstdio>
#include <filesystem>

#include "runtime/core/files.hpp"
#include "runtime/core/json_read.hpp"

namespace tl {

void to_json(nlohmann::json& j, const Ceilings& c) {
  j = {{"device_name", c.device_name},
       {"pci_bus_id", c.pci_bus_id},
       {"arch", c.arch},
       {"measured_at", c.measured_at},
       {"tilelab_version", c.tilelab_version},
       {"hbm_bytes_per_s", c.hbm_bytes_per_s},
       {"l2_bytes_per_s", c.l2_bytes_per_s},
       {"smem_bytes_per_s", c.smem_bytes_per_s},
       {"fp32_flops", c.fp32_flops},
       {"bf16_tc_flops", c.bf16_tc_flops},
       {"fp16_tc_flops", c.fp16_tc_flops},
       {"fp8_tc_flops", c.fp8_tc_flops},
       {"tc_clock_mhz", c.tc_clock_mhz},
       {"bf16_tc_sustained_flops", c.bf16_tc_sustained_flops},
       {"tc_sustained_clock_mhz", c.tc_sustained_clock_mhz},
       {"tc_method", c.tc_method},
       {"details", c.details}};
}

void from_json(const nlohmann::json& j, Ceilings& c) {
  c.device_name = j.value("device_name", std::string());
  c.pci_bus_id = j.value("pci_bus_id", std::string());
  c.arch = j.value("arch", std::string());
  c.measured_at = j.value("measured_at", std::string());
  c.tilelab_version = j.value("tilelab_version", std::string());
  c.hbm_bytes_per_s = j.value("hbm_bytes_per_s", 0.0);
  c.l2_bytes_per_s = j.value("l2_bytes_per_s", 0.0);
  c.smem_bytes_per_s = j.value("smem_bytes_per_s", 0.0);
  c.fp32_flops = j.value("fp32_flops", 0.0);
  c.bf16_tc_flops = j.value("bf16_tc_flops", 0.0);
  c.fp16_tc_flops = j.value("fp16_tc_flops", 0.0);
  c.fp8_tc_flops = j.value("fp8_tc_flops", 0.0);
  c.tc_clock_mhz = j.value("tc_clock_mhz", 0.0);
  c.bf16_tc_sustained_flops = j.value("bf16_tc_sustained_flops", 0.0);
  c.tc_sustained_clock_mhz = j.value("tc_sustained_clock_mhz", 0.0);
  c.tc_method = j.value("tc_method", std::string());
  c.details = j.value("details", nlohmann::json::object());
}

std::string ceilings_cache_path(const std::string& cache_dir, const DeviceInfo& device) {
  auto safe = [](const std::string& s) {
    std::string out;
    for (char ch : s) {
      bool keep = std::isalnum(static_cast<unsigned char>(ch)) || ch == '.' || ch == '_';
      if (keep) out += ch;
      else if (!out.empty() && out.back() != '-') out += '-';
    }
    while (!out.empty() && out.back() == '-') out.pop_back();
    return out.empty() ? std::string("unknown") : out;
  };
  return cache_dir + "/ceilings-" + safe(device.name) + "-" + safe(device.pci_bus_id) + ".json";
}

Result<Ceilings> load_ceilings(const std::string& path) {
  if (!std::filesystem::exists(path)) return make_error(ErrorCode::not_found, "no cached ceilings at " + path);
  auto j = read_json_file(path, "cached ceilings");
  if (!j) return j.status();
  if (Status s = validate_ceilings_json(*j); !s.ok()) return s.with_context(path);
  return j->get<Ceilings>();
}

Status save_ceilings(const std::string& path, const Ceilings& c) {
  // Atomic: a concurrent reader sees the old or the new file.
  return write_file_atomic(path, nlohmann::json(c).dump(2) + "\n");
}


Status validate_ceilings_json(const nlohmann::json& j) {
  if (!j.is_object()) return make_error(ErrorCode::parse, std::string("is ") + j.type_name() + ", expected an object");
  // What one GPU can plausibly measure: a value outside is a corrupt or hand-edited file, and would put the roofline
  // at 1e-300 or "inf%". 0 means "not measured" (fp8 before sm_89, the sustained rate off Hopper).
  struct Range {
    const char* field;
    double lo, hi;
    const char* unit;
  };
  static const Range kRanges[] = {
      {"hbm_bytes_per_s", 1e9, 1e16, "bytes/s"},      {"l2_bytes_per_s", 1e9, 1e16, "bytes/s"},
      {"smem_bytes_per_s", 1e9, 1e16, "bytes/s"},     {"fp32_flops", 1e9, 1e18, "FLOP/s"},
      {"bf16_tc_flops", 1e9, 1e18, "FLOP/s"},         {"fp16_tc_flops", 1e9, 1e18, "FLOP/s"},
      {"fp8_tc_flops", 1e9, 1e18, "FLOP/s"},          {"bf16_tc_sustained_flops", 1e9, 1e18, "FLOP/s"},
      {"tc_clock_mhz", 1, 1e4, "MHz"},                {"tc_sustained_clock_mhz", 1, 1e4, "MHz"}};
  for (const Range& r : kRanges) {
    auto it = j.find(r.field);
    if (it == j.end()) continue;
    if (!it->is_number())
      return make_error(ErrorCode::parse, std::string("\"") + r.field + "\" is " + it->type_name() + ", expected a number");
    const double v = it->get<double>();
    if (v != 0 && !(v >= r.lo && v <= r.hi)) {
      char range[96];
      std::snprintf(range, sizeof range, "0 (not measured) or %g to %g %s", r.lo, r.hi, r.unit);
      return make_error(ErrorCode::parse, std::string("\"") + r.field + "\" is " + it->dump() + ", expected " + range);
    }
  }
  for (const char* f : {"device_name", "pci_bus_id", "arch", "measured_at", "tilelab_version", "tc_method"}) {
    auto it = j.find(f);
    if (it != j.end() && !it->is_string())
      return make_error(ErrorCode::parse, std::string("\"") + f + "\" is " + it->type_name() + ", expected a string");
  }
  if (auto it = j.find("details"); it != j.end()) {
    if (!it->is_object())
      return make_error(ErrorCode::parse, std::string("\"details\" is ") + it->type_name() + ", expected an object");
    // The timeline model reads each benchmark's "rate" (wgmma_bf16, mma_f16, ...): the same bounds as the rates.
    for (const auto& [bench, entry] : it->items()) {
      if (!entry.is_object() || !entry.contains("rate")) continue;
      const nlohmann::json& rate = entry["rate"];
      if (!rate.is_number() || rate.get<double>() < 0 || rate.get<double>() > 1e18)
        return make_error(ErrorCode::parse, "\"details." + bench + ".rate\" is " + rate.dump() +
                                                ", expected a number from 0 to 1e+18");
    }
  }
  for (const char* f : {"hbm_bytes_per_s", "fp32_flops"})
    if (j.value(f, 0.0) <= 0)
      return make_error(ErrorCode::parse, std::string("no \"") + f + "\" measurement (the roofline needs the HBM "
                                                                     "bandwidth and the FP32 rate)");
  return Status::success();
}

}  // namespace tl
