// The results store: round trip of a run, queries, sweeps' points, and clear refusals of files it cannot use.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <fstream>
#include <set>

#include <sqlite3.h>

#include "runtime/results/results_store.hpp"

namespace tl {
namespace {

namespace fs = std::filesystem;

std::string temp_db(const std::string& name) {
  fs::path dir = fs::temp_directory_path() / ("tilelab-store-" + std::to_string(getpid()));
  fs::create_directories(dir);
  fs::path p = dir / name;
  for (const char* ext : {"", "-wal", "-shm"}) fs::remove(p.string() + ext);
  return p.string();
}

RunRecord sample_record(double median_ms) {
  RunRecord r;
  r.kernel = "gemm.simt";
  r.family = "gemm";
  r.device = "Test GPU";
  r.problem = {{"M", "256"}, {"N", "256"}, {"K", "128"}};
  r.config = {{"block_M", "64"}, {"block_N", "128"}};
  r.flops = 2.0 * 256 * 256 * 128;
  r.time_ms.count = 20;
  r.time_ms.median = median_ms;
  r.time_ms.min = median_ms * 0.9;
  r.time_ms.max = median_ms * 1.2;
  r.tflops = r.flops / (median_ms * 1e-3) * 1e-12;
  r.gbps = 12.5;
  r.efficiency.value = 0.5;
  r.resources.registers = 96;
  r.resources.spill_store_bytes = 8;
  r.resources.spill_load_bytes = 4;
  OutputCheck o;
  o.name = "C";
  o.comparison.passed = true;
  o.comparison.rel_error = 1e-6;
  o.comparison.max_abs_error = 2e-5;
  r.outputs.push_back(o);
  r.verified = true;
  return r;
}

TEST(ResultsStore, RoundTripsARun) {
  const std::string path = temp_db("round.db");
  auto store = ResultsStore::open(path);
  ASSERT_TRUE(store) << store.status().message();
  RunContext ctx;
  ctx.source_hash = "abc";
  ctx.sm_clock_khz = 1980000;
  ctx.mem_clock_khz = 2619000;
  auto id = (*store)->insert(sample_record(0.5), ctx);
  ASSERT_TRUE(id) << id.status().message();

  auto rows = (*store)->query({});
  ASSERT_TRUE(rows) << rows.status().message();
  ASSERT_EQ(rows->size(), 1u);
  const StoredRun& r = rows->front();
  EXPECT_EQ(r.id, *id);
  EXPECT_EQ(r.kernel, "gemm.simt");
  EXPECT_EQ(r.source_hash, "abc");
  EXPECT_EQ(r.device, "Test GPU");
  EXPECT_EQ(r.sm_clock_khz, 1980000);
  EXPECT_EQ(r.config["block_M"], 64);  // integers come back as numbers
  EXPECT_EQ(r.problem["K"], 128);
  EXPECT_DOUBLE_EQ(r.median_ms, 0.5);
  EXPECT_DOUBLE_EQ(r.min_ms, 0.45);
  EXPECT_DOUBLE_EQ(r.max_ms, 0.6);
  EXPECT_NEAR(r.tflops, 2.0 * 256 * 256 * 128 / 0.5e-3 * 1e-12, 1e-12);
  EXPECT_DOUBLE_EQ(r.efficiency, 0.5);
  EXPECT_DOUBLE_EQ(r.rel_error, 1e-6);
  EXPECT_DOUBLE_EQ(r.max_abs_error, 2e-5);
  EXPECT_TRUE(r.passed);
  EXPECT_EQ(r.status, "passed");
  EXPECT_EQ(*r.metric("registers"), 96);
  EXPECT_EQ(*r.metric("spills"), 12);
  EXPECT_EQ(r.record["kernel"], "gemm.simt");
  EXPECT_EQ(r.record["time_ms"]["median"], 0.5);
  EXPECT_EQ(r.time.size(), 20u);  // 2026-11-22T21:57:20Z
  EXPECT_EQ(r.time.back(), 'Z');
}

TEST(ResultsStore, FailuresKeepTheirKindAndMessage) {
  auto store = ResultsStore::open(temp_db("fail.db"));
  ASSERT_TRUE(store) << store.status().message();
  RunRecord fault = failed_record("gemm.simt", {{"M", "64"}}, {{"block_M", "64"}},
                                  make_error(ErrorCode::fault, "an illegal memory access was encountered"));
  ASSERT_TRUE((*store)->insert(fault, {}));
  RunRecord invalid = failed_record("gemm.simt", {{"M", "64"}}, {{"block_M", "7"}},
                                    make_error(ErrorCode::unsupported, "block_M=7 is not a multiple of 16"));
  ASSERT_TRUE((*store)->insert(invalid, {}));
  RunRecord bad = sample_record(1.0);
  bad.verified = false;
  bad.outputs[0].comparison.passed = false;
  ASSERT_TRUE((*store)->insert(bad, {}));
  auto rows = (*store)->query({});
  ASSERT_TRUE(rows);
  ASSERT_EQ(rows->size(), 3u);
  EXPECT_EQ((*rows)[0].status, "fault");
  EXPECT_EQ((*rows)[0].failure_kind, "fault");
  EXPECT_EQ((*rows)[0].failure_message, "an illegal memory access was encountered");
  EXPECT_FALSE((*rows)[0].passed);
  EXPECT_EQ((*rows)[1].status, "skipped");
  EXPECT_EQ((*rows)[2].status, "failed");
}

TEST(ResultsStore, QueriesFilterByKernelSweepSinceAndLimit) {
  auto store = ResultsStore::open(temp_db("query.db"));
  ASSERT_TRUE(store);
  RunContext in_sweep;
  in_sweep.sweep_id = "s1";
  for (int i = 0; i < 3; ++i) {
    in_sweep.point_key = "p" + std::to_string(i);
    ASSERT_TRUE((*store)->insert(sample_record(1 + i), in_sweep));
  }
  RunRecord other = sample_record(2);
  other.kernel = "copy";
  ASSERT_TRUE((*store)->insert(other, {}));

  ResultsQuery q;
  q.kernel = "copy";
  EXPECT_EQ((*store)->query(q)->size(), 1u);
  q = {};
  q.sweep_id = "s1";
  EXPECT_EQ((*store)->query(q)->size(), 3u);
  q = {};
  q.since = "2000-01-01";
  EXPECT_EQ((*store)->query(q)->size(), 4u);
  q.since = "2999-01-01";
  EXPECT_EQ((*store)->query(q)->size(), 0u);
  q.since = "2000-01-01T10:00";
  EXPECT_EQ((*store)->query(q)->size(), 4u);
  q.since = "yesterday";
  auto bad = (*store)->query(q);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.status().message().find("2026-11-22"), std::string::npos) << bad.status().message();
  q = {};
  q.limit = 2;
  auto newest = (*store)->query(q);
  ASSERT_EQ(newest->size(), 2u);
  EXPECT_EQ((*newest)[1].kernel, "copy");  // the newest two, oldest first
  EXPECT_LT((*newest)[0].id, (*newest)[1].id);

