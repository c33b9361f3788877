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

#include "app/gui/history.hpp"
#include "app/gui/job_queue.hpp"
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

// [SECTION] progress from a running job, history rows, sweep spaces, SASS tools

TEST(JobQueue, DeliverHandsProgressOverBeforeTheJobEnds) {
  JobQueue q;
  std::vector<int> seen;
  std::atomic<bool> release{false};
  q.post("steps", [&]() -> JobQueue::Done {
    for (int i = 1; i <= 3; ++i) q.deliver([&seen, i] { seen.push_back(i); });
    while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return [&seen] { seen.push_back(99); };
  });
  // The job is still running (blocked on `release`), yet its three steps reach the UI thread.
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (seen.size() < 3 && std::chrono::steady_clock::now() < end) {
    q.drain();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(seen, (std::vector<int>{1, 2, 3}));
  EXPECT_TRUE(q.busy());
  release = true;
  while (q.busy() && std::chrono::steady_clock::now() < end) q.drain();
  EXPECT_EQ(seen, (std::vector<int>{1, 2, 3, 99}));
}

namespace {

HistoryRow row(std::int64_t id, const std::string& kernel, double tflops, int session = 0) {
  StoredRun r;
  r.id = id;
  r.kernel = kernel;
  r.tflops = tflops;
  r.median_ms = tflops > 0 ? 1 / tflops : 0;
  r.status = "passed";
  r.config = {{"block_M", 64 * (id + 1)}};
  return make_history_row(r, session);
}

}  // namespace

TEST(History, MergeReplacesByStoreIdAndKeepsTheSessionLink) {
  std::vector<HistoryRow> rows;
  merge_history(rows, {row(2, "gemm.mma", 100), row(1, "copy", 0), row(0, "gemm.mma", 50, 7)});
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].run.id, 1);  // stored rows by id, then the unstored
  EXPECT_EQ(rows[2].key(), -7);
  EXPECT_EQ(rows[1].config_text, "block_M=192");
  // A run of this session stored as row 3, then a reload that knows nothing of the session.
  merge_history(rows, {row(3, "gemm.mma", 120, 8)});
  merge_history(rows, {row(3, "gemm.mma", 120), row(2, "gemm.mma", 101)});
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[2].run.id, 3);
  EXPECT_EQ(rows[2].session_run, 8);
  EXPECT_DOUBLE_EQ(rows[1].run.tflops, 101);
}

TEST(History, OrderFiltersByKernelAndSortsEitherWay) {
  std::vector<HistoryRow> rows;
  merge_history(rows, {row(1, "gemm.mma", 100), row(2, "copy", 0), row(3, "gemm.mma", 300), row(4, "gemm.mma", 200),
                       row(0, "gemm.mma", 250, 5)});
  HistoryView v;  // default: newest first; an unstored run of this session is the newest
  auto o = history_order(rows, v);
  ASSERT_EQ(o.size(), 5u);
  EXPECT_EQ(rows[o[0]].key(), -5);
  EXPECT_EQ(rows[o[1]].run.id, 4);
  EXPECT_EQ(rows[o[4]].run.id, 1);
  v.kernel = "gemm.mma";
  v.sort = HistoryColumn::tflops;
  v.ascending = false;
  o = history_order(rows, v);
  ASSERT_EQ(o.size(), 4u);
  std::vector<double> t;
  for (auto i : o) t.push_back(rows[i].run.tflops);
  EXPECT_EQ(t, (std::vector<double>{300, 250, 200, 100}));
  v.ascending = true;
  v.sort = HistoryColumn::median_ms;
  o = history_order(rows, v);
  EXPECT_EQ(rows[o[0]].run.id, 3);  // the fastest has the smallest median
  v = {};
  v.sort = HistoryColumn::kernel;
  v.ascending = true;
  o = history_order(rows, v);
  EXPECT_EQ(rows[o[0]].run.kernel, "copy");
  EXPECT_EQ(history_kernels(rows), (std::vector<std::string>{"copy", "gemm.mma"}));
  // The timer column sorts as text: cupti < events < graph.
  rows[0].run.timer = "graph";
  rows[1].run.timer = "cupti";
  v.sort = HistoryColumn::timer;
  o = history_order(rows, v);
  EXPECT_EQ(rows[o.front()].run.timer, "cupti");
  EXPECT_EQ(rows[o.back()].run.timer, "graph");
}

