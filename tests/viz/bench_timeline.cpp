// Benchmark: decoding a probe buffer of over 1M events (target < 1 s) and building the Gantt scene of a 1M-event
// view (target <= 8 ms per frame), plus a zoomed frame and painting a frame to PNG.
#include <benchmark/benchmark.h>

#include <cstring>
#include <filesystem>

#include "tests/viz/timeline_fixtures.hpp"
#include "viz/cairo_painter.hpp"
#include "viz/timeline_scene.hpp"

namespace {

using namespace tl;

// 132 blocks x 8 warps x 1000 begin/end pairs = 1.056M interval events; stages cycle, clocks advance ~20 cycles.
std::vector<std::uint8_t> big_buffer() {
  const std::uint32_t blocks = 132, warps = 8, pairs = 1000, cap = 2 * pairs;
  auto buf = make_probe_buffer(blocks, warps, cap, 1'755'000'000);
  for (std::uint32_t b = 0; b < blocks; ++b) {
    probe::ProbeBlock e{};
    e.gt_begin = 1'000'000 + b * 37;
    e.clk_begin = 5'000'000'000ull + b * 1'000'003ull;
    e.gt_end = e.gt_begin + 100'000;
    e.clk_end = e.clk_begin + 175'500;
    e.smid = (b * 7) % 132;
    e.flags = probe::kBlockBegun | probe::kBlockEnded;
    std::memcpy(buf.data() + probe::block_table_offset() + b * sizeof e, &e, sizeof e);
    for (std::uint32_t w = 0; w < warps; ++w) {
      const std::uint64_t off = probe::segment_offset(blocks, warps, cap, b, w);
      probe::ProbeSegment seg{cap, 1, 0};
      std::memcpy(buf.data() + off, &seg, sizeof seg);
      std::uint64_t clk = e.clk_begin + w;
      for (std::uint32_t i = 0; i < pairs; ++i) {
        const auto stage = static_cast<std::uint8_t>(i % 4);
        probe::ProbeRecord rb{clk, static_cast<std::uint16_t>(i % 3), probe::kBegin, stage, i};
        clk += 12 + (i % 9);
        probe::ProbeRecord re{clk, static_cast<std::uint16_t>(i % 3), probe::kEnd, stage, i};
        clk += 3;
        std::memcpy(buf.data() + off + sizeof seg + (2 * i) * sizeof rb, &rb, sizeof rb);
        std::memcpy(buf.data() + off + sizeof seg + (2 * i + 1) * sizeof re, &re, sizeof re);
      }
    }
  }
  return buf;
}

void BM_DecodeTimeline(benchmark::State& state) {
  const auto buf = big_buffer();
  DecodeOptions o;
  o.regions = {"load", "mma", "wait"};
  std::size_t events = 0;
  for (auto _ : state) {
    auto t = decode_timeline(buf.data(), buf.size(), o);
    if (!t) state.SkipWithError(t.status().message().c_str());
    events = t->events.size();
    benchmark::DoNotOptimize(t);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * events));
  state.SetLabel(std::to_string(events) + " events, " + std::to_string(buf.size() >> 20) + " MiB");
}
BENCHMARK(BM_DecodeTimeline)->Unit(benchmark::kMillisecond);

// One frame of the Gantt view over 64 tracks x 14600 events + every 8th nesting a child: 1.05M events in view.
void BM_GanttScene1M(benchmark::State& state) {
  static const Timeline t = viz::testing::busy_timeline(64, 14600);
  viz::GanttStyle style;
  style.width = 1600;
  style.max_tracks = 64;
  style.lod = state.range(0) != 0;
  viz::GanttInfo info;
  for (auto _ : state) benchmark::DoNotOptimize(viz::build_gantt_scene(t, style, &info));
  state.SetLabel(std::to_string(info.events_in_view) + " events in view, " + std::to_string(info.bars) + " bars");
}
BENCHMARK(BM_GanttScene1M)->Arg(1)->ArgName("lod")->Unit(benchmark::kMillisecond);

void BM_GanttSceneZoomed(benchmark::State& state) {
  static const Timeline t = viz::testing::busy_timeline(64, 14600);
  viz::GanttStyle style;
  style.width = 1600;
  style.t0_ns = 50'000;
  style.t1_ns = 60'000;
  viz::GanttInfo info;
  for (auto _ : state) benchmark::DoNotOptimize(viz::build_gantt_scene(t, style, &info));
  state.SetLabel(std::to_string(info.events_in_view) + " events in view, " + std::to_string(info.bars) + " bars");
}
BENCHMARK(BM_GanttSceneZoomed)->Unit(benchmark::kMillisecond);

void BM_GanttPaintPng(benchmark::State& state) {
  static const Timeline t = viz::testing::busy_timeline(64, 14600);
  const auto out = (std::filesystem::temp_directory_path() / "tl_bench_gantt.png").string();
  for (auto _ : state) {
    auto scene = viz::build_gantt_scene(t);
    if (!viz::write_scene(scene, out).ok()) state.SkipWithError("write failed");
  }
  std::filesystem::remove(out);
}
BENCHMARK(BM_GanttPaintPng)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