  // A point whose run failed for reasons of its own (a worker that would not start) is tried again by a rerun.
  RunRecord lost = failed_record("gemm.simt", {}, {}, make_error(ErrorCode::io, "cannot start the worker"));
  in_sweep.point_key = "p3";
  ASSERT_TRUE((*store)->insert(lost, in_sweep));
  auto points = (*store)->sweep_points("s1");
  ASSERT_TRUE(points);
  EXPECT_EQ(*points, (std::set<std::string>{"p0", "p1", "p2"}));
}

TEST(ResultsStore, BestKeepsTheBestPassedRunOfEachKernelAndProblem) {
  auto store = ResultsStore::open(temp_db("best.db"));
  ASSERT_TRUE(store);
  for (double ms : {2.0, 0.5, 1.0}) ASSERT_TRUE((*store)->insert(sample_record(ms), {}));
  RunRecord failed = sample_record(0.1);  // fastest, but wrong
  failed.verified = false;
  ASSERT_TRUE((*store)->insert(failed, {}));
  RunRecord other = sample_record(3.0);
  other.problem["M"] = "512";
  ASSERT_TRUE((*store)->insert(other, {}));
  ResultsQuery q;
  q.best = "tflops";
  auto best = (*store)->query(q);
  ASSERT_TRUE(best) << best.status().message();
  ASSERT_EQ(best->size(), 2u);
  EXPECT_DOUBLE_EQ((*best)[0].median_ms, 0.5);
  EXPECT_DOUBLE_EQ((*best)[1].median_ms, 3.0);
  q.best = "max_ms";  // lower is better
  auto slowest_max = (*store)->query(q);
  ASSERT_TRUE(slowest_max);
  EXPECT_DOUBLE_EQ((*slowest_max)[0].max_ms, 0.6);
  q.best = "watts";
  auto bad = (*store)->query(q);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.status().message().find("'watts' is not a metric"), std::string::npos);
}

