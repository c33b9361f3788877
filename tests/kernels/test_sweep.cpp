// The sweep engine without a GPU: real NVRTC compiles on a thread pool, a fake runner in place of the worker,
// the real results store; invalid points skipped with their reason, filter, faults, interrupt, kill -9 and resume;
// sweeps over several fake GPUs (their workers real `tilelab worker` processes where a test needs restarts).
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "runtime/core/hash.hpp"
#include "session/sweep.hpp"
#include "tests/support/tilelab_exe.hpp"

namespace tl {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

fs::path temp_dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("tilelab-sweep-" + std::to_string(getpid())) / name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::unique_ptr<Session> open_session(const std::string& cache_dir = TL_TEST_CACHE_DIR) {
  SessionOptions o;
  o.cache_dir = cache_dir;
  auto s = Session::open(o);
  EXPECT_TRUE(s) << s.status().message();
  return s ? std::move(*s) : nullptr;
}

// What the worker would return, made up: faster for wider vectors and more threads, always verified.
RunRecord fake_run(const PreparedKernel& k, int = 0) {
  RunRecord r;
  r.kernel = k.instance.spec->name;
  r.family = k.instance.spec->family;
  r.problem = k.instance.problem.map();
  r.config = k.instance.config.map();
  r.device = "Fake GPU";
  r.resources = k.compiled.resources;
  r.min_bytes = k.instance.min_bytes;
  r.time_ms.count = 20;
  r.time_ms.median = 1.0 / double(k.instance.config.integer("vec") * k.instance.config.integer("threads"));
  r.time_ms.min = r.time_ms.max = r.time_ms.median;
  r.gbps = r.min_bytes / (r.time_ms.median * 1e-3) * 1e-9;
  r.verified = true;
  return r;
}

SweepSpec copy_sweep(const std::string& vecs = "1,2,4,8", const std::string& threads = "128,256") {
  SweepSpec s;
  s.kernel = "copy";
  s.problems = {{{"n", "65536"}, {"dtype", "f32"}}};
  s.space = *parse_sweep_space("vec=" + vecs + ";threads=" + threads);
  s.jobs = 2;
  s.runner = fake_run;
  return s;
}

TEST(SweepSpace, ParsesAxesInOrder) {
  auto s = parse_sweep_space("block_M=64,128; block_N = 128 ,256,512");
  ASSERT_TRUE(s) << s.status().message();
  ASSERT_EQ(s->size(), 2u);
  EXPECT_EQ((*s)[0].first, "block_M");
  EXPECT_EQ((*s)[0].second, (std::vector<std::string>{"64", "128"}));
  EXPECT_EQ((*s)[1].first, "block_N");
  EXPECT_EQ((*s)[1].second, (std::vector<std::string>{"128", "256", "512"}));
  EXPECT_FALSE(parse_sweep_space("block_M"));
  EXPECT_FALSE(parse_sweep_space("block_M=64,,128"));
  EXPECT_FALSE(parse_sweep_space("a=1;a=2"));
}

TEST(SweepSpace, IdDependsOnKernelProblemAndSpace) {
  SweepSpec a = copy_sweep(), b = copy_sweep();
  EXPECT_EQ(sweep_id(a), sweep_id(b));
  b.problems[0]["n"] = "1024";
  EXPECT_NE(sweep_id(a), sweep_id(b));
  b = copy_sweep("1,2");
  EXPECT_NE(sweep_id(a), sweep_id(b));
  EXPECT_EQ(sweep_id(a).size(), 16u);
  // A timer other than events is another sweep (its times do not rank against events'); events is the id as before.
  b = copy_sweep();
  b.run.timing.timer = Timer::events;
  EXPECT_EQ(sweep_id(a), sweep_id(b));
  b.run.timing.timer = Timer::graph;
  EXPECT_NE(sweep_id(a), sweep_id(b));
  SweepSpec c = copy_sweep();
  c.run.timing.timer = Timer::cupti;
  EXPECT_NE(sweep_id(c), sweep_id(b));
}

// What a plain SweepPrinter prints for these points, each with its progress.
std::string printed(const std::vector<std::pair<SweepPoint, SweepProgress>>& points) {
  std::FILE* f = std::tmpfile();
  EXPECT_NE(f, nullptr);
  SweepPrinter printer(f, /*force_plain=*/true);
  for (const auto& [p, progress] : points) printer.point(p, progress);
  printer.finish();
  std::rewind(f);
  std::string text(4096, '\0');
  text.resize(std::fread(text.data(), 1, text.size(), f));
  std::fclose(f);
  return text;
}

TEST(SweepPrinter, PlainLinesSayWhatEachPointDid) {
  SweepPoint ran;
  ran.problem = {{"n", "1024"}};
  ran.config = {{"vec", "4"}};
  ran.status = PointStatus::passed;
  RunRecord r;
  r.gbps = 123;
  r.time_ms.median = 0.5;
  ran.record = r;
  SweepPoint skipped = ran;
  skipped.config = {{"vec", "8"}};
  skipped.status = PointStatus::skipped;
  skipped.reason = "vec=8 is too wide";
  skipped.record.reset();
  EXPECT_EQ(printed({{ran, {1, 2}}, {skipped, {2, 2}}}),
            "[1/2] n=1024 vec=4: 123 GB/s, 0.5000 ms\n[2/2] n=1024 vec=8: skipped: vec=8 is too wide\n");
}

TEST(SweepPrinter, ACompiledPointThatDidNotRunSaysWhatItUses) {
  SweepPoint p;
  p.config = {{"block_M", "64"}};
  p.status = PointStatus::not_run;
  p.resources.registers = 158;
  p.resources.shared_static_bytes = 16;
  p.smem_dynamic = 32768;
  EXPECT_EQ(printed({{p, {1, 1}}}), "[1/1]  block_M=64: not_run (158 regs, 32784 B smem (16 static + 32768 dynamic), 0 B spills)\n");
  const nlohmann::json j = p;
  EXPECT_EQ(j["smem"], 32784);
  EXPECT_EQ(j["smem_dynamic"], 32768);
}

TEST(Sweep, CompileOnlyPointsCarryTheirDynamicSharedMemory) {
  auto session = open_session();
  ASSERT_TRUE(session);
  if (session->has_device()) GTEST_SKIP() << "a GPU is here: the points run";
  SweepSpec s;
  s.kernel = "gemm.mma";
  s.problems = {{{"M", "256"}, {"N", "256"}, {"K", "256"}}};
  s.space = *parse_sweep_space("block_M=64;block_N=64;num_stages=2,3");
  s.base_config = {{"warps_M", "2"}, {"warps_N", "2"}};
  auto sum = run_sweep(*session, nullptr, s);
  ASSERT_TRUE(sum) << sum.status().message();
  ASSERT_EQ(sum->points.size(), 2u);
  // Stages of a 64x64 A tile and a 64x64 B tile of bf16: 16 KiB each.
  EXPECT_EQ(sum->points[0].status, PointStatus::not_run);
  EXPECT_EQ(sum->points[0].smem_dynamic, 32768u);
  EXPECT_EQ(sum->points[1].smem_dynamic, 49152u);
}

TEST(Sweep, ASpaceTooLargeToEnumerateIsRefusedBeforeAnyPoint) {
  auto session = open_session();
  ASSERT_TRUE(session);
  std::string values;
  for (int v = 1; v <= 1000; ++v) {
    if (v > 1) values += ',';
    values += std::to_string(v);
  }
  SweepSpec s = copy_sweep();
  s.space = *parse_sweep_space("vec=" + values + ";threads=" + values);  // 1e6 points
  int points = 0;
  auto sum = run_sweep(*session, nullptr, s, [&](const SweepPoint&, const SweepProgress&) { ++points; });
  ASSERT_FALSE(sum);
  EXPECT_NE(sum.status().message().find("the sweep has 1000000 points"), std::string::npos) << sum.status().message();
  EXPECT_EQ(points, 0);
}

TEST(Sweep, SkipsInvalidConfigsWithTheirReasonAndStoresEveryPoint) {
  auto session = open_session();
  ASSERT_TRUE(session);
  auto store = ResultsStore::open((temp_dir("invalid") / "r.db").string());
  ASSERT_TRUE(store);
  std::vector<std::string> seen;
  auto sum = run_sweep(*session, store->get(), copy_sweep(), [&](const SweepPoint& p, const SweepProgress& pr) {
    seen.push_back(point_status_name(p.status));
    EXPECT_EQ(pr.done, seen.size());
    EXPECT_EQ(pr.total, 8u);
  }, nullptr, "gbps");
  ASSERT_TRUE(sum) << sum.status().message();
  EXPECT_EQ(sum->total, 8u);
  EXPECT_EQ(sum->ran, 6u);
  EXPECT_EQ(sum->passed, 6u);
  EXPECT_EQ(sum->skipped, 2u);  // vec=8 of f32 is 32 bytes, over the 16-byte vector limit
  EXPECT_EQ(seen.size(), 8u);
  for (const auto& p : sum->points) {
    if (p.config.at("vec") == "8") {
      EXPECT_EQ(p.status, PointStatus::skipped);
      EXPECT_NE(p.reason.find("vec=8"), std::string::npos) << p.reason;
    } else {
      EXPECT_EQ(p.status, PointStatus::passed);
      EXPECT_GT(p.resources.registers, 0);  // compiled for real
    }
  }
  ASSERT_TRUE(sum->best);
  EXPECT_EQ(sum->points[*sum->best].config.at("vec"), "4");
  EXPECT_EQ(sum->points[*sum->best].config.at("threads"), "256");

  ResultsQuery q;
  q.sweep_id = sum->id;
  auto rows = (*store)->query(q);
  ASSERT_TRUE(rows);
  ASSERT_EQ(rows->size(), 8u);
  int skipped = 0;
  for (const auto& r : *rows) {
    if (r.status == "skipped") {
      ++skipped;
      EXPECT_NE(r.failure_message.find("vec=8"), std::string::npos);
    } else {
      EXPECT_EQ(r.status, "passed");
      EXPECT_EQ(r.source_hash.size(), 32u);
    }
  }
  EXPECT_EQ(skipped, 2);
}

TEST(Sweep, RerunSkipsWhatIsStored) {
  auto session = open_session();
  ASSERT_TRUE(session);
  auto store = ResultsStore::open((temp_dir("rerun") / "r.db").string());
  ASSERT_TRUE(store);
  ASSERT_TRUE(run_sweep(*session, store->get(), copy_sweep()));
  int runs = 0;
  SweepSpec again = copy_sweep();
  again.runner = [&](const PreparedKernel& k, int) {
    ++runs;
    return fake_run(k);
  };
  auto sum = run_sweep(*session, store->get(), again);
  ASSERT_TRUE(sum);
  EXPECT_EQ(runs, 0);
  EXPECT_EQ(sum->resumed, 8u);
  // A larger space under another id runs only its own points.
  SweepSpec wider = copy_sweep("1,2,4,8", "128,256,512");
  wider.runner = again.runner;
  auto w = run_sweep(*session, store->get(), wider);
  ASSERT_TRUE(w);
  EXPECT_EQ(runs, 9);
}

TEST(Sweep, ShardsSplitThePointsAndTheirStoresMergeIntoTheWholeSweep) {
  auto session = open_session();
  ASSERT_TRUE(session);
  const fs::path dir = temp_dir("shards");
  // Three shards of one sweep, each into its own store (three nodes of a job array).
  std::set<std::string> keys;
  std::string id;
  std::vector<std::string> paths;
  for (int i = 0; i < 3; ++i) {
    paths.push_back((dir / ("shard" + std::to_string(i) + ".db")).string());
    auto store = ResultsStore::open(paths.back());
    ASSERT_TRUE(store);
    SweepSpec s = copy_sweep();
    s.shard = i;
    s.shards = 3;
    auto sum = run_sweep(*session, store->get(), s);
    ASSERT_TRUE(sum) << sum.status().message();
    EXPECT_EQ(sum->total + sum->other_shards, 8u);
    EXPECT_EQ(sum->total, i < 2 ? 3u : 2u);  // points 0,3,6 / 1,4,7 / 2,5
    if (i == 0) id = sum->id;
    EXPECT_EQ(sum->id, id);  // one sweep, whatever the shard
    for (const auto& p : sum->points) EXPECT_TRUE(keys.insert(sweep_point_key(p.problem, p.config)).second);
  }
  EXPECT_EQ(keys.size(), 8u);  // every point in exactly one shard
  auto all = ResultsStore::open((dir / "all.db").string());
  ASSERT_TRUE(all);
  std::int64_t runs = 0, new_sweeps = 0;
  for (const auto& p : paths) {
    auto n = (*all)->merge_from(p);
    ASSERT_TRUE(n) << n.status().message();
    runs += n->runs;
    new_sweeps += n->sweeps;
  }
  EXPECT_EQ(runs, 8);
  EXPECT_EQ(new_sweeps, 1);  // the shards' sweep is one
  auto merged = (*all)->sweep_points(id);
  ASSERT_TRUE(merged);
  EXPECT_EQ(*merged, keys);
  // Merging a shard again adds nothing; the sweep is listed once with its 8 runs.
  auto again = (*all)->merge_from(paths[0]);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->runs, 0);
  ResultsQuery q;
  q.sweep_id = id;
  EXPECT_EQ((*all)->query(q)->size(), 8u);
  auto sweeps = (*all)->sweeps();
  ASSERT_TRUE(sweeps);
  ASSERT_EQ(sweeps->size(), 1u);
  EXPECT_EQ(sweeps->front().runs, 8);
  // The best of the merged sweep is the whole sweep's best (vec=4, threads=256: in shard 1).
  q.best = "gbps";
  auto best = (*all)->query(q);
  ASSERT_TRUE(best);
  ASSERT_EQ(best->size(), 1u);
  auto text = [](const nlohmann::json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); };
  EXPECT_EQ(text(best->front().config["vec"]), "4");
  EXPECT_EQ(text(best->front().config["threads"]), "256");
}

