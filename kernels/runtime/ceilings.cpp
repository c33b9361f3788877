// Device ceilings, parent side: JSON form and the per-device cache file.
#include "runtime/ceilings.hpp"

#include <cctype>
#include <filesystem>

#include "runtime/device_profile.hpp"
#include "runtime/files.hpp"
#include "runtime/json_read.hpp"

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


}  // namespace tl