TEST(ResultsStore, BestKeepsRunsOfDifferentGpusApart) {
  auto store = ResultsStore::open(temp_db("best_devices.db"));
  ASSERT_TRUE(store);
  RunRecord a = sample_record(1.0), b = sample_record(0.5);
  a.device = "GPU A";
  b.device = "GPU B";  // the same kernel and problem, faster on another GPU
  ASSERT_TRUE((*store)->insert(a, {}));
  ASSERT_TRUE((*store)->insert(b, {}));
  ResultsQuery q;
  q.best = "tflops";
  auto best = (*store)->query(q);
  ASSERT_TRUE(best);
  ASSERT_EQ(best->size(), 2u);  // one best per device
  EXPECT_EQ((*best)[0].device, "GPU A");
  EXPECT_EQ((*best)[1].device, "GPU B");
}

TEST(ResultsStore, ReopensAndKeepsRowsAndSchemaVersion) {
  const std::string path = temp_db("reopen.db");
  {
    auto store = ResultsStore::open(path);
    ASSERT_TRUE(store);
    ASSERT_TRUE((*store)->insert(sample_record(1), {}));
  }
  auto store = ResultsStore::open(path);
  ASSERT_TRUE(store) << store.status().message();
  EXPECT_EQ((*store)->query({})->size(), 1u);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int(st, 0), ResultsStore::kSchemaVersion);
  sqlite3_finalize(st);
  ASSERT_EQ(sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &st, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)), "wal");
  sqlite3_finalize(st);
  sqlite3_close(db);
}

TEST(ResultsStore, RefusesAFileThatIsNotADatabaseNamingIt) {
  const std::string path = temp_db("garbage.db");
  {
    std::ofstream out(path, std::ios::binary);
    for (int i = 0; i < 200; ++i) out << "this is not an SQLite database, just text ";
  }
  const auto size_before = fs::file_size(path);
  auto store = ResultsStore::open(path);
  ASSERT_FALSE(store);
  const std::string& msg = store.status().message();
  EXPECT_NE(msg.find(path), std::string::npos) << msg;
  EXPECT_NE(msg.find("not a usable SQLite database"), std::string::npos) << msg;
  EXPECT_NE(msg.find("--db"), std::string::npos) << msg;
  EXPECT_EQ(fs::file_size(path), size_before);  // left as it was
}

