// Device discovery: with no GPU the reason is stated; with one, its properties are plausible.
#include <gtest/gtest.h>

#include "runtime/device/device.hpp"
#include "tests/support/gpu.hpp"

namespace tl {
namespace {

TEST(DeviceCpu, SystemInfoAlwaysAnswers) {
  SystemInfo s = query_system();
  EXPECT_GT(s.host.cpu_cores, 0);
  EXPECT_GT(s.toolkit.runtime_version, 0);
  EXPECT_GT(s.toolkit.nvrtc_major, 0);
  if (s.devices.empty()) {
    EXPECT_FALSE(s.why_no_device.empty()) << "no device and no reason";
  }
}

TEST(DeviceGpu, PropertiesArePlausible) {
  TL_REQUIRE_GPU();
  auto dev = query_device(0);
  ASSERT_TRUE(dev.ok()) << dev.status().message();
  EXPECT_GT(dev->sm_count, 0);
  EXPECT_GE(dev->cc_major, 7);
  EXPECT_GT(dev->memory_bytes, 1ull << 30);
  EXPECT_GT(dev->smem_per_block_optin, 48 * 1024);
}

}  // namespace
}  // namespace tl
