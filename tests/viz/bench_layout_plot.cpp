// Benchmark: building and painting large layout plots (the 256x256 grid must paint to PNG well under a second).
#include <benchmark/benchmark.h>

#include <filesystem>

#include "tests/viz/viz_fixtures.hpp"
#include "viz/cairo_painter.hpp"
#include "viz/layout_scene.hpp"

namespace {

using namespace tl::viz;

void BM_BuildLayoutScene(benchmark::State& state) {
  int n = static_cast<int>(state.range(0));
  LayoutGrid g = testing::row_major_smem(n, n, 2);
  GridStyle style;
  style.color = ColorBy::bank;
  for (auto _ : state) benchmark::DoNotOptimize(build_layout_scene(g, style));
  state.SetItemsProcessed(state.iterations() * n * n);
}
BENCHMARK(BM_BuildLayoutScene)->Arg(64)->Arg(256)->Arg(512)->Unit(benchmark::kMillisecond);

void BM_BuildAndPaint(benchmark::State& state, ImageFormat format) {
  int n = static_cast<int>(state.range(0));
  LayoutGrid g = testing::four_warp_fragment(n);  // 64 x n, every cell labelled while they fit
  if (n >= 256) g = testing::row_major_smem(n, n, 2);
  GridStyle style;
  auto out = (std::filesystem::temp_directory_path() / (std::string("tl_bench.") + image_format_name(format))).string();
  for (auto _ : state) {
    auto scene = build_layout_scene(g, style);
    if (!write_scene(*scene, out, format).ok()) state.SkipWithError("write failed");
  }
  std::filesystem::remove(out);
  state.SetLabel(std::to_string(g.rows) + "x" + std::to_string(g.cols));
}
BENCHMARK_CAPTURE(BM_BuildAndPaint, png, ImageFormat::png)->Arg(64)->Arg(256)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_BuildAndPaint, svg, ImageFormat::svg)->Arg(64)->Arg(256)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_BuildAndPaint, pdf, ImageFormat::pdf)->Arg(64)->Arg(256)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