TEST(ResultsStore, RefusesAnotherProgramsDatabaseAndANewerSchema) {
  const std::string other = temp_db("other.db");
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(other.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "CREATE TABLE photos (id INTEGER)", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  auto s1 = ResultsStore::open(other);
  ASSERT_FALSE(s1);
  EXPECT_NE(s1.status().message().find("another program"), std::string::npos) << s1.status().message();

  const std::string newer = temp_db("newer.db");
  ASSERT_EQ(sqlite3_open(newer.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "PRAGMA user_version = 99", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  auto s2 = ResultsStore::open(newer);
  ASSERT_FALSE(s2);
  EXPECT_NE(s2.status().message().find("schema version 99"), std::string::npos) << s2.status().message();
  EXPECT_NE(s2.status().message().find(newer), std::string::npos) << s2.status().message();
}

TEST(ResultsStore, ComparesTwoRuns) {
  auto store = ResultsStore::open(temp_db("compare.db"));
  ASSERT_TRUE(store);
  RunRecord a = sample_record(2.0), b = sample_record(1.0);
  b.config["block_N"] = "256";
  ASSERT_TRUE((*store)->insert(a, {}));
  ASSERT_TRUE((*store)->insert(b, {}));
  auto rows = (*store)->query({});
  ASSERT_EQ(rows->size(), 2u);
  nlohmann::json c = compare_runs((*rows)[0], (*rows)[1]);
  EXPECT_TRUE(c["same_problem"].get<bool>());
  ASSERT_EQ(c["config"].size(), 1u);
  EXPECT_EQ(c["config"]["block_N"], nlohmann::json({128, 256}));
  EXPECT_DOUBLE_EQ(c["metrics"]["median_ms"]["ratio"].get<double>(), 0.5);
  EXPECT_NEAR(c["metrics"]["tflops"]["ratio"].get<double>(), 2.0, 1e-12);
}

// The row shown for a run that was not stored is the row the store writes (what the GUI compares unstored runs by).
TEST(ResultsStore, StoredRunOfAgreesWithTheStoredRow) {
  const std::string path = temp_db("of.db");
  auto store = ResultsStore::open(path);
  ASSERT_TRUE(store) << store.status().message();
  RunContext ctx;
  ctx.source_hash = "h";
  ctx.sweep_id = "s1";
  ctx.point_key = "M=256|block_M=64";
  const RunRecord rec = sample_record(0.25);
  auto id = (*store)->insert(rec, ctx);
  ASSERT_TRUE(id) << id.status().message();
  auto rows = (*store)->query({});
  ASSERT_TRUE(rows && rows->size() == 1u);
  nlohmann::json stored = rows->front(), made = stored_run_of(rec, ctx);
  EXPECT_EQ(made["id"], 0);
  for (auto* j : {&stored, &made}) {
    j->erase("id");
    j->erase("time");
  }
  EXPECT_EQ(stored, made);
}


// [SECTION] several processes on one store

// Runs `body` in `n` child processes released at the same moment (a pipe as the starting gun); each child exits 0
// when body returns "" and prints what it returned otherwise. Returns the children's complaints.
std::vector<std::string> in_processes(int n, const std::function<std::string(int)>& body) {
  int gun[2], report[2];
  EXPECT_EQ(pipe(gun), 0);
  EXPECT_EQ(pipe(report), 0);
  std::vector<pid_t> children;
  for (int i = 0; i < n; ++i) {
    pid_t pid = fork();
    if (pid == 0) {
      close(gun[1]);
      char c;
      (void)!read(gun[0], &c, 1);  // wait for the gun: everyone starts together
      std::string why = body(i);
      if (!why.empty()) {
        why = "process " + std::to_string(i) + ": " + why + "\n";
        (void)!write(report[1], why.data(), why.size());
      }
      _exit(why.empty() ? 0 : 1);
    }
    children.push_back(pid);
  }
  close(gun[0]);
  close(report[1]);
  close(gun[1]);  // EOF: every child's read returns at once
  std::vector<std::string> complaints;
  for (pid_t pid : children) {
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status)) complaints.push_back("a process died with signal " + std::to_string(WTERMSIG(status)));
  }
  std::string text;
  char buf[4096];
  for (ssize_t got; (got = read(report[0], buf, sizeof buf)) > 0;) text.append(buf, static_cast<std::size_t>(got));
  close(report[0]);
  if (!text.empty()) complaints.push_back(text);
  return complaints;
}

TEST(ResultsStore, SweepsInParallelOnANewStoreWaitForTheLockAndStoreEachPointOnce) {
  // What three identical sweeps started together do: open the same new file, register the sweep, store every point.
  constexpr int kProcesses = 6, kPoints = 40;
  for (int round = 0; round < 3; ++round) {
    const std::string path = temp_db("parallel" + std::to_string(round) + ".db");
    auto complaints = in_processes(kProcesses, [&](int) -> std::string {
      auto store = ResultsStore::open(path);
      if (!store) return store.status().message();
      if (Status s = (*store)->begin_sweep("feedfacefeedface", "gemm.simt", nlohmann::json::array(), nlohmann::json::array());
          !s.ok())
        return s.message();
      for (int p = 0; p < kPoints; ++p) {
        RunContext c;
        c.sweep_id = "feedfacefeedface";
        c.point_key = "M=256|block_M=" + std::to_string(p);
        auto id = (*store)->insert(sample_record(1 + p), c);
        if (!id) return id.status().message();
      }
      return {};
    });
    EXPECT_TRUE(complaints.empty()) << complaints.front();
    auto store = ResultsStore::open(path);
    ASSERT_TRUE(store) << store.status().message();
    auto rows = (*store)->query({});
    ASSERT_TRUE(rows);
    std::set<std::string> keys;
    for (const auto& r : *rows) keys.insert(r.point_key);
    EXPECT_EQ(keys.size(), std::size_t(kPoints));
    EXPECT_EQ(rows->size(), std::size_t(kPoints)) << "a point was stored more than once";
    auto sweeps = (*store)->sweeps();
    ASSERT_TRUE(sweeps);
    ASSERT_EQ(sweeps->size(), 1u);
    EXPECT_EQ((*sweeps)[0].runs, kPoints);
  }
}


// [SECTION] one row per sweep point; schema upgrade; read-only

std::int64_t user_version(const std::string& path) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  std::int64_t v = -1;
  if (sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, nullptr) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
    v = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  sqlite3_close(db);
  return v;
}