TEST(Sweep, MergeRefusesItselfAMissingStoreAndAReadOnlyTarget) {
  const fs::path dir = temp_dir("merge_refusals");
  auto store = ResultsStore::open((dir / "a.db").string());
  ASSERT_TRUE(store);
  auto self = (*store)->merge_from((dir / "a.db").string());
  ASSERT_FALSE(self);
  EXPECT_NE(self.status().message().find("into itself"), std::string::npos) << self.status().message();
  auto missing = (*store)->merge_from((dir / "none.db").string());
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.status().message().find("none.db"), std::string::npos) << missing.status().message();
  auto ro = ResultsStore::open_read_only((dir / "a.db").string());
  ASSERT_TRUE(ro);
  EXPECT_FALSE((*ro)->merge_from((dir / "a.db").string()));
}

TEST(Sweep, ShardTextIsIOfN) {
  EXPECT_EQ(*parse_shard("0/4"), (std::pair<int, int>{0, 4}));
  EXPECT_EQ(*parse_shard("3/4"), (std::pair<int, int>{3, 4}));
  for (const char* bad : {"4/4", "1", "-1/4", "1/0", "a/b", "1/4/2", ""})
    EXPECT_FALSE(parse_shard(bad)) << bad;
  EXPECT_NE(parse_shard("4/4").status().message().find("0 <= I < N"), std::string::npos);
}