TEST(SweepSpace, SuggestionsAreAllowedValuesAroundTheCurrentOne) {
  Schema s;
  s.params = {ParamSpec::boolean("swizzle", true, ""), ParamSpec::one_of("block_M", 128, {32, 64, 128, 256}, ""),
              ParamSpec::one_of("block_N", 32, {32, 64, 128, 256}, ""), ParamSpec::integer("num_stages", 3, 2, 8, ""),
              ParamSpec::integer("threads", 256, 32, 1024, "")};
  // Booleans are left out; the current value sits in the middle where it can, the range's end otherwise.
  EXPECT_EQ(suggest_sweep_space(s, {}), "block_M=64,128,256;block_N=32,64,128");
  EXPECT_EQ(suggest_sweep_space(s, {{"block_M", "256"}}), "block_M=64,128,256;block_N=32,64,128");
  EXPECT_EQ(suggest_sweep_space(s, {{"block_M", "32"}}, 3, 2), "block_M=32,64;block_N=32,64;num_stages=2,4");
  EXPECT_EQ(suggest_sweep_space(Schema{}, {}), "");
  EXPECT_EQ(sweep_metrics(false).front(), "registers");  // without runs, only what compiling reports
  EXPECT_EQ(sweep_metrics(true).front(), "tflops");
}

TEST(Sass, FindsNvdisasmFirstThenCuobjdumpOnlyWhenExecutable) {
  fs::path a = temp_dir("sass_a"), b = temp_dir("sass_b");
  auto make = [](const fs::path& p, const std::string& body, bool exec) {
    std::ofstream(p) << "#!/bin/sh\n" << body << "\n";
    fs::permissions(p, exec ? fs::perms::owner_all : fs::perms::owner_read | fs::perms::owner_write);
  };
  EXPECT_FALSE(find_disassembler("", {a.string()}));
  make(a / "nvdisasm", "exit 0", false);  // not executable: does not count
  EXPECT_FALSE(find_disassembler(a.string(), {}));
  make(b / "cuobjdump", "echo \"SASS of $2\"", true);
  auto t = find_disassembler(a.string() + ":" + b.string(), {});
  ASSERT_TRUE(t);
  EXPECT_EQ(t->kind, "cuobjdump");
  make(a / "nvdisasm", "echo \"$1 listing\"", true);
  t = find_disassembler("", {b.string(), a.string()});  // nvdisasm wins wherever it is
  ASSERT_TRUE(t);
  EXPECT_EQ(t->kind, "nvdisasm");
  EXPECT_EQ(t->path, (a / "nvdisasm").string());
  auto out = disassemble(*t, {'\x7f', 'E', 'L', 'F'});
  ASSERT_TRUE(out) << out.status().message();
  EXPECT_EQ(*out, "-c listing\n");
  EXPECT_FALSE(disassemble(*t, {}));  // nothing compiled
  make(a / "nvdisasm", "echo 'unknown arch' >&2; exit 3", true);
  out = disassemble(*t, {'x'});
  ASSERT_FALSE(out);
  EXPECT_NE(out.status().message().find("exit 3"), std::string::npos) << out.status().message();
  EXPECT_NE(out.status().message().find("unknown arch"), std::string::npos);
  const std::string msg = no_disassembler_message({"/opt/cuda/bin"});
  for (const char* w : {"nvdisasm", "cuobjdump", "PATH", "/opt/cuda/bin", "CUDA_HOME"})
    EXPECT_NE(msg.find(w), std::string::npos) << w << " missing from: " << msg;
}
