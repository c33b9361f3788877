// GPU: gemm.wgmma and gemm.mma record timelines whose structure matches the pipeline they ran (every recording warp
// has events, begins and ends pair up, stages within num_stages, counts per iteration, no overflow), aligned to a
// plausible clock and spanning about the kernel's measured time.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "library/library.hpp"
#include "runtime/measure/bench.hpp"
#include "runtime/worker/client.hpp"
#include "tests/support/gpu.hpp"
#include "tests/support/tilelab_exe.hpp"

namespace tl {
namespace {

using namespace std::chrono_literals;

const Jit& jit() {
  static Jit j(kernel_sources().value());
  return j;
}

RunRecord record(const std::string& kernel, const std::map<std::string, std::string>& problem, bool timed) {
  auto p = prepare_kernel(library_registry(), jit(), kernel, problem, {}, limits_for_device(query_device(0).value()));
  EXPECT_TRUE(p.ok()) << p.status().message();
  if (!p.ok()) return {};
  Status built = add_timeline_build(jit(), *p);
  EXPECT_TRUE(built.ok()) << built.message();
  WorkerOptions wo;
  wo.executable = test::tilelab_exe();
  wo.timeout = 120000ms;
  WorkerClient worker(wo);
  RunOptions ro;
  ro.timing.repeat = 5;
  ro.timing.warmup = 2;
  ro.timeline = true;
  ro.timeline_timed = timed;
  return run_instance(worker, *p, ro);
}

// Properties every recorded timeline has; returns the count of events per (block, warp, region).
std::map<std::tuple<int, int, std::string>, int> check_common(const RunRecord& r, int num_stages) {
  std::map<std::tuple<int, int, std::string>, int> counts;
  EXPECT_TRUE(r.passed()) << r.failure_text();
  EXPECT_TRUE(r.timeline.has_value()) << r.timeline_error;
  if (!r.timeline) return counts;
  const Timeline& t = *r.timeline;
  EXPECT_FALSE(t.model);
  EXPECT_EQ(t.dropped_marks(), 0u) << "overflow at the spec's capacity";
  EXPECT_EQ(t.unmatched_ends, 0u);
  EXPECT_EQ(t.unterminated, 0u);
  EXPECT_EQ(t.blocks.size(), r.launch.grid.volume());
  for (const auto& b : t.blocks) {
    // Measured from the block's own anchors when it ran long enough (>= 20 µs), else the median or the device clock.
    EXPECT_GT(b.cycles_per_ns, 0.5) << "block " << b.block;  // SM clocks of 0.5 .. 2.5 GHz
    EXPECT_LT(b.cycles_per_ns, 2.5) << "block " << b.block;
  }
  std::map<int, const TimelineBlock*> block;
  for (const auto& b : t.blocks) block[b.block] = &b;
  for (const auto& e : t.events) {
    const TimelineTrack& tr = t.tracks[e.track];
    const TimelineBlock& b = *block.at(tr.block);
    EXPECT_GE(e.start_ns, b.start_ns - 1e-6);
    EXPECT_LE(e.end_ns, b.end_ns + 1e-6);
    EXPECT_EQ(tr.sm, b.sm);
    if (e.stage != kNoStage) {
      EXPECT_LT(e.stage, num_stages);
    }
    ++counts[{tr.block, tr.warp, t.region_name(e.region)}];
  }
  // The probe run lasts about as long as a timed run of the kernel (clock alignment and rates are right).
  const double kernel_ns = r.time_ms.median * 1e6;
  EXPECT_GT(t.duration_ns, 0.5 * kernel_ns);
  EXPECT_LT(t.duration_ns, 2.0 * kernel_ns + 20'000);
  return counts;
}

TEST(TimelineGpu, GemmWgmmaRecordsItsPipeline) {
  TL_REQUIRE_GPU();
  if (query_device(0).value().cc_major < 9) GTEST_SKIP() << "gemm.wgmma needs sm_90";
  // 4096 x 4096 in 128 x 256 tiles: 512 tiles over 132 persistent CTAs (3 or 4 each), 16 k-steps per tile.
  RunRecord r = record("gemm.wgmma", {{"M", "4096"}, {"N", "4096"}, {"K", "1024"}}, true);
  auto counts = check_common(r, 3);
  ASSERT_TRUE(r.timeline);
  const int grid = static_cast<int>(r.launch.grid.x);
  for (int b = 0; b < grid; ++b) {
    const int tiles = (512 - b + grid - 1) / grid, iterations = tiles * 16;
    EXPECT_EQ((counts[{b, 0, "tma_issue"}]), iterations) << "block " << b;
    EXPECT_EQ((counts[{b, 0, "wait_empty"}]), iterations) << "block " << b;
    for (int w : {4, 8}) {  // the first warp of each consumer warpgroup records for the warpgroup
      EXPECT_EQ((counts[{b, w, "wgmma"}]), iterations) << "block " << b << " warp " << w;
      EXPECT_EQ((counts[{b, w, "wait_full"}]), iterations) << "block " << b << " warp " << w;
      EXPECT_EQ((counts[{b, w, "epilogue"}]), tiles) << "block " << b << " warp " << w;
      EXPECT_EQ((counts[{b, w, "release"}]), iterations) << "block " << b;
    }
    for (int w : {1, 2, 3, 5, 6, 7, 9, 10, 11})
      EXPECT_EQ((counts[{b, w, "wgmma"}] + counts[{b, w, "wait_full"}] + counts[{b, w, "tma_issue"}]), 0)
          << "block " << b << " warp " << w << " records nothing";
  }
  // The probe build was timed in the same worker: report the overhead (the 3% target is checked at 8192^3 by
  // tests/perf/gpu_checks.sh), bound it loosely here.
  ASSERT_EQ(r.timeline_time_ms.count, 5u);
  const double overhead = r.timeline_time_ms.median / r.time_ms.median - 1;
  std::printf("gemm.wgmma 4096x4096x1024: %.4f ms, probes on %.4f ms (%+.1f%%), %zu events\n", r.time_ms.median,
              r.timeline_time_ms.median, overhead * 100, r.timeline->events.size());
  EXPECT_LT(overhead, 0.25);
  auto occ = stage_occupancy(*r.timeline);
  // A stage's span ends at the last mark of its iteration; a lagging consumer warp may mark its wgmma end just
  // after the refill was issued, so allow one more than num_stages.
  EXPECT_GE(occ.max_in_flight, 2);
  EXPECT_LE(occ.max_in_flight, 4);
}

TEST(TimelineGpu, GemmMmaRecordsEveryWarp) {
  TL_REQUIRE_GPU();
  RunRecord r = record("gemm.mma", {{"M", "1024"}, {"N", "1024"}, {"K", "512"}}, false);
  auto counts = check_common(r, 4);
  ASSERT_TRUE(r.timeline);
  const int blocks = static_cast<int>(r.launch.grid.x), warps = static_cast<int>(r.launch.block.x / 32);
  for (int b = 0; b < blocks; ++b)
    for (int w = 0; w < warps; ++w) {
      EXPECT_EQ((counts[{b, w, "mma"}]), 8) << "block " << b << " warp " << w;  // K = 512: 8 k-steps
      // The prologue's wait for stage 0, then one after each k-step (the barrier that also frees the stage read).
      EXPECT_EQ((counts[{b, w, "wait_stage"}]), 9);
      EXPECT_EQ((counts[{b, w, "load_issue"}]), 8);
      EXPECT_EQ((counts[{b, w, "epilogue"}]), 1);
    }
}

}  // namespace
}  // namespace tl
