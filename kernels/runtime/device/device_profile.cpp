// Device profile files: writing one after `info --measure`, and reading one back with errors a user can act on.
#include "runtime/device/device_profile.hpp"

#include <cstdio>
#include <ctime>

#include "runtime/core/files.hpp"
#include "runtime/core/json_read.hpp"

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