void sql(const std::string& path, const char* text) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* msg = nullptr;
  EXPECT_EQ(sqlite3_exec(db, text, nullptr, nullptr, &msg), SQLITE_OK) << (msg ? msg : "");
  sqlite3_free(msg);
  sqlite3_close(db);
}

RunRecord error_record() {
  RunRecord r = sample_record(1);
  r.failure = RunFailure{ErrorCode::internal, "the worker could not start", std::nullopt};
  return r;
}

TEST(ResultsStore, ASweepPointIsOneRowStoringItAgainReplacesIt) {
  auto store = ResultsStore::open(temp_db("point.db"));
  ASSERT_TRUE(store);
  RunContext c;
  c.sweep_id = "0123456789abcdef";
  c.point_key = "M=256|block_M=64";
  auto first = (*store)->insert(sample_record(2), c);
  auto again = (*store)->insert(sample_record(1), c);  // a rerun with --fresh, or the same sweep elsewhere
  ASSERT_TRUE(first && again);
  EXPECT_EQ(*first, *again);
  auto rows = (*store)->query({});
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_DOUBLE_EQ((*rows)[0].median_ms, 1);  // the newer outcome
  // An error (a worker that would not start) never replaces an outcome of the point's own.
  auto failed = (*store)->insert(error_record(), c);
  ASSERT_TRUE(failed);
  EXPECT_EQ(*failed, *first);
  rows = (*store)->query({});
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_EQ((*rows)[0].status, "passed");
  // Runs outside a sweep (bench, Lua) are all kept.
  ASSERT_TRUE((*store)->insert(sample_record(3), {}));
  ASSERT_TRUE((*store)->insert(sample_record(3), {}));
  EXPECT_EQ((*store)->query({})->size(), 3u);
}

TEST(ResultsStore, MergeRefusesAStoreOfAnotherSchema) {
  const std::string old = temp_db("merge_v1.db"), into = temp_db("merge_into.db");
  ASSERT_TRUE(ResultsStore::open(old));
  sql(old, "DROP INDEX runs_sweep_point; ALTER TABLE runs DROP COLUMN timer; PRAGMA user_version = 1;");
  auto store = ResultsStore::open(into);
  ASSERT_TRUE(store);
  auto n = (*store)->merge_from(old);
  ASSERT_FALSE(n);
  EXPECT_EQ(n.status().code(), ErrorCode::unsupported);
  EXPECT_NE(n.status().message().find("schema version 1"), std::string::npos) << n.status().message();
  EXPECT_TRUE((*store)->query({})->empty());
}

