// Test helper for GPU tests: skip with the stated reason when this machine has no usable GPU.
#pragma once

#include <gtest/gtest.h>

#include "runtime/device/device.hpp"

namespace tl::test {

// The reason there is no GPU, or "" when device 0 is usable. Queried once per process.
inline const std::string& no_gpu_reason() {
  static const std::string reason = [] {
    auto dev = tl::query_device(0);
    return dev ? std::string() : dev.status().message();
  }();
  return reason;
}

}  // namespace tl::test

// First line of every GPU test: GTEST_SKIP with the reason when there is no device.
#define TL_REQUIRE_GPU()                                                       \
  do {                                                                         \
    if (!tl::test::no_gpu_reason().empty())                                    \
      GTEST_SKIP() << "needs a GPU: " << tl::test::no_gpu_reason();           \
  } while (0)
