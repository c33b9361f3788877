// The typed config of the fault-path kernels test.oob and test.spin, and their name expressions.
#pragma once

#include "tile/config.hpp"

#if !TL_DEVICE_CODE
#include <string>

#include "tile/config_name.hpp"
#endif

namespace tl {

struct FaultConfig {
  int threads = 128;
};

#if !TL_DEVICE_CODE
// `kernel`: test_oob or test_spin.
inline std::string name_expression(const char* kernel, const FaultConfig& c) {
  return ConfigName(kernel, "FaultConfig").field("threads", c.threads).str();
}
#endif

}  // namespace tl