TEST(ResultsStore, AVersionOneStoreIsUpgradedKeepingTheNewestOutcomeOfEachPoint) {
  const std::string path = temp_db("v1.db");
  ASSERT_TRUE(ResultsStore::open(path));
  // What version 1 was: no unique index (parallel sweeps doubled points), no timer, no GPU index.
  sql(path, "DROP INDEX runs_sweep_point; ALTER TABLE runs DROP COLUMN timer; ALTER TABLE runs DROP COLUMN gpu; "
           "PRAGMA user_version = 1;");
  {
    auto store = ResultsStore::open_read_only(path);  // reads version 1 as it is
    ASSERT_TRUE(store) << store.status().message();
  }
  const char* row =
      "INSERT INTO runs (time, kernel, source_hash, config, problem, device, sm_clock_khz, mem_clock_khz, passed, "
      "status, resources, failure_kind, failure_message, sweep_id, point_key, record, median_ms) VALUES ('t', 'k', '', "
      "'{}', '{}', '', 0, 0, 1, '%s', '{}', '', '', '%s', '%s', '{}', %d);";
  std::string rows;
  auto add = [&](const char* status, const char* sweep, const char* point, int median) {
    char text[1024];
    std::snprintf(text, sizeof text, row, status, sweep, point, median);
    rows += text;
  };
  add("passed", "s1", "a", 1);
  add("passed", "s1", "a", 2);  // newest of its own: kept
  add("error", "s1", "a", 3);
  add("error", "s1", "b", 4);
  add("error", "s1", "b", 5);  // only errors: the newest kept
  add("passed", "s2", "a", 6);
  add("passed", "", "", 7);  // bench runs are never touched
  add("passed", "", "", 8);
  sql(path, rows.c_str());
  ASSERT_EQ(user_version(path), 1);
  auto store = ResultsStore::open(path);
  ASSERT_TRUE(store) << store.status().message();
  EXPECT_EQ(user_version(path), ResultsStore::kSchemaVersion);
  auto stored = (*store)->query({});
  ASSERT_TRUE(stored);
  std::multiset<int> medians;
  for (const auto& r : *stored) {
    medians.insert(static_cast<int>(r.median_ms));
    EXPECT_EQ(r.timer, "events");
  }
  EXPECT_EQ(medians, (std::multiset<int>{2, 5, 6, 7, 8}));
}

// [SECTION] the timer and gpu columns (schema 3)

// What version 2 was: no timer and no GPU index. Made from a store of this version by dropping both columns.
void downgrade_to_version_two(const std::string& path) {
  sql(path, "ALTER TABLE runs DROP COLUMN timer; ALTER TABLE runs DROP COLUMN gpu; PRAGMA user_version = 2;");
}

RunRecord timed_with(Timer timer, double median_ms) {
  RunRecord r = sample_record(median_ms);
  r.timer = timer;
  return r;
}

TEST(ResultsStore, KeepsTheTimerOfEachRun) {
  auto store = ResultsStore::open(temp_db("timer.db"));
  ASSERT_TRUE(store) << store.status().message();
  ASSERT_TRUE((*store)->insert(timed_with(Timer::events, 1), {}));
  ASSERT_TRUE((*store)->insert(timed_with(Timer::cupti, 2), {}));
  ASSERT_TRUE((*store)->insert(timed_with(Timer::graph, 3), {}));
  auto rows = (*store)->query({});
  ASSERT_TRUE(rows);
  ASSERT_EQ(rows->size(), 3u);
  EXPECT_EQ((*rows)[0].timer, "events");
  EXPECT_EQ((*rows)[1].timer, "cupti");
  EXPECT_EQ((*rows)[2].timer, "graph");
  EXPECT_EQ((*rows)[2].record["timer"], "graph");  // the row's column agrees with its record
  EXPECT_EQ(nlohmann::json((*rows)[1])["timer"], "cupti");
  EXPECT_EQ(stored_run_of(timed_with(Timer::cupti, 1), {}).timer, "cupti");
  EXPECT_EQ(compare_runs((*rows)[0], (*rows)[1])["timer"], (nlohmann::json{"events", "cupti"}));
  // A sweep point stored again takes the new run's timer with its times.
  RunContext c;
  c.sweep_id = "0123456789abcdef";
  c.point_key = "p";
  ASSERT_TRUE((*store)->insert(timed_with(Timer::events, 4), c));
  ASSERT_TRUE((*store)->insert(timed_with(Timer::graph, 5), c));
  ResultsQuery point;
  point.sweep_id = c.sweep_id;
  rows = (*store)->query(point);
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_EQ((*rows)[0].timer, "graph");
}

