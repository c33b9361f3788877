// Benchmarks: CPU time to build one frame of the whole app (ImGui, no window) with a 256x256 layout open, with
// a 1M-event timeline open, and with 5000 rows of results history (two compared). Target: <= 8 ms each.
#include <benchmark/benchmark.h>

#include <filesystem>

#include <imgui.h>

#include "app/gui/app.hpp"
#include "tests/viz/timeline_fixtures.hpp"

namespace {

// An ImGui context with a built font atlas and a display size: enough for NewFrame/Render without a backend.
struct Headless {
  Headless() {
    ImGui::CreateContext();
    ImGuiIO& io = ImGui::GetIO();
    io.IniFilename = nullptr;
    io.BackendFlags |= ImGuiBackendFlags_RendererHasVtxOffset;  // as the OpenGL3 backend: > 64k vertices per list
    io.DisplaySize = ImVec2(1400, 900);
    io.DeltaTime = 1.0f / 60;
    unsigned char* pixels = nullptr;
    int w = 0, h = 0;
    io.Fonts->GetTexDataAsRGBA32(&pixels, &w, &h);
  }
  ~Headless() { ImGui::DestroyContext(); }
};

// The app on a results store of its own (not the user's): history loads from an empty file.
tl::gui::AppOptions options() {
  tl::gui::AppOptions o;
  o.results_db = (std::filesystem::temp_directory_path() / "tl_bench_gui_frame.db").string();
  o.record_runs = false;
  return o;
}

// One frame; returns the vertices it drew (so a benchmark can show the view was not empty).
int frame(tl::gui::App& app) {
  ImGui::NewFrame();
  app.frame();
  ImGui::Render();
  return ImGui::GetDrawData()->TotalVtxCount;
}

void BM_FrameLayout256(benchmark::State& state) {
  Headless h;
  tl::gui::App app(options());
  app.layouts.set_spec("(256,256):(256,1)");
  (void)app.show_panel("Layouts");
  for (int i = 0; i < 3; ++i) frame(app);  // build the scene, fit the view
  int vertices = 0;
  for (auto _ : state) vertices = frame(app);
  state.counters["vertices"] = vertices;
}
BENCHMARK(BM_FrameLayout256)->Unit(benchmark::kMillisecond)->MeasureProcessCPUTime();

void BM_FrameTimeline1M(benchmark::State& state) {
  Headless h;
  tl::gui::App app(options());
  // 1024 tracks x ~1000 events.
  app.timeline.set(std::make_shared<const tl::Timeline>(tl::viz::testing::busy_timeline(1024, 900)), "synthetic");
  (void)app.show_panel("Timeline");
  for (int i = 0; i < 3; ++i) frame(app);
  const double duration = app.timeline.timeline()->duration_ns;
  const bool zooming = state.range(0) != 0;
  int vertices = 0, i = 0;
  for (auto _ : state) {
    // Zooming: a new time window every frame, so the Gantt scene is rebuilt each time (the worst case).
    if (zooming) app.timeline.set_window(0, duration * (0.5 + 0.5 * ((++i % 16) / 16.0)));
    vertices = frame(app);
  }
  state.counters["events"] = static_cast<double>(app.timeline.timeline()->events.size());
  state.counters["vertices"] = vertices;
}
BENCHMARK(BM_FrameTimeline1M)->Arg(0)->Arg(1)->ArgName("zooming")->Unit(benchmark::kMillisecond)->MeasureProcessCPUTime();

void BM_FrameResults5000(benchmark::State& state) {
  Headless h;
  tl::gui::App app(options());
  (void)app.wait_for_jobs(30);  // the (empty) history load
  std::vector<tl::gui::HistoryRow> rows;
  for (int i = 1; i <= 5000; ++i) {
    tl::StoredRun r;
    r.id = i;
    r.time = "2026-11-24T01:00:00Z";
    r.kernel = i % 3 ? "gemm.mma" : "gemm.wgmma";
    r.status = i % 17 ? "passed" : "fault";
    r.config = {{"block_M", 64 << (i % 3)}, {"block_N", 64 << (i % 4)}, {"num_stages", 2 + i % 4}};
    r.problem = {{"M", 4096}, {"N", 4096}, {"K", 4096}};
    r.median_ms = 0.2 + (i % 97) * 0.01;
    r.tflops = 137.4 / r.median_ms;
    r.resources = {{"registers", 96 + i % 100}};
    rows.push_back(tl::gui::make_history_row(std::move(r)));
  }
  app.results.add_rows(std::move(rows));
  (void)app.results.pick(10, 20);
  (void)app.show_panel("Results");
  for (int i = 0; i < 3; ++i) frame(app);
  int vertices = 0;
  for (auto _ : state) vertices = frame(app);
  state.counters["rows"] = static_cast<double>(app.results.rows().size());
  state.counters["vertices"] = vertices;
}
BENCHMARK(BM_FrameResults5000)->Unit(benchmark::kMillisecond)->MeasureProcessCPUTime();

}  // namespace

BENCHMARK_MAIN();