TEST(Sweep, FilterDropsPointsWithoutStoringThem) {
  auto session = open_session();
  ASSERT_TRUE(session);
  auto store = ResultsStore::open((temp_dir("filter") / "r.db").string());
  ASSERT_TRUE(store);
  SweepSpec s = copy_sweep();
  s.filter = [](const ParamMap&, const ParamMap& c, std::string& why) {
    why = "only 256 threads";
    return c.at("threads") == "256";
  };
  auto sum = run_sweep(*session, store->get(), s);
  ASSERT_TRUE(sum);
  EXPECT_EQ(sum->filtered, 4u);
  EXPECT_EQ(sum->ran, 3u);
  EXPECT_EQ(sum->skipped, 1u);
  EXPECT_EQ(sum->points[0].reason, "only 256 threads");
  ResultsQuery q;
  q.sweep_id = sum->id;
  EXPECT_EQ((*store)->query(q)->size(), 4u);
}

TEST(Sweep, AFaultingConfigCostsOnlyItsPoint) {
  auto session = open_session();
  ASSERT_TRUE(session);
  auto store = ResultsStore::open((temp_dir("fault") / "r.db").string());
  ASSERT_TRUE(store);
  SweepSpec s = copy_sweep("1,2,4", "128");
  s.runner = [](const PreparedKernel& k, int) {
    if (k.instance.config.integer("vec") == 2)
      return failed_record("copy", k.instance.problem.map(), k.instance.config.map(),
                           make_error(ErrorCode::fault, "an illegal memory access was encountered"));
    return fake_run(k);
  };
  auto sum = run_sweep(*session, store->get(), s);
  ASSERT_TRUE(sum);
  EXPECT_EQ(sum->ran, 3u);
  EXPECT_EQ(sum->passed, 2u);
  EXPECT_EQ(sum->points[1].status, PointStatus::fault);
  EXPECT_NE(sum->points[1].reason.find("illegal memory access"), std::string::npos);
  ResultsQuery q;
  q.sweep_id = sum->id;
  auto rows = (*store)->query(q);
  ASSERT_EQ(rows->size(), 3u);
  EXPECT_EQ((*rows)[1].status, "fault");
}