// A store written before the timer column (version 2): read as it is (its runs timed with events), merged into a
// version-3 store, and upgraded when opened for writing.
void make_version_two(const std::string& path) {
  {
    auto store = ResultsStore::open(path);
    ASSERT_TRUE(store);
    RunContext c;
    c.sweep_id = "0123456789abcdef";
    c.point_key = "p";
    ASSERT_TRUE((*store)->insert(sample_record(7), {}));
    ASSERT_TRUE((*store)->insert(sample_record(8), c));
  }
  downgrade_to_version_two(path);
  ASSERT_EQ(user_version(path), 2);
}

TEST(ResultsStore, AVersionTwoStoreReadsMergesAndUpgradesWithEventsAsItsTimer) {
  const std::string v2 = temp_db("v2.db"), into = temp_db("v3_into.db");
  make_version_two(v2);
  {
    auto reader = ResultsStore::open_read_only(v2);
    ASSERT_TRUE(reader) << reader.status().message();
    ResultsQuery newest;
    newest.limit = 5;  // the form of query that reads through a subquery
    auto rows = (*reader)->query(newest);
    ASSERT_TRUE(rows) << rows.status().message();
    ASSERT_EQ(rows->size(), 2u);
    for (const auto& r : *rows) EXPECT_EQ(r.timer, "events");
  }
  EXPECT_EQ(user_version(v2), 2);  // reading changed nothing
  {
    auto store = ResultsStore::open(into);
    ASSERT_TRUE(store);
    ASSERT_TRUE((*store)->insert(timed_with(Timer::graph, 1), {}));
    auto n = (*store)->merge_from(v2);
    ASSERT_TRUE(n) << n.status().message();
    EXPECT_EQ(n->runs, 2);
    EXPECT_EQ((*store)->merge_from(v2)->runs, 0);  // twice adds nothing
    auto rows = (*store)->query({});
    ASSERT_TRUE(rows);
    std::multiset<std::string> timers;
    for (const auto& r : *rows) timers.insert(r.timer);
    EXPECT_EQ(timers, (std::multiset<std::string>{"graph", "events", "events"}));
  }
  auto upgraded = ResultsStore::open(v2);
  ASSERT_TRUE(upgraded) << upgraded.status().message();
  EXPECT_EQ(user_version(v2), ResultsStore::kSchemaVersion);
  ASSERT_TRUE((*upgraded)->insert(timed_with(Timer::cupti, 9), {}));
  auto rows = (*upgraded)->query({});
  ASSERT_TRUE(rows);
  std::multiset<std::string> timers;
  for (const auto& r : *rows) timers.insert(r.timer);
  EXPECT_EQ(timers, (std::multiset<std::string>{"events", "events", "cupti"}));
}

