// The results store: round trip of a run, queries, sweeps' points, and clear refusals of files it cannot use.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <sqlite3.h>

#include "runtime/results_store.hpp"

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

}  // namespace
}  // namespace tl