TEST(Sweep, InterruptStopsAfterTheCurrentRun) {
  auto session = open_session();
  ASSERT_TRUE(session);
  auto store = ResultsStore::open((temp_dir("interrupt") / "r.db").string());
  ASSERT_TRUE(store);
  std::atomic<bool> stop{false};
  int runs = 0;
  SweepSpec s = copy_sweep("1,2,4", "128,256");
  s.runner = [&](const PreparedKernel& k, int) {
    if (++runs == 2) stop = true;  // Ctrl-C arrives during the second run
    return fake_run(k);
  };
  auto sum = run_sweep(*session, store->get(), s, {}, &stop);
  ASSERT_TRUE(sum);
  EXPECT_TRUE(sum->interrupted);
  EXPECT_EQ(runs, 2);
  EXPECT_EQ(sum->ran, 2u);
  ResultsQuery q;
  q.sweep_id = sum->id;
  EXPECT_EQ((*store)->query(q)->size(), 2u);  // the run in flight finished and was stored
  stop = false;
  auto rest = run_sweep(*session, store->get(), s, {}, &stop);
  ASSERT_TRUE(rest);
  EXPECT_EQ(rest->resumed, 2u);
  EXPECT_EQ(rest->ran, 4u);
}

// A sweep process killed with SIGKILL mid-way keeps every run it finished; a rerun does only the rest.
TEST(Sweep, KillNineKeepsFinishedRunsAndRerunResumes) {
  const std::string db = (temp_dir("kill9") / "r.db").string();
  const SweepSpec spec = copy_sweep("1,2,4", "64,128,256,512");  // 12 valid points
  {
    auto warm = open_session();  // compile once here, so the child's runs are what takes the time
    ASSERT_TRUE(warm);
    SweepSpec compile_only = spec;
    ASSERT_TRUE(run_sweep(*warm, nullptr, compile_only));
  }
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(fds[0]);
    auto session = open_session();
    auto store = ResultsStore::open(db);
    if (!session || !store) _exit(2);
    SweepSpec slow = spec;
    slow.runner = [](const PreparedKernel& k, int) {
      std::this_thread::sleep_for(100ms);
      return fake_run(k);
    };
    (void)run_sweep(*session, store->get(), slow, [&](const SweepPoint&, const SweepProgress&) {
      char c = 'p';
      (void)!write(fds[1], &c, 1);
    });
    _exit(0);
  }
  close(fds[1]);
  int reported = 0;
  char c;
  while (reported < 4 && read(fds[0], &c, 1) == 1) ++reported;
  kill(child, SIGKILL);
  int status = 0;
  waitpid(child, &status, 0);
  close(fds[0]);
  ASSERT_EQ(reported, 4);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "the child finished before it was killed";

  auto store = ResultsStore::open(db);
  ASSERT_TRUE(store) << store.status().message();
  ResultsQuery q;
  q.sweep_id = sweep_id(spec);
  const std::size_t kept = (*store)->query(q)->size();
  EXPECT_GE(kept, 4u);  // each point is stored before it is reported
  EXPECT_LT(kept, 12u);

  auto session = open_session();
  ASSERT_TRUE(session);
  int runs = 0;
  SweepSpec rest = spec;
  rest.runner = [&](const PreparedKernel& k, int) {
    ++runs;
    return fake_run(k);
  };
  auto sum = run_sweep(*session, store->get(), rest);
  ASSERT_TRUE(sum) << sum.status().message();
  EXPECT_EQ(sum->resumed, kept);
  EXPECT_EQ(std::size_t(runs), 12 - kept);
  auto rows = (*store)->query(q);
  ASSERT_EQ(rows->size(), 12u);
  std::set<std::string> keys;
  for (const auto& r : *rows) keys.insert(r.point_key);
  EXPECT_EQ(keys.size(), 12u);  // nothing ran twice
}