TEST(ResultsStore, RunsKeepTheirGpuIndexAndAVersionTwoStoreUpgradesWithoutOne) {
  const std::string path = temp_db("v2.db");
  {
    auto store = ResultsStore::open(path);
    ASSERT_TRUE(store);
    RunRecord r = sample_record(1);
    r.gpu = 1;
    ASSERT_TRUE((*store)->insert(r, {}));
    auto rows = (*store)->query({});
    ASSERT_EQ(rows->size(), 1u);
    EXPECT_EQ((*rows)[0].gpu, 1);
    EXPECT_EQ(nlohmann::json((*rows)[0])["gpu"], 1);
  }
  downgrade_to_version_two(path);
  {
    auto old = ResultsStore::open_read_only(path);  // read as it is: no GPU index
    ASSERT_TRUE(old) << old.status().message();
    auto rows = (*old)->query({});
    ASSERT_TRUE(rows) << rows.status().message();
    ASSERT_EQ(rows->size(), 1u);
    EXPECT_EQ((*rows)[0].gpu, -1);
    EXPECT_TRUE(nlohmann::json((*rows)[0])["gpu"].is_null());
  }
  EXPECT_EQ(user_version(path), 2);
  auto store = ResultsStore::open(path);
  ASSERT_TRUE(store) << store.status().message();
  EXPECT_EQ(user_version(path), ResultsStore::kSchemaVersion);
  RunRecord r = sample_record(2);
  r.gpu = 0;
  ASSERT_TRUE((*store)->insert(r, {}));
  auto rows = (*store)->query({});
  ASSERT_EQ(rows->size(), 2u);
  EXPECT_EQ((*rows)[0].gpu, -1);  // stored before the upgrade
  EXPECT_EQ((*rows)[1].gpu, 0);
}

TEST(ResultsStore, MergesAVersionTwoStoreItsRowsWithoutAGpuIndex) {
  const std::string old = temp_db("merge_v2.db"), into = temp_db("merge_v3.db");
  {
    auto store = ResultsStore::open(old);
    ASSERT_TRUE(store);
    RunContext c;
    c.sweep_id = "0123456789abcdef";
    c.point_key = "M=256|block_M=64";
    ASSERT_TRUE((*store)->insert(sample_record(1), c));
    ASSERT_TRUE((*store)->insert(sample_record(2), {}));
  }
  downgrade_to_version_two(old);
  auto store = ResultsStore::open(into);
  ASSERT_TRUE(store);
  auto n = (*store)->merge_from(old);
  ASSERT_TRUE(n) << n.status().message();
  EXPECT_EQ(n->runs, 2);
  EXPECT_EQ(user_version(old), 2);  // the source is only read
  auto rows = (*store)->query({});
  ASSERT_EQ(rows->size(), 2u);
  for (const auto& r : *rows) EXPECT_EQ(r.gpu, -1);
  auto again = (*store)->merge_from(old);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->runs, 0);
}

TEST(ResultsStore, ReadOnlyOpensNeitherCreateNorWrite) {
  const std::string missing = temp_db("sub/typo.db");
  auto none = ResultsStore::open_read_only(missing);
  ASSERT_FALSE(none);
  EXPECT_EQ(none.status().code(), ErrorCode::not_found);
  EXPECT_NE(none.status().message().find("no results store at " + missing), std::string::npos);
  EXPECT_FALSE(fs::exists(fs::path(missing).parent_path()));  // not even its folder

  // A store in a folder of its own, then both made read-only; as root, the read happens as "nobody", for whom the
  // modes hold.
  const fs::path dir = fs::path(temp_db("ro")).parent_path() / "ro_dir";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string path = (dir / "r.db").string();
  {
    auto store = ResultsStore::open(path);
    ASSERT_TRUE(store);
    ASSERT_TRUE((*store)->insert(sample_record(1), {}));
  }
  fs::permissions(path, fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
  fs::permissions(dir, fs::perms::owner_read | fs::perms::owner_exec | fs::perms::group_read | fs::perms::group_exec |
                           fs::perms::others_read | fs::perms::others_exec);
  auto complaints = in_processes(1, [&](int) -> std::string {
    if (geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0)) return "cannot become nobody";
    if (ResultsStore::open(path)) return "a read-write open of a read-only store succeeded: the test cannot tell";
    auto store = ResultsStore::open_read_only(path);
    if (!store) return store.status().message();
    auto rows = (*store)->query({});
    if (!rows) return rows.status().message();
    if (rows->size() != 1) return "read " + std::to_string(rows->size()) + " rows, expected 1";
    auto write = (*store)->insert(sample_record(2), {});
    if (write || write.status().message().find("opened read-only") == std::string::npos)
      return "an insert into a read-only store: " + (write ? std::string("succeeded") : write.status().message());
    return {};
  });
  fs::permissions(dir, fs::perms::owner_all);
  EXPECT_TRUE(complaints.empty()) << complaints.front();
}

}  // namespace
}  // namespace tl
