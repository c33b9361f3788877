// GPU: the sweep engine with the real worker: copy configs run, pass and are stored with their times; a sweep of
// faulting kernels records each fault and restarts the worker, and a passing sweep afterwards runs in the same Session;
// on two GPUs each runs points in a worker of its own, a fault on one restarting only that one.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <set>

#include "session/sweep.hpp"
#include "tests/support/gpu.hpp"
#include "tests/support/tilelab_exe.hpp"

namespace tl {
namespace {

namespace fs = std::filesystem;

std::unique_ptr<Session> open_session() {
  SessionOptions o;
  o.worker.executable = test::tilelab_exe();
  o.timeout = std::chrono::milliseconds(20000);
  auto s = Session::open(o);
  EXPECT_TRUE(s) << s.status().message();
  return s ? std::move(*s) : nullptr;
}

std::string temp_db(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("tilelab-sweep-gpu-" + std::to_string(getpid()));
  fs::create_directories(d);
  fs::remove(d / name);
  return (d / name).string();
}

TEST(SweepGpu, RunsChecksTimesAndStoresEachPoint) {
  TL_REQUIRE_GPU();
  auto session = open_session();
  ASSERT_TRUE(session);
  auto store = ResultsStore::open(temp_db("run.db"));
  ASSERT_TRUE(store);
  SweepSpec s;
  s.kernel = "copy";
  s.problems = {{{"n", "16777216"}, {"dtype", "f32"}}, {{"n", "1048576"}, {"dtype", "bf16"}}};
  s.space = *parse_sweep_space("vec=1,4,8;threads=128,256");
  s.run.timing.repeat = 5;
  s.run.timing.warmup = 1;
  auto sum = run_sweep(*session, store->get(), s, {}, nullptr, "gbps");
  ASSERT_TRUE(sum) << sum.status().message();
  EXPECT_EQ(sum->total, 12u);
  EXPECT_EQ(sum->skipped, 2u);  // vec=8 of f32; bf16 vec=8 is 16 bytes and runs
  EXPECT_EQ(sum->ran, 10u);
  EXPECT_EQ(sum->passed, 10u);
  EXPECT_GT(sum->kernel_s, 0);
  EXPECT_LT(sum->kernel_s, sum->wall_s);
  ASSERT_TRUE(sum->best);
  ResultsQuery q;
  q.sweep_id = sum->id;
  auto rows = (*store)->query(q);
  ASSERT_TRUE(rows);
  ASSERT_EQ(rows->size(), 12u);
  for (const auto& r : *rows) {
    if (r.status == "skipped") continue;
    EXPECT_EQ(r.status, "passed") << r.failure_message;
    EXPECT_GT(r.median_ms, 0);
    EXPECT_GT(r.gbps, 0);
    EXPECT_FALSE(r.device.empty());
    EXPECT_GT(r.sm_clock_khz, 0);
  }
}

TEST(SweepGpu, FaultingPointsAreRecordedAndTheSessionGoesOn) {
  TL_REQUIRE_GPU();
  auto session = open_session();
  ASSERT_TRUE(session);
  auto store = ResultsStore::open(temp_db("fault.db"));
  ASSERT_TRUE(store);
  SweepSpec faults;
  faults.kernel = "test.oob";
  faults.problems = {{{"n", "1024"}}};
  faults.space = *parse_sweep_space("threads=64,128");
  auto f = run_sweep(*session, store->get(), faults);
  ASSERT_TRUE(f) << f.status().message();
  EXPECT_EQ(f->ran, 2u);
  EXPECT_EQ(f->passed, 0u);
  for (const auto& p : f->points) EXPECT_EQ(p.status, PointStatus::fault) << p.reason;

  SweepSpec ok;
  ok.kernel = "copy";
  ok.problems = {{{"n", "1048576"}, {"dtype", "f32"}}};
  ok.space = *parse_sweep_space("vec=1,4");
  auto g = run_sweep(*session, store->get(), ok);
  ASSERT_TRUE(g) << g.status().message();
  EXPECT_EQ(g->passed, 2u);
}

TEST(SweepGpu, TwoGpusEachRunPointsInTheirOwnWorker) {
  TL_REQUIRE_GPU();
  auto session = open_session();
  ASSERT_TRUE(session);
  if (session->gpu_count() < 2) GTEST_SKIP() << "needs two GPUs; this machine has " << session->gpu_count();
  auto store = ResultsStore::open(temp_db("two.db"));
  ASSERT_TRUE(store);
  SweepSpec s;
  s.kernel = "copy";
  s.problems = {{{"n", "16777216"}, {"dtype", "f32"}}};
  s.space = *parse_sweep_space("vec=1,2,4;threads=64,128,256,512");
  s.gpus = {0, 1};
  s.run.timing.repeat = 20;
  auto sum = run_sweep(*session, store->get(), s, {}, nullptr, "gbps");
  ASSERT_TRUE(sum) << sum.status().message();
  EXPECT_EQ(sum->passed, 12u);
  ASSERT_EQ(sum->gpus.size(), 2u);
  for (const SweepGpu& g : sum->gpus) {
    EXPECT_GT(g.ran, 0u) << "GPU " << g.index;
    EXPECT_EQ(g.restarts, 0);
    EXPECT_EQ(g.name, session->target(g.index).device->name);
  }
  ResultsQuery q;
  q.sweep_id = sum->id;
  auto rows = (*store)->query(q);
  ASSERT_TRUE(rows);
  ASSERT_EQ(rows->size(), 12u);
  std::set<int> gpus;
  for (const auto& r : *rows) gpus.insert(r.gpu);
  EXPECT_EQ(gpus, (std::set<int>{0, 1}));
  EXPECT_TRUE(session->worker(0).running() && session->worker(1).running());
  EXPECT_NE(session->worker(0).pid(), session->worker(1).pid());

  // Faulting kernels on both: each GPU's worker restarts, and both run a passing sweep afterwards.
  SweepSpec faults;
  faults.kernel = "test.oob";
  faults.problems = {{{"n", "1024"}}};
  faults.space = *parse_sweep_space("threads=64,128,256,512");
  faults.gpus = {0, 1};
  auto f = run_sweep(*session, store->get(), faults);
  ASSERT_TRUE(f) << f.status().message();
  EXPECT_EQ(f->ran, 4u);
  for (const auto& p : f->points) EXPECT_EQ(p.status, PointStatus::fault) << p.reason;
  s.resume = false;
  auto again = run_sweep(*session, store->get(), s, {}, nullptr, "gbps");
  ASSERT_TRUE(again) << again.status().message();
  EXPECT_EQ(again->passed, 12u);
}

}  // namespace
}  // namespace tl