// Several NVRTC compiles at once (cold cache) produce exactly what one-at-a-time compiles produce.
TEST(Sweep, ParallelCompilesMatchSerialOnes) {
  const fs::path cold = temp_dir("cold-cache");
  auto session = open_session(cold.string());
  ASSERT_TRUE(session);
  std::map<std::string, std::string> parallel;
  SweepSpec s = copy_sweep("1,2,4", "64,128");
  s.jobs = 4;
  s.runner = [&](const PreparedKernel& k, int) {
    EXPECT_FALSE(k.compiled.from_cache);
    parallel[params_text(k.instance.config.map())] =
        hash128_hex(std::string_view(k.compiled.cubin.data(), k.compiled.cubin.size()));
    return fake_run(k);
  };
  auto sum = run_sweep(*session, nullptr, s);
  ASSERT_TRUE(sum);
  ASSERT_EQ(parallel.size(), 6u);
  Jit serial(session->jit().sources());  // no cache: compiles again
  for (const auto& p : sum->points) {
    auto inst = session->instantiate("copy", p.problem, p.config);
    ASSERT_TRUE(inst);
    JitOptions o;
    o.arch = session->target().limits.arch;
    auto k = serial.compile(compile_request(*inst, o));
    ASSERT_TRUE(k) << k.status().message();
    EXPECT_EQ(hash128_hex(std::string_view(k->cubin.data(), k->cubin.size())), parallel[params_text(inst->config.map())]);
  }
}

