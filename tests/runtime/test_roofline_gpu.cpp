// GPU: measured DRAM bytes (CUPTI range profiler in the worker) against the bytes a copy must move, and the record
// they give on the roofline. Where the platform cannot count (no libcupti, restricted counters) it says why.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "library/library.hpp"
#include "runtime/measure/bench.hpp"
#include "runtime/results/roofline.hpp"
#include "runtime/worker/client.hpp"
#include "tests/support/gpu.hpp"
#include "tests/support/tilelab_exe.hpp"

namespace tl {
namespace {

using namespace std::chrono_literals;

RunRecord run_with_dram(const std::string& kernel, std::map<std::string, std::string> problem) {
  static Jit jit(kernel_sources().value());
  auto p = prepare_kernel(library_registry(), jit, kernel, problem, {}, limits_for_device(query_device(0).value()));
  EXPECT_TRUE(p.ok()) << p.status().message();
  WorkerOptions wo;
  wo.executable = test::tilelab_exe();
  wo.timeout = 120000ms;
  WorkerClient worker(wo);
  RunOptions ro;
  ro.timing.repeat = 3;
  ro.timing.warmup = 1;
  ro.timing.measure_dram = true;
  return run_instance(worker, *p, ro);
}

TEST(RooflineGpu, CopyMovesItsBytesThroughDram) {
  TL_REQUIRE_GPU();
  // 2^26 floats (256 MiB each way): far beyond L2, so DRAM sees each byte once, read and written.
  const double n = 1 << 26, bytes = n * 4;
  RunRecord r = run_with_dram("copy", {{"n", std::to_string(1 << 26)}, {"dtype", "f32"}});
  ASSERT_TRUE(r.passed()) << r.failure_text();
  ASSERT_TRUE(r.dram.has_value());
  if (!r.dram->measured) GTEST_SKIP() << "DRAM bytes not measurable here: " << r.dram->reason;
  EXPECT_GT(r.dram->read_bytes, 0.95 * bytes);
  EXPECT_LT(r.dram->read_bytes, 1.30 * bytes);
  EXPECT_GT(r.dram->write_bytes, 0.95 * bytes);
  EXPECT_LT(r.dram->write_bytes, 1.30 * bytes);
  // The record's "dram" reaches the roofline point.
  Ceilings c;
  c.hbm_bytes_per_s = 3e12;
  c.fp32_flops = 60e12;
  auto point = roofline_point(*Roofline::from_ceilings(c), nlohmann::json(r));
  ASSERT_TRUE(point.ok()) << point.status().message();
  ASSERT_TRUE(point->dram_bytes.has_value());
  EXPECT_DOUBLE_EQ(*point->dram_bytes, r.dram->read_bytes + r.dram->write_bytes);
}

TEST(RooflineGpu, GemmReadsAtLeastItsInputs) {
  TL_REQUIRE_GPU();
  RunRecord r = run_with_dram("gemm.wgmma", {{"M", "4096"}, {"N", "4096"}, {"K", "4096"}});
  ASSERT_TRUE(r.passed()) << r.failure_text();
  ASSERT_TRUE(r.dram.has_value());
  if (!r.dram->measured) GTEST_SKIP() << "DRAM bytes not measurable here: " << r.dram->reason;
  const double inputs = 2.0 * 4096 * 4096 * 2;  // A and B, bf16, cold L2
  EXPECT_GT(r.dram->read_bytes, 0.9 * inputs);
  EXPECT_GT(r.dram->write_bytes, 0.9 * 4096.0 * 4096 * 2);  // C, bf16
  std::printf("gemm.wgmma 4096^3: DRAM %.1f MB read, %.1f MB written; minimum %.1f MB\n", r.dram->read_bytes * 1e-6,
              r.dram->write_bytes * 1e-6, r.min_bytes * 1e-6);
}

}  // namespace
}  // namespace tl
