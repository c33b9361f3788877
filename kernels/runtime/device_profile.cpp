// Device profile files: writing one after `info --measure`, and reading one back with errors a user can act on.
#include "runtime/device_profile.hpp"

#include <cstdio>
#include <ctime>

#include "runtime/files.hpp"
#include "runtime/json_read.hpp"

namespace tl {
namespace {

constexpr const char* kFormat = "tilelab.device_profile";
constexpr int kVersion = 1;

std::string utc_now() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace

std::string DeviceProfile::device_name() const {
  if (device.is_object() && device.contains("name") && device["name"].is_string()) return device["name"];
  return ceilings.device_name;
}

nlohmann::json device_profile_json(const DeviceInfo& device, const ToolkitInfo& toolkit, const Ceilings& ceilings) {
  return {{"format", kFormat},          {"version", kVersion}, {"saved_at", utc_now()},
          {"tilelab_version", TILELAB_VERSION}, {"device", device}, {"toolkit", toolkit},
          {"ceilings", ceilings}};
}

Status save_device_profile(const std::string& path, const DeviceInfo& device, const ToolkitInfo& toolkit,
                           const Ceilings& ceilings) {
  return write_file_atomic(path, device_profile_json(device, toolkit, ceilings).dump(2) + "\n");
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

Result<DeviceProfile> parse_device_profile(const nlohmann::json& j, const std::string& source) {
  auto fail = [&](const std::string& what) { return make_error(ErrorCode::parse, source + ": " + what); };
  if (!j.is_object()) return fail(std::string("holds a ") + j.type_name() + ", expected a device profile object");
  DeviceProfile p;
  p.source = source;
  const nlohmann::json* ceilings = &j;
  if (j.contains("format")) {
    if (!j["format"].is_string() || j["format"] != kFormat)
      return fail("\"format\" is " + j["format"].dump() + ", expected \"" + kFormat + "\"");
    if (!j.contains("version") || !j["version"].is_number_integer())
      return fail("no integer \"version\"");
    if (j["version"].get<int>() > kVersion)
      return fail("version " + j["version"].dump() + " is newer than this TileLab reads (" + std::to_string(kVersion) +
                  "); update TileLab");
    if (!j.contains("ceilings")) return fail("no \"ceilings\" object");
    ceilings = &j["ceilings"];
    for (const char* f : {"device", "toolkit"})
      if (j.contains(f) && !j[f].is_object()) return fail(std::string("\"") + f + "\" is " + j[f].type_name() + ", expected an object");
    p.device = j.value("device", nlohmann::json::object());
    p.toolkit = j.value("toolkit", nlohmann::json::object());
    if (j.contains("saved_at") && j["saved_at"].is_string()) p.saved_at = j["saved_at"];
  } else if (!j.contains("hbm_bytes_per_s")) {
    return fail("neither a device profile (no \"format\") nor a ceilings file (no \"hbm_bytes_per_s\"); write one "
                "with `tilelab info --measure --save-profile FILE`");
  }
  Status s = validate_ceilings_json(*ceilings);
  if (!s.ok()) return fail(std::string(ceilings == &j ? "" : "ceilings: ") + s.message());
  p.ceilings = ceilings->get<Ceilings>();
  return p;
}

Result<DeviceProfile> load_device_profile(const std::string& path) {
  auto j = read_json_file(path, "device profile");
  if (!j) return j.status();
  return parse_device_profile(*j, path);
}

}  // namespace tl
