// The desktop app's logic without a window: workspace file, job queue, Chrome-trace import.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <thread>
#include <tuple>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "app/gui/job_queue.hpp"
#include "app/gui/trace_import.hpp"
#include "app/gui/workspace.hpp"
#include "tests/viz/timeline_fixtures.hpp"

namespace fs = std::filesystem;
using namespace tl;
using namespace tl::gui;

namespace {

fs::path temp_dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("tl_gui_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::string read(const fs::path& p) {
  std::ifstream in(p);
  return {std::istreambuf_iterator<char>(in), {}};
}

}  // namespace

TEST(Workspace, RoundTripsThroughTheFile) {
  fs::path d = temp_dir("ws");
  Workspace w;
  w.kernel = "gemm.mma";
  w.configs["gemm.mma"] = {{"block_M", "128"}, {"num_stages", "3"}};
  w.problems["gemm.mma"] = {{"M", "4096"}};
  w.script = "/tmp/x.lua";
  w.layout_spec = "swizzle<3,3,3> o (8,64):(64,1)";
  w.panels = {{"PTX", false}, {"Lua", true}};
  w.tab = "Roofline";
  w.sidebar_width = 412;
  const std::string path = (d / "sub" / "workspace.json").string();  // the folder is created
  ASSERT_TRUE(save_workspace(path, w).ok());
  auto back = load_workspace(path);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(*back, w);
  EXPECT_FALSE(back->shown("PTX"));
  EXPECT_TRUE(back->shown("Source"));  // not mentioned: shown
  // No temporary file is left next to it.
  int files = 0;
  for (const auto& e : fs::directory_iterator(d / "sub")) files += e.is_regular_file();
  EXPECT_EQ(files, 1);
}

TEST(Workspace, MissingFileIsAFirstStart) {
  auto w = load_workspace((temp_dir("missing") / "none.json").string());
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(*w, Workspace{});
}

TEST(Workspace, CorruptFileNamesTheFileAndTheProblem) {
  fs::path d = temp_dir("corrupt");
  const fs::path p = d / "workspace.json";
  std::ofstream(p) << "{\"kernel\": \"gemm.mma\", ";
  auto w = load_workspace(p.string());
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().code(), ErrorCode::parse);
  EXPECT_NE(w.status().message().find(p.string()), std::string::npos);
  std::ofstream(p) << R"({"kernel": 12})";
  w = load_workspace(p.string());
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.status().message().find("\"kernel\""), std::string::npos) << w.status().message();
}

TEST(Workspace, AtomicWriteReplacesWholeFiles) {
  fs::path d = temp_dir("atomic");
  const std::string p = (d / "f.txt").string();
  ASSERT_TRUE(write_file_atomic(p, std::string(100000, 'a')).ok());
  ASSERT_TRUE(write_file_atomic(p, "short").ok());
  EXPECT_EQ(read(p), "short");
  // A folder in the way cannot be replaced: an error, and the folder is untouched.
  fs::create_directories(d / "dir");
  EXPECT_FALSE(write_file_atomic((d / "dir").string(), "x").ok());
  EXPECT_TRUE(fs::is_directory(d / "dir"));
}

TEST(Workspace, IniFileSitsNextToTheWorkspace) {
  EXPECT_EQ(imgui_ini_path("/a/b/workspace.json"), "/a/b/workspace.imgui.ini");
}

TEST(JobQueue, RunsInOrderOffTheCallingThreadAndHandsBackOnDrain) {
  JobQueue q;
  std::vector<int> order;
  std::atomic<int> ran{0};
  const auto caller = std::this_thread::get_id();
  bool other_thread = true;
  for (int i = 0; i < 5; ++i)
    q.post("job", [&, i]() -> JobQueue::Done {
      other_thread = other_thread && std::this_thread::get_id() != caller;
      ++ran;
      return [&order, i] { order.push_back(i); };
    });
  while (ran < 5) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_TRUE(order.empty());  // callbacks wait for drain()
  while (q.busy()) q.drain();
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4}));
  EXPECT_TRUE(other_thread);
}

TEST(JobQueue, AnExceptionBecomesAnErrorCallbackAndTheQueueGoesOn) {
  JobQueue q;
  std::string error;
  bool after = false;
  q.post("bad job", []() -> JobQueue::Done { throw std::runtime_error("boom"); },
         [&](const std::string& e) { error = e; });
  q.post("next", [&]() -> JobQueue::Done { return [&] { after = true; }; });
  while (q.busy()) q.drain();
  EXPECT_EQ(error, "bad job: boom");
  EXPECT_TRUE(after);
}

TEST(TraceImport, ReadsBackOurOwnChromeTrace) {
  Timeline t = viz::testing::busy_timeline(24, 50);
  auto back = timeline_from_chrome_trace(to_chrome_trace(t));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->events.size(), t.events.size());
  EXPECT_EQ(back->regions, t.regions);
  EXPECT_EQ(back->num_stages, t.num_stages);
  EXPECT_NEAR(back->duration_ns, t.duration_ns, 1e-3 * t.duration_ns);
  // Same blocks and warps per track (sub-tracks are rebuilt from the overlaps).
  std::set<std::tuple<int, int, int>> a, b;
  for (const auto& tr : t.tracks) a.insert({tr.sm, tr.block, tr.warp});
  for (const auto& tr : back->tracks) b.insert({tr.sm, tr.block, tr.warp});
  EXPECT_EQ(a, b);
  // Per region: the same count and total duration.
  auto totals = [](const Timeline& x) {
    std::map<std::string, std::pair<int, double>> m;
    for (const auto& e : x.events) {
      auto& s = m[x.region_name(e.region)];
      ++s.first;
      s.second += e.duration_ns();
    }
    return m;
  };
  auto ta = totals(t), tb = totals(*back);
  ASSERT_EQ(ta.size(), tb.size());
  for (const auto& [name, s] : ta) {
    EXPECT_EQ(tb[name].first, s.first) << name;
    EXPECT_NEAR(tb[name].second, s.second, 1e-6 * s.second + 1e-3) << name;
  }
}

TEST(TraceImport, ForeignTracesWithBeginEndPairs) {
  nlohmann::json trace = {{"traceEvents",
                           {{{"ph", "B"}, {"name", "load"}, {"pid", 7}, {"tid", 2}, {"ts", 1.0}},
                            {{"ph", "E"}, {"name", "load"}, {"pid", 7}, {"tid", 2}, {"ts", 3.0}},
                            {{"ph", "X"}, {"name", "mma"}, {"pid", 7}, {"tid", 3}, {"ts", 2.0}, {"dur", 0.5}},
                            {{"ph", "C"}, {"name", "counter"}, {"pid", 7}, {"ts", 2.0}}}}};
  auto t = timeline_from_chrome_trace(trace);
  ASSERT_TRUE(t.ok()) << t.status().message();
  ASSERT_EQ(t->events.size(), 2u);
  EXPECT_EQ(t->tracks.size(), 2u);
  EXPECT_NEAR(t->duration_ns, 2000, 1e-6);  // 1 µs .. 3 µs, origin moved to the first event
  ASSERT_EQ(t->warnings.size(), 1u);        // the counter event was skipped, and said so
}

TEST(TraceImport, RejectsWhatIsNotATrace) {
  EXPECT_FALSE(timeline_from_chrome_trace(nlohmann::json{{"foo", 1}}).ok());
  EXPECT_FALSE(timeline_from_chrome_trace(nlohmann::json{{"traceEvents", nlohmann::json::array()}}).ok());
  auto missing = load_chrome_trace("/nonexistent/trace.json");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), ErrorCode::not_found);
}