// [SECTION] several GPUs

TEST(Sweep, GpusTextIsAllOrDistinctIndicesOfThisMachine) {
  EXPECT_EQ(*parse_gpus("all", 2), (std::vector<int>{0, 1}));
  EXPECT_EQ(*parse_gpus("all", 0), std::vector<int>{});  // no GPU: the sweep compiles only
  EXPECT_EQ(*parse_gpus("1, 0", 2), (std::vector<int>{1, 0}));
  EXPECT_EQ(*parse_gpus("0", 1), std::vector<int>{0});
  auto message = [](const std::string& text, int count) {
    auto r = parse_gpus(text, count, "no driver");
    EXPECT_FALSE(r) << text;
    return r ? std::string() : r.status().message();
  };
  EXPECT_NE(message("7", 2).find("there is no GPU 7: this machine has 2 GPUs (0 to 1)"), std::string::npos);
  EXPECT_NE(message("1", 1).find("this machine has 1 GPU (0)"), std::string::npos);
  EXPECT_NE(message("0", 0).find("this machine has no GPU (no driver)"), std::string::npos);
  EXPECT_NE(message("0,1,0", 2).find("GPU 0 is given twice"), std::string::npos);
  EXPECT_NE(message(" ", 2).find("no GPU given: expected all, or GPU indices like 0,1"), std::string::npos);
  for (const char* bad : {"x", "0,,1", "-1", "1.5", "0;1", "All", "0,"})
    EXPECT_NE(message(bad, 2).find("is not a GPU index: expected all, or GPU indices like 0,1"), std::string::npos)
        << bad;
}

// Every point's outcome by its key, and the best's, as a 1-GPU run and a 2-GPU run should agree on them.
std::map<std::string, std::string> outcomes(const SweepSummary& sum) {
  std::map<std::string, std::string> out;
  for (const auto& p : sum.points) {
    std::string& o = out[sweep_point_key(p.problem, p.config)];
    o = point_status_name(p.status);
    if (p.record) o.append(", ").append(std::to_string(p.record->gbps));
  }
  return out;
}

