// A device profile: one GPU's description and measured ceilings in a file, so rooflines can be drawn without it.
#pragma once

// `tilelab info --measure --save-profile FILE` writes one; `--device-profile FILE` reads it. The format:
//   {"format": "tilelab.device_profile", "version": 1, "saved_at": "...", "tilelab_version": "...",
//    "device": {DeviceInfo as `tilelab info --json` prints it}, "toolkit": {...}, "ceilings": {Ceilings}}
// A bare ceilings file (the per-device cache `info --measure` keeps) is read as a profile without a device.

#include <string>

#include <nlohmann/json.hpp>

#include "runtime/core/status.hpp"
#include "runtime/device/ceilings.hpp"
#include "runtime/device/device.hpp"

namespace tl {

struct DeviceProfile {
  nlohmann::json device = nlohmann::json::object();   // empty when read from a bare ceilings file
  nlohmann::json toolkit = nlohmann::json::object();
  Ceilings ceilings;
  std::string saved_at;
  std::string source;  // the file it came from

  // The device's name: the profile's device, else the name the ceilings were measured on.
  std::string device_name() const;
};

nlohmann::json device_profile_json(const DeviceInfo& device, const ToolkitInfo& toolkit, const Ceilings& ceilings);
Status save_device_profile(const std::string& path, const DeviceInfo& device, const ToolkitInfo& toolkit,
                           const Ceilings& ceilings);

// Errors (parse) name the file and what is wrong: not JSON (with line and column), not an object, an unknown
// format or version, no "ceilings", a ceiling of the wrong type, negative or not finite, or no HBM/FP32 value.
Result<DeviceProfile> load_device_profile(const std::string& path);
Result<DeviceProfile> parse_device_profile(const nlohmann::json& j, const std::string& source);

}  // namespace tl