TEST(Sweep, TwoGpusRunEveryPointOnceAndStoreItWithItsGpu) {
  auto session = open_session();
  ASSERT_TRUE(session);
  const fs::path dir = temp_dir("two_gpus");
  auto one_store = ResultsStore::open((dir / "one.db").string());
  auto two_store = ResultsStore::open((dir / "two.db").string());
  ASSERT_TRUE(one_store && two_store);
  SweepSpec one = copy_sweep("1,2,4,8", "64,128,256,512");  // 16 points, 4 of them invalid (vec=8)
  auto single = run_sweep(*session, one_store->get(), one, {}, nullptr, "gbps");
  ASSERT_TRUE(single) << single.status().message();

  SweepSpec two = one;
  two.gpus = {0, 1};
  std::mutex mutex;
  std::map<std::string, std::vector<int>> ran_on;  // point -> the GPUs that ran it
  std::set<std::thread::id> runner_threads;
  two.runner = [&](const PreparedKernel& k, int gpu) {
    {
      std::lock_guard lock(mutex);
      ran_on[sweep_point_key(k.instance.problem.map(), k.instance.config.map())].push_back(gpu);
      runner_threads.insert(std::this_thread::get_id());
    }
    std::this_thread::sleep_for(10ms);  // long enough that both GPUs get points
    return fake_run(k, gpu);
  };
  const auto caller = std::this_thread::get_id();
  std::size_t reported = 0;
  std::set<std::size_t> reported_points;
  auto sum = run_sweep(*session, two_store->get(), two, [&](const SweepPoint& p, const SweepProgress& pr) {
    EXPECT_EQ(std::this_thread::get_id(), caller) << "callbacks run on the calling thread";
    EXPECT_EQ(pr.done, ++reported);
    EXPECT_EQ(pr.total, 16u);
    EXPECT_TRUE(reported_points.insert(p.index).second) << "point " << p.index << " reported twice";
  }, nullptr, "gbps");
  ASSERT_TRUE(sum) << sum.status().message();
  EXPECT_EQ(reported, 16u);
  EXPECT_EQ(sum->id, single->id);  // the GPUs are not part of the sweep
  EXPECT_EQ(sum->ran, 12u);
  EXPECT_EQ(sum->skipped, 4u);
  EXPECT_FALSE(sum->interrupted);
  EXPECT_EQ(runner_threads.size(), 2u);
  EXPECT_EQ(runner_threads.count(caller), 0u);
  ASSERT_EQ(ran_on.size(), 12u);
  std::map<int, std::size_t> per_gpu;
  for (const auto& [key, gpus] : ran_on) {
    ASSERT_EQ(gpus.size(), 1u) << key << " ran more than once";
    ++per_gpu[gpus[0]];
  }
  ASSERT_EQ(sum->gpus.size(), 2u);
  for (const SweepGpu& g : sum->gpus) {
    EXPECT_GT(g.ran, 0u) << "GPU " << g.index << " ran nothing";
    EXPECT_EQ(g.ran, per_gpu[g.index]);
    EXPECT_EQ(g.passed, g.ran);
    EXPECT_EQ(g.name, "Fake GPU");
    EXPECT_EQ(g.restarts, 0);
  }
  const nlohmann::json j = *sum;
  ASSERT_EQ(j["gpus"].size(), 2u);
  EXPECT_EQ(j["gpus"][0]["index"], 0);
  EXPECT_EQ(j["gpus"][1]["ran"], per_gpu[1]);
  EXPECT_EQ(j["gpus"][1]["best"], *sum->gpus[1].best);

  // The same outcomes and best as on one GPU; each GPU's best is the best of the points it ran.
  EXPECT_EQ(outcomes(*sum), outcomes(*single));
  ASSERT_TRUE(sum->best && single->best);
  EXPECT_EQ(sum->points[*sum->best].config, single->points[*single->best].config);
  for (const SweepGpu& g : sum->gpus) {
    ASSERT_TRUE(g.best);
    const SweepPoint& b = sum->points[*g.best];
    EXPECT_EQ(b.record->gpu, g.index);
    for (const auto& p : sum->points)
      if (p.status == PointStatus::passed && p.record->gpu == g.index) {
        EXPECT_LE(p.record->gbps, b.record->gbps);
      }
  }
  EXPECT_TRUE(*sum->best == *sum->gpus[0].best || *sum->best == *sum->gpus[1].best);

  // Each point stored once, a run with the GPU that ran it, an invalid point with none.
  ResultsQuery q;
  q.sweep_id = sum->id;
  auto rows = (*two_store)->query(q);
  ASSERT_TRUE(rows);
  ASSERT_EQ(rows->size(), 16u);
  std::set<std::string> keys;
  for (const auto& r : *rows) {
    EXPECT_TRUE(keys.insert(r.point_key).second);
    if (r.status == "skipped") {
      EXPECT_EQ(r.gpu, -1);
      continue;
    }
    ASSERT_EQ(ran_on.count(r.point_key), 1u) << r.point_key;
    EXPECT_EQ(r.gpu, ran_on[r.point_key][0]) << r.point_key;
    EXPECT_EQ(r.record["gpu"], r.gpu);
  }
  for (const auto& p : sum->points) {
    const nlohmann::json pj = p;
    if (p.status == PointStatus::passed) {
      EXPECT_EQ(pj["gpu"], ran_on[sweep_point_key(p.problem, p.config)][0]);
    }
  }
}

TEST(Sweep, GpusGivenTwiceOrMissingAreRefusedBeforeAnyPoint) {
  auto session = open_session();
  ASSERT_TRUE(session);
  SweepSpec s = copy_sweep();
  s.gpus = {1, 1};
  auto twice = run_sweep(*session, nullptr, s);
  ASSERT_FALSE(twice);
  EXPECT_NE(twice.status().message().find("GPU 1 is given twice"), std::string::npos) << twice.status().message();
  if (session->has_device()) GTEST_SKIP() << "a GPU is here";
  s.runner = nullptr;  // real GPUs: none here
  s.gpus = {3};
  auto missing = run_sweep(*session, nullptr, s);
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.status().message().find("there is no GPU 3: this machine has no GPU"), std::string::npos)
      << missing.status().message();
}

// A crash and a hang on one GPU restart that GPU's worker (a real `tilelab worker`) only; both GPUs go on.
TEST(Sweep, AFaultOrHangOnOneGpuRestartsOnlyThatGpusWorker) {
  SessionOptions o;
  o.cache_dir = TL_TEST_CACHE_DIR;
  o.worker.executable = test::tilelab_exe();
  auto opened = Session::open(o);
  ASSERT_TRUE(opened) << opened.status().message();
  Session& session = **opened;
  auto store = ResultsStore::open((temp_dir("gpu_fault") / "r.db").string());
  ASSERT_TRUE(store);
  SweepSpec s = copy_sweep("1,2,4", "64,128,256,512");  // 12 valid points
  s.gpus = {0, 1};
  std::mutex mutex;
  std::condition_variable cv;
  int runs_on_1 = 0;
  s.runner = [&](const PreparedKernel& k, int gpu) {
    WorkerClient& worker = session.worker(gpu);
    Result<Message> reply = make_error(ErrorCode::internal, "not called");
    if (gpu == 0) {
      // GPU 0 holds its first point until GPU 1 has crashed, hung and run once more: GPU 1 gets points meanwhile.
      std::unique_lock lock(mutex);
      cv.wait_for(lock, 20s, [&] { return runs_on_1 >= 3; });
      lock.unlock();
      reply = worker.call(make_request("ping"));
    } else {
      int n;
      {
        std::lock_guard lock(mutex);
        n = ++runs_on_1;
      }
      if (n == 1) reply = worker.call(make_request("sim.crash", {{"how", "abort"}}));
      else if (n == 2) reply = worker.call(make_request("sim.sleep", {{"seconds", 30}}), {}, 300ms);
      else reply = worker.call(make_request("ping"));
      cv.notify_all();
    }
    if (!reply) return failed_record("copy", k.instance.problem.map(), k.instance.config.map(), reply.status());
    return fake_run(k, gpu);
  };
  auto sum = run_sweep(session, store->get(), s);
  ASSERT_TRUE(sum) << sum.status().message();
  EXPECT_EQ(sum->ran, 12u);
  EXPECT_EQ(sum->passed, 10u);
  std::map<PointStatus, int> statuses;
  for (const auto& p : sum->points) ++statuses[p.status];
  EXPECT_EQ(statuses[PointStatus::fault], 1);
  EXPECT_EQ(statuses[PointStatus::timeout], 1);
  ASSERT_EQ(sum->gpus.size(), 2u);
  EXPECT_EQ(sum->gpus[0].restarts, 0);
  EXPECT_EQ(sum->gpus[1].restarts, 2);
  EXPECT_GE(sum->gpus[0].ran, 1u);
  EXPECT_GE(sum->gpus[1].ran, 3u);  // it went on after both
  EXPECT_EQ(session.worker(0).starts(), 1);
  EXPECT_EQ(session.worker(1).starts(), 3);
  ResultsQuery q;
  q.sweep_id = sum->id;
  auto rows = (*store)->query(q);
  ASSERT_TRUE(rows);
  EXPECT_EQ(rows->size(), 12u);
  for (const auto& r : *rows)
    if (r.status == "fault" || r.status == "timeout") {
      EXPECT_EQ(r.gpu, 1);
    }
}

TEST(Sweep, InterruptOnSeveralGpusStopsAfterTheRunsInFlight) {
  auto session = open_session();
  ASSERT_TRUE(session);
  auto store = ResultsStore::open((temp_dir("gpu_interrupt") / "r.db").string());
  ASSERT_TRUE(store);
  std::atomic<bool> stop{false};
  std::atomic<int> runs{0};
  SweepSpec s = copy_sweep("1,2,4", "64,128,256,512");
  s.gpus = {0, 1, 2};
  s.runner = [&](const PreparedKernel& k, int gpu) {
    if (++runs == 3) stop = true;  // Ctrl-C during the third run
    std::this_thread::sleep_for(20ms);
    return fake_run(k, gpu);
  };
  auto sum = run_sweep(*session, store->get(), s, {}, &stop);
  ASSERT_TRUE(sum);
  EXPECT_TRUE(sum->interrupted);
  EXPECT_GE(sum->ran, 3u);
  EXPECT_LE(sum->ran, 5u);  // at most the runs in flight on the three GPUs finish
  EXPECT_EQ(sum->ran, std::size_t(runs.load()));
  ResultsQuery q;
  q.sweep_id = sum->id;
  EXPECT_EQ((*store)->query(q)->size(), sum->ran);  // every run that finished is stored
  stop = false;
  auto rest = run_sweep(*session, store->get(), s, {}, &stop);
  ASSERT_TRUE(rest);
  EXPECT_EQ(rest->resumed, sum->ran);
  EXPECT_EQ(rest->ran + rest->resumed, 12u);
}

}  // namespace
}  // namespace tl
