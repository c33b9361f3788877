// ResultsStore: the SQLite schema, one transaction per insert, queries, sweeps, and clear errors for bad files.
#include "runtime/results/results_store.hpp"

#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <regex>
#include <ctime>
#include <filesystem>
#include <thread>

#include "runtime/core/clock.hpp"
#include "runtime/core/hash.hpp"
#include "runtime/jit/jit.hpp"
#include "runtime/jit/sources.hpp"

namespace tl {
namespace fs = std::filesystem;

std::string default_results_db_path() {
  if (const char* d = std::getenv("TILELAB_DB"); d && *d) return d;
  if (const char* x = std::getenv("XDG_DATA_HOME"); x && *x) return std::string(x) + "/tilelab/results.db";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.local/share/tilelab/results.db";
  return (fs::temp_directory_path() / "tilelab-results.db").string();
}

nlohmann::json typed_params(const std::map<std::string, std::string>& params) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [k, v] : params) {
    const bool integer = !v.empty() && v.size() < 19 && v.find_first_not_of("0123456789", v[0] == '-' ? 1 : 0) == std::string::npos &&
                         v != "-" && !(v.size() > 1 && v[v[0] == '-' ? 1 : 0] == '0');
    if (integer) j[k] = std::stoll(v);
    else j[k] = v;
  }
  return j;
}

std::string run_status(const RunRecord& r) {
  if (r.failure) {
    switch (r.failure->code) {
      case ErrorCode::fault: return "fault";
      case ErrorCode::timeout: return "timeout";
      case ErrorCode::unsupported:
      case ErrorCode::invalid_argument: return "skipped";
      case ErrorCode::compile: return "compile_error";
      case ErrorCode::no_device: return "no_device";
      default: return "error";
    }
  }
  return r.verified ? "passed" : "failed";
}

const std::vector<std::string>& stored_metric_names() {
  static const std::vector<std::string> names = {"median_ms", "min_ms",        "max_ms",    "tflops", "gbps",
                                                 "efficiency", "rel_error", "max_abs_error", "registers", "spills"};
  return names;
}

bool metric_higher_is_better(const std::string& name) {
  return name == "tflops" || name == "gbps" || name == "efficiency";
}

std::optional<double> StoredRun::metric(const std::string& name) const {
  if (name == "median_ms") return median_ms;
  if (name == "min_ms") return min_ms;
  if (name == "max_ms") return max_ms;
  if (name == "tflops") return tflops;
  if (name == "gbps") return gbps;
  if (name == "efficiency") return efficiency;
  if (name == "rel_error") return rel_error;
  if (name == "max_abs_error") return max_abs_error;
  if (name == "registers") return resources.value("registers", -1);
  if (name == "spills") return std::max(0, resources.value("spill_store_bytes", 0)) + std::max(0, resources.value("spill_load_bytes", 0));
  return std::nullopt;
}

void to_json(nlohmann::json& j, const StoredRun& r) {
  j = {{"id", r.id},
       {"time", r.time},
       {"kernel", r.kernel},
       {"source_hash", r.source_hash},
       {"config", r.config},
       {"problem", r.problem},
       {"device", r.device},
       {"gpu", r.gpu >= 0 ? nlohmann::json(r.gpu) : nlohmann::json()},
       {"sm_clock_khz", r.sm_clock_khz},
       {"mem_clock_khz", r.mem_clock_khz},
       {"median_ms", r.median_ms},
       {"min_ms", r.min_ms},
       {"max_ms", r.max_ms},
       {"tflops", r.tflops},
       {"gbps", r.gbps},
       {"efficiency", r.efficiency},
       {"rel_error", r.rel_error},
       {"max_abs_error", r.max_abs_error},
       {"passed", r.passed},
       {"status", r.status},
       {"resources", r.resources},
       {"failure_kind", r.failure_kind},
       {"failure_message", r.failure_message},
       {"sweep_id", r.sweep_id},
       {"point_key", r.point_key},
       {"timer", r.timer},
       {"record", r.record}};
}

// [SECTION] statements

namespace {

// How long a statement waits for another process's lock (a sweep storing, the GUI recording) before it fails.
constexpr std::chrono::milliseconds kBusyWait{30000};

// SQLite's busy handler waits for a lock where it can; where it will not (it returns SQLITE_BUSY at once rather than
// risk a deadlock, or while another process switches the file to WAL) the caller tries again: true after a short
// sleep while `rc` is SQLITE_BUSY and kBusyWait has not passed since `since`.
bool wait_to_retry(int rc, std::chrono::steady_clock::time_point since) {
  if ((rc & 0xff) != SQLITE_BUSY || std::chrono::steady_clock::now() - since > kBusyWait) return false;
  std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return true;
}

// A prepared statement, finalized on scope exit. Binding indices start at 1, like SQLite's.
class Stmt {
 public:
  Stmt(sqlite3* db, const char* sql) { m_rc = sqlite3_prepare_v2(db, sql, -1, &m_stmt, nullptr); }
  ~Stmt() { sqlite3_finalize(m_stmt); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  bool ok() const { return m_rc == SQLITE_OK; }
  Stmt& bind(int i, const std::string& v) {
    sqlite3_bind_text(m_stmt, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Stmt& bind(int i, double v) {
    sqlite3_bind_double(m_stmt, i, v);
    return *this;
  }
  Stmt& bind(int i, std::int64_t v) {
    sqlite3_bind_int64(m_stmt, i, v);
    return *this;
  }
  Stmt& bind_null(int i) {
    sqlite3_bind_null(m_stmt, i);
    return *this;
  }
  bool null(int col) const { return sqlite3_column_type(m_stmt, col) == SQLITE_NULL; }
  // A step that waits out a lock (see wait_to_retry); a statement that already returned rows is not started over.
  int step() {
    const auto since = std::chrono::steady_clock::now();
    int rc;
    while ((rc = sqlite3_step(m_stmt)) != SQLITE_ROW && !m_stepped && wait_to_retry(rc, since)) sqlite3_reset(m_stmt);
    m_stepped = true;
    return rc;
  }
  std::string text(int col) const {
    const unsigned char* t = sqlite3_column_text(m_stmt, col);
    return t ? std::string(reinterpret_cast<const char*>(t), static_cast<std::size_t>(sqlite3_column_bytes(m_stmt, col)))
             : std::string();
  }
  double real(int col) const { return sqlite3_column_double(m_stmt, col); }
  std::int64_t integer(int col) const { return sqlite3_column_int64(m_stmt, col); }

 private:
  sqlite3_stmt* m_stmt = nullptr;
  int m_rc = SQLITE_ERROR;
  bool m_stepped = false;
};

nlohmann::json parse_or_null(const std::string& text) {
  auto j = nlohmann::json::parse(text, nullptr, false);
  return j.is_discarded() ? nlohmann::json() : j;
}

constexpr const char* k_schema = R"sql(
CREATE TABLE IF NOT EXISTS runs (
  id INTEGER PRIMARY KEY,
  time TEXT NOT NULL,
  kernel TEXT NOT NULL,
  source_hash TEXT NOT NULL,
  config TEXT NOT NULL,
  problem TEXT NOT NULL,
  device TEXT NOT NULL,
  sm_clock_khz INTEGER NOT NULL,
  mem_clock_khz INTEGER NOT NULL,
  median_ms REAL, min_ms REAL, max_ms REAL,
  tflops REAL, gbps REAL, efficiency REAL,
  rel_error REAL, max_abs_error REAL,
  passed INTEGER NOT NULL,
  status TEXT NOT NULL,
  resources TEXT NOT NULL,
  failure_kind TEXT NOT NULL,
  failure_message TEXT NOT NULL,
  sweep_id TEXT NOT NULL,
  point_key TEXT NOT NULL,
  record TEXT NOT NULL,
  timer TEXT NOT NULL DEFAULT 'events',
  gpu INTEGER
);
CREATE INDEX IF NOT EXISTS runs_by_kernel ON runs(kernel, time);
CREATE INDEX IF NOT EXISTS runs_by_sweep ON runs(sweep_id, point_key);
CREATE UNIQUE INDEX IF NOT EXISTS runs_sweep_point ON runs(sweep_id, point_key) WHERE sweep_id != '';
CREATE TABLE IF NOT EXISTS sweeps (
  id TEXT PRIMARY KEY,
  kernel TEXT NOT NULL,
  problems TEXT NOT NULL,
  space TEXT NOT NULL,
  created TEXT NOT NULL,
  updated TEXT NOT NULL
);
)sql";

// Version 1 -> 2: one row per sweep point. Stores written before it may hold a point several times (sweeps run in
// parallel); the newest outcome of its own (not "error") stays, else the newest row.
constexpr const char* k_migrate_1_to_2 = R"sql(
DELETE FROM runs WHERE sweep_id != '' AND id NOT IN (
  SELECT coalesce(max(CASE WHEN status != 'error' THEN id END), max(id)) FROM runs WHERE sweep_id != ''
  GROUP BY sweep_id, point_key);
CREATE UNIQUE INDEX IF NOT EXISTS runs_sweep_point ON runs(sweep_id, point_key) WHERE sweep_id != '';
)sql";

// Version 2 -> 3: the timer each run was timed with (bench --timer; runs stored before it were timed with events)
// and the GPU index it ran on (sweep --gpus; none before it).
constexpr const char* k_migrate_2_to_3 =
    "ALTER TABLE runs ADD COLUMN timer TEXT NOT NULL DEFAULT 'events'; ALTER TABLE runs ADD COLUMN gpu INTEGER;";

// A row's columns but its id, in the order insert() binds them.
constexpr const char* k_run_columns =
    "time, kernel, source_hash, config, problem, device, sm_clock_khz, mem_clock_khz, median_ms, min_ms, max_ms, "
    "tflops, gbps, efficiency, rel_error, max_abs_error, passed, status, resources, failure_kind, failure_message, "
    "sweep_id, point_key, record, timer, gpu";
// The same read from a store of schema `version`: a version-2 store has neither column; its runs used events and
// name no GPU.
std::string run_columns_of(std::int64_t version) {
  std::string columns = k_run_columns;
  if (version < 3) columns.replace(columns.rfind("timer, gpu"), 10, "'events' AS timer, NULL AS gpu");
  return columns;
}
// A sweep point stored again takes the new row's columns (insert() and merge_from() add when it may).
constexpr const char* k_point_upsert =
    "ON CONFLICT(sweep_id, point_key) WHERE sweep_id != '' DO UPDATE SET time = excluded.time, kernel = "
    "excluded.kernel, source_hash = excluded.source_hash, config = excluded.config, problem = excluded.problem, "
    "device = excluded.device, sm_clock_khz = excluded.sm_clock_khz, mem_clock_khz = excluded.mem_clock_khz, "
    "median_ms = excluded.median_ms, min_ms = excluded.min_ms, max_ms = excluded.max_ms, tflops = excluded.tflops, "
    "gbps = excluded.gbps, efficiency = excluded.efficiency, rel_error = excluded.rel_error, max_abs_error = "
    "excluded.max_abs_error, passed = excluded.passed, status = excluded.status, resources = excluded.resources, "
    "failure_kind = excluded.failure_kind, failure_message = excluded.failure_message, record = excluded.record, "
    "timer = excluded.timer, gpu = excluded.gpu";

}  // namespace

// [SECTION] opening

Status ResultsStore::error(const std::string& what) const {
  // A store damaged past its first page (garbage written into it, a partial copy) opens and reads, and fails at the
  // statement that meets the damage; a lock held longer than the busy wait fails there too: say what to do.
  const int code = sqlite3_errcode(m_db) & 0xff;
  std::string fix;
  if (code == SQLITE_CORRUPT || code == SQLITE_NOTADB)
    fix = " (the file is damaged: move it away, or pass --db (or $TILELAB_DB) another file; `sqlite3 FILE .recover` "
          "may save its rows)";
  else if (code == SQLITE_BUSY || code == SQLITE_LOCKED)
    fix = " (another process held it for over " + std::to_string(kBusyWait.count() / 1000) +
          " s: wait for it, or pass --db another file)";
  return make_error(ErrorCode::io, "results store " + m_path + ": " + what + ": " + sqlite3_errmsg(m_db) + fix);
}

Status ResultsStore::exec(const char* sql) const {
  char* msg = nullptr;
  // Waits out the locks SQLite's busy handler does not (PRAGMA journal_mode = WAL on a store another process is
  // creating returns SQLITE_BUSY at once). Every statement run here may run twice: they are idempotent.
  const auto since = std::chrono::steady_clock::now();
  int rc;
  while (wait_to_retry(rc = sqlite3_exec(m_db, sql, nullptr, nullptr, &msg), since)) {
    sqlite3_free(msg);
    msg = nullptr;
  }
  if (rc == SQLITE_OK) return Status::success();
  std::string text = msg ? msg : sqlite3_errstr(rc);
  sqlite3_free(msg);
  if (rc == SQLITE_NOTADB || rc == SQLITE_CORRUPT)
    return make_error(ErrorCode::parse, "results store " + m_path + " is not a usable SQLite database (" + text +
                                            "): move it away, or pass --db (or $TILELAB_DB) another file");
  if ((rc & 0xff) == SQLITE_BUSY)
    return make_error(ErrorCode::io, "results store " + m_path + ": still locked by another process after " +
                                         std::to_string(kBusyWait.count() / 1000) + " s (" + text + ")");
  return make_error(ErrorCode::io, "results store " + m_path + ": " + text);
}

namespace {

// file:PATH?immutable=1 for sqlite3_open_v2 with SQLITE_OPEN_URI: the characters a URI gives a meaning escaped.
std::string immutable_uri(const std::string& path) {
  std::string uri = "file:";
  for (char c : path) {
    if (c == '%' || c == '?' || c == '#') {
      char hex[4];
      std::snprintf(hex, sizeof hex, "%%%02X", static_cast<unsigned char>(c));
      uri += hex;
    } else {
      uri += c;
    }
  }
  return uri + "?immutable=1";
}

}  // namespace

Result<std::unique_ptr<ResultsStore>> ResultsStore::connect(const std::string& path, bool read_only) {
  std::unique_ptr<ResultsStore> s(new ResultsStore());
  s->m_path = path;
  s->m_read_only = read_only;
  std::error_code ec;
  if (fs::is_directory(path, ec)) return make_error(ErrorCode::io, "results store " + path + " is a directory, not a file");
  const int flags = (read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) | SQLITE_OPEN_FULLMUTEX;
  int rc = sqlite3_open_v2(path.c_str(), &s->m_db, flags, nullptr);
  if (rc != SQLITE_OK) return s->error("cannot open");
  sqlite3_busy_timeout(s->m_db, static_cast<int>(kBusyWait.count()));  // another tilelab may be writing

  // The first read tells a database from any other file; nothing is written before that.
  auto first_read = [&]() -> Status {
    Stmt st(s->m_db, "PRAGMA user_version");
    if (!st.ok()) TL_RETURN_IF_ERROR(s->exec("PRAGMA user_version"));  // turns the failure into its message
    if (st.step() == SQLITE_ROW) s->m_version = st.integer(0);
    Stmt t(s->m_db, "SELECT count(*) FROM sqlite_master WHERE type = 'table'");
    if (!t.ok()) TL_RETURN_IF_ERROR(s->exec("SELECT 1 FROM sqlite_master"));
    if (t.step() == SQLITE_ROW) s->m_tables = t.integer(0);
    return Status::success();
  };
  Status read = first_read();
  const int why = sqlite3_errcode(s->m_db) & 0xff;
  if (!read.ok() && read_only && (why == SQLITE_CANTOPEN || why == SQLITE_READONLY)) {
    // A WAL store in a folder this user cannot write has no -shm to share (SQLite cannot create one): nobody can be
    // writing it either, so it is read as an immutable file.
    sqlite3_close(s->m_db);
    s->m_db = nullptr;
    rc = sqlite3_open_v2(immutable_uri(path).c_str(), &s->m_db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_FULLMUTEX,
                         nullptr);
    if (rc != SQLITE_OK) return s->error("cannot open");
    read = first_read();
  }
  TL_RETURN_IF_ERROR(read);
  if (s->m_version > kSchemaVersion)
    return make_error(ErrorCode::unsupported, "results store " + path + " has schema version " +
                                                  std::to_string(s->m_version) + "; this TileLab reads versions up to " +
                                                  std::to_string(kSchemaVersion) +
                                                  " (a newer TileLab wrote it): use that one, or pass --db another file");
  if (s->m_version == 0 && s->m_tables > 0)
    return make_error(ErrorCode::parse, "results store " + path + " is an SQLite database of another program (it has "
                                        "tables but no TileLab schema version): pass --db another file");
  return s;
}

Result<std::unique_ptr<ResultsStore>> ResultsStore::open(const std::string& given) {
  const std::string path = given.empty() ? default_results_db_path() : given;
  fs::path p(path);
  std::error_code ec;
  if (p.has_parent_path()) fs::create_directories(p.parent_path(), ec);
  if (ec) return make_error(ErrorCode::io, "cannot create the directory of the results store " + path + ": " + ec.message());
  auto opened = connect(path, false);
  if (!opened) return opened.status();
  ResultsStore& s = **opened;
  bool wal = false;
  {
    Stmt mode(s.m_db, "PRAGMA journal_mode");  // finalized before the mode changes
    wal = mode.ok() && mode.step() == SQLITE_ROW && mode.text(0) == "wal";
  }
  if (!wal) TL_RETURN_IF_ERROR(s.exec("PRAGMA journal_mode = WAL"));
  TL_RETURN_IF_ERROR(s.exec("PRAGMA synchronous = NORMAL"));  // WAL + NORMAL: a killed process loses nothing committed
  if (s.m_version == kSchemaVersion) return opened;
  // Created or upgraded in one write transaction; its version read again inside, where no other process can be
  // doing the same.
  TL_RETURN_IF_ERROR(s.exec("BEGIN IMMEDIATE"));
  Status made = [&]() -> Status {
    Stmt v(s.m_db, "PRAGMA user_version");
    std::int64_t version = v.ok() && v.step() == SQLITE_ROW ? v.integer(0) : 0;
    if (version == 0) TL_RETURN_IF_ERROR(s.exec(k_schema));
    if (version == 1) TL_RETURN_IF_ERROR(s.exec(k_migrate_1_to_2));
    if (version == 1 || version == 2) TL_RETURN_IF_ERROR(s.exec(k_migrate_2_to_3));
    if (version < kSchemaVersion)
      TL_RETURN_IF_ERROR(s.exec(("PRAGMA user_version = " + std::to_string(kSchemaVersion)).c_str()));
    return Status::success();
  }();
  if (!made.ok()) {
    (void)s.exec("ROLLBACK");
    return made;
  }
  TL_RETURN_IF_ERROR(s.exec("COMMIT"));
  s.m_version = kSchemaVersion;
  return opened;
}

Result<std::unique_ptr<ResultsStore>> ResultsStore::open_read_only(const std::string& given) {
  const std::string path = given.empty() ? default_results_db_path() : given;
  std::error_code ec;
  if (!fs::exists(path, ec))
    return make_error(ErrorCode::not_found, "no results store at " + path +
                                                " (nothing was stored there: `tilelab bench`, `tilelab sweep` and "
                                                "tl.sweep store their runs; --db or $TILELAB_DB names another store)");
  auto opened = connect(path, true);
  if (!opened) return opened.status();
  if ((*opened)->m_version == 0)
    return make_error(ErrorCode::parse, "results store " + path + " holds no TileLab tables (an empty database): "
                                        "pass --db the store `tilelab bench` or `tilelab sweep` wrote");
  return opened;
}

ResultsStore::~ResultsStore() { sqlite3_close(m_db); }

// [SECTION] runs

StoredRun stored_run_of(const RunRecord& r, const RunContext& c) {
  StoredRun s;
  const bool checked = !r.outputs.empty();
  s.time = utc_now();
  s.kernel = r.kernel;
  s.source_hash = c.source_hash;
  s.config = typed_params(r.config);
  s.problem = typed_params(r.problem);
  s.device = r.device;
  s.gpu = r.gpu;
  s.sm_clock_khz = c.sm_clock_khz;
  s.mem_clock_khz = c.mem_clock_khz;
  s.median_ms = r.time_ms.median;
  s.min_ms = r.time_ms.min;
  s.max_ms = r.time_ms.max;
  s.tflops = r.tflops;
  s.gbps = r.gbps;
  s.efficiency = r.efficiency.value;
  s.rel_error = checked ? r.rel_error() : 0.0;
  s.max_abs_error = checked ? r.max_abs_error() : 0.0;
  s.passed = r.passed();
  s.status = c.status.empty() ? run_status(r) : c.status;
  s.resources = r.resources;
  s.failure_kind = r.failure ? std::string(error_code_name(r.failure->code)) : std::string();
  s.failure_message = r.failure ? r.failure->message : std::string();
  s.sweep_id = c.sweep_id;
  s.point_key = c.point_key;
  s.record = r;
  s.timer = timer_name(r.timer);
  return s;
}

Result<std::int64_t> ResultsStore::insert(const RunRecord& r, const RunContext& c) {
  if (m_read_only) return make_error(ErrorCode::invalid_argument, "results store " + m_path + " was opened read-only");
  // A sweep point has one row (the unique index runs_sweep_point): storing it again (a rerun with --fresh, a retried
  // error, the same sweep running in another process) replaces the row, except that an "error" never replaces an
  // outcome of the point's own.
  static const std::string sql = std::string("INSERT INTO runs (") + k_run_columns +
                                 ") VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?) " + k_point_upsert +
                                 " WHERE excluded.status != 'error' OR runs.status = 'error' RETURNING id";
  Stmt st(m_db, sql.c_str());
  if (!st.ok()) return error("cannot prepare the insert");
  const StoredRun s = stored_run_of(r, c);
  st.bind(1, s.time)
      .bind(2, s.kernel)
      .bind(3, s.source_hash)
      .bind(4, s.config.dump())
      .bind(5, s.problem.dump())
      .bind(6, s.device)
      .bind(7, std::int64_t(s.sm_clock_khz))
      .bind(8, std::int64_t(s.mem_clock_khz))
      .bind(9, s.median_ms)
      .bind(10, s.min_ms)
      .bind(11, s.max_ms)
      .bind(12, s.tflops)
      .bind(13, s.gbps)
      .bind(14, s.efficiency)
      .bind(15, s.rel_error)
      .bind(16, s.max_abs_error)
      .bind(17, std::int64_t(s.passed ? 1 : 0))
      .bind(18, s.status)
      .bind(19, s.resources.dump())
      .bind(20, s.failure_kind)
      .bind(21, s.failure_message)
      .bind(22, s.sweep_id)
      .bind(23, s.point_key)
      .bind(24, s.record.dump())
      .bind(25, s.timer);
  if (s.gpu >= 0) st.bind(26, std::int64_t(s.gpu));
  else st.bind_null(26);
  // Outside an explicit transaction each statement commits by itself: the row is durable when it is done.
  std::int64_t id = 0;
  int rc = st.step();
  if (rc == SQLITE_ROW) {
    id = st.integer(0);
    rc = st.step();
  }
  if (rc != SQLITE_DONE) return error("cannot store the run of " + r.kernel);
  if (id != 0) return id;
  // The point kept its earlier outcome (this one was an error): that row is the point's.
  Stmt kept(m_db, "SELECT id FROM runs WHERE sweep_id = ? AND point_key = ?");
  if (!kept.ok()) return error("cannot read back the run of " + r.kernel);
  kept.bind(1, s.sweep_id).bind(2, s.point_key);
  if (kept.step() != SQLITE_ROW) return error("cannot read back the run of " + r.kernel);
  return kept.integer(0);
}

Result<std::vector<StoredRun>> ResultsStore::query(const ResultsQuery& q) const {
  // Times are stored as ISO 8601 UTC text, so a prefix of that form compares correctly; anything else would not.
  static const std::regex since_form(R"(\d{4}-\d{2}-\d{2}(T\d{2}(:\d{2}(:\d{2})?)?Z?)?)");
  if (!q.since.empty() && !std::regex_match(q.since, since_form))
    return make_error(ErrorCode::invalid_argument, "since '" + q.since + "': expected a UTC date or time like "
                                                   "2026-11-22, 2026-11-22T21:00 or 2026-11-22T21:00:00Z");
  std::string sql = "SELECT id, " + run_columns_of(m_version) + " FROM runs WHERE 1";
  std::vector<std::string> binds;
  if (!q.kernel.empty()) sql += " AND kernel = ?", binds.push_back(q.kernel);
  if (!q.since.empty()) sql += " AND time >= ?", binds.push_back(q.since);
  if (!q.sweep_id.empty()) sql += " AND sweep_id = ?", binds.push_back(q.sweep_id);
  if (!q.ids.empty()) {
    sql += " AND id IN (";
    for (std::size_t i = 0; i < q.ids.size(); ++i) sql += i ? ",?" : "?";
    sql += ")";
  }
  if (q.limit > 0) sql = "SELECT * FROM (" + sql + " ORDER BY id DESC LIMIT " + std::to_string(q.limit) + ")";
  sql += " ORDER BY id";
  Stmt st(m_db, sql.c_str());
  if (!st.ok()) return error("cannot query the runs");
  int n = 1;
  for (const auto& b : binds) st.bind(n++, b);
  for (auto id : q.ids) st.bind(n++, id);
  std::vector<StoredRun> rows;
  int rc;
  while ((rc = st.step()) == SQLITE_ROW) {
    StoredRun r;
    r.id = st.integer(0);
    r.time = st.text(1);
    r.kernel = st.text(2);
    r.source_hash = st.text(3);
    r.config = parse_or_null(st.text(4));
    r.problem = parse_or_null(st.text(5));
    r.device = st.text(6);
    r.sm_clock_khz = static_cast<int>(st.integer(7));
    r.mem_clock_khz = static_cast<int>(st.integer(8));
    r.median_ms = st.real(9);
    r.min_ms = st.real(10);
    r.max_ms = st.real(11);
    r.tflops = st.real(12);
    r.gbps = st.real(13);
    r.efficiency = st.real(14);
    r.rel_error = st.real(15);
    r.max_abs_error = st.real(16);
    r.passed = st.integer(17) != 0;
    r.status = st.text(18);
    r.resources = parse_or_null(st.text(19));
    r.failure_kind = st.text(20);
    r.failure_message = st.text(21);
    r.sweep_id = st.text(22);
    r.point_key = st.text(23);
    r.record = parse_or_null(st.text(24));
    r.timer = st.text(25);
    r.gpu = st.null(26) ? -1 : static_cast<int>(st.integer(26));
    rows.push_back(std::move(r));
  }
  if (rc != SQLITE_DONE) return error("reading the runs failed");
  if (q.best.empty()) return rows;
  if (!StoredRun{}.metric(q.best)) {
    std::string list;
    for (const auto& n : stored_metric_names()) list += (list.empty() ? "" : ", ") + n;
    return make_error(ErrorCode::invalid_argument, "'" + q.best + "' is not a metric (one of " + list + ")");
  }
  const bool higher = metric_higher_is_better(q.best);
  // Runs of different GPUs stay apart: the best of each kernel and problem on each device.
  std::map<std::string, std::size_t> best;  // kernel|device|problem -> index into rows
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (!rows[i].passed) continue;
    auto [it, fresh] = best.emplace(rows[i].kernel + "|" + rows[i].device + "|" + rows[i].problem.dump(), i);
    const double v = *rows[i].metric(q.best), b = *rows[it->second].metric(q.best);
    if (!fresh && (higher ? v > b : v < b)) it->second = i;
  }
  std::vector<StoredRun> kept;
  for (const auto& [key, i] : best) kept.push_back(std::move(rows[i]));
  std::sort(kept.begin(), kept.end(), [](const StoredRun& a, const StoredRun& b) { return a.id < b.id; });
  return kept;
}

// [SECTION] sweeps

Status ResultsStore::begin_sweep(const std::string& id, const std::string& kernel, const nlohmann::json& problems,
                                 const nlohmann::json& space) {
  if (m_read_only) return make_error(ErrorCode::invalid_argument, "results store " + m_path + " was opened read-only");
  Stmt st(m_db,
          "INSERT INTO sweeps (id, kernel, problems, space, created, updated) VALUES (?,?,?,?,?,?) "
          "ON CONFLICT(id) DO UPDATE SET updated = excluded.updated");
  if (!st.ok()) return error("cannot prepare the sweep insert");
  const std::string now = utc_now();
  st.bind(1, id).bind(2, kernel).bind(3, problems.dump()).bind(4, space.dump()).bind(5, now).bind(6, now);
  if (st.step() != SQLITE_DONE) return error("cannot record sweep " + id);
  return Status::success();
}

Result<MergeCounts> ResultsStore::merge_from(const std::string& path) {
  if (m_read_only) return make_error(ErrorCode::invalid_argument, "results store " + m_path + " was opened read-only");
  std::int64_t version = 0;
  {
    auto src = open_read_only(path);  // not found, not a database, another program's, a newer schema: its message
    if (!src) return src.status();
    version = (*src)->m_version;
    // Version 1 could hold a sweep point several times; version 2 lacks only the timer (its runs used
    // events) and the GPU index.
    if (version < 2)
      return make_error(ErrorCode::unsupported,
                        "results store " + path + " has schema version " + std::to_string(version) + ", " + m_path +
                            " version " + std::to_string(kSchemaVersion) +
                            ": stores older than version 2 are not merged (open it once with this TileLab, e.g. "
                            "`tilelab bench ... --db " + path + "`, to upgrade it)");
  }
  std::error_code ec;
  if (fs::equivalent(path, m_path, ec))
    return make_error(ErrorCode::invalid_argument, "cannot merge results store " + path + " into itself");
  const std::string source = run_columns_of(version);
  const std::string points =
      std::string("INSERT INTO main.runs (") + k_run_columns + ") SELECT " + source +
      " FROM merge_src.runs s WHERE s.sweep_id != '' ORDER BY s.id " + k_point_upsert +
      " WHERE excluded.time > runs.time AND (excluded.status != 'error' OR runs.status = 'error') "
      "OR runs.status = 'error' AND excluded.status != 'error'";
  const std::string others = std::string("INSERT INTO main.runs (") + k_run_columns + ") SELECT " + source +
                             " FROM merge_src.runs s WHERE s.sweep_id = '' AND NOT EXISTS (SELECT 1 FROM main.runs r "
                             "WHERE r.sweep_id = '' AND r.time = s.time AND r.kernel = s.kernel AND r.record = "
                             "s.record) ORDER BY s.id";
  static const char* sweeps =
      "INSERT INTO main.sweeps (id, kernel, problems, space, created, updated) SELECT id, kernel, problems, space, "
      "created, updated FROM merge_src.sweeps WHERE true ON CONFLICT(id) DO UPDATE SET created = "
      "min(created, excluded.created), updated = max(updated, excluded.updated)";
  {
    Stmt attach(m_db, "ATTACH DATABASE ? AS merge_src");
    if (!attach.ok()) return error("cannot prepare attaching " + path);
    attach.bind(1, path);
    if (attach.step() != SQLITE_DONE) return error("cannot attach " + path);
  }
  MergeCounts n;
  TL_RETURN_IF_ERROR(exec("BEGIN IMMEDIATE"));
  Status merged = [&]() -> Status {
    for (const std::string* sql : {&points, &others}) {
      TL_RETURN_IF_ERROR(exec(sql->c_str()));
      n.runs += sqlite3_changes(m_db);
    }
    auto count_sweeps = [&]() -> std::int64_t {
      Stmt st(m_db, "SELECT count(*) FROM main.sweeps");
      return st.ok() && st.step() == SQLITE_ROW ? st.integer(0) : 0;
    };
    const std::int64_t before = count_sweeps();
    TL_RETURN_IF_ERROR(exec(sweeps));
    n.sweeps = count_sweeps() - before;
    return Status::success();
  }();
  if (merged.ok()) merged = exec("COMMIT");
  if (!merged.ok()) (void)exec("ROLLBACK");
  (void)exec("DETACH DATABASE merge_src");
  if (!merged.ok()) return merged.with_context("merging " + path + " into " + m_path);
  return n;
}

Result<std::set<std::string>> ResultsStore::sweep_points(const std::string& id) const {
  // "error" rows (a worker that could not start, a lost connection) are worth another try; every other outcome,
  // compile errors, faults and timeouts included, is the config's own.
  Stmt st(m_db, "SELECT point_key FROM runs WHERE sweep_id = ? AND status != 'error'");
  if (!st.ok()) return error("cannot query sweep " + id);
  st.bind(1, id);
  std::set<std::string> points;
  int rc;
  while ((rc = st.step()) == SQLITE_ROW) points.insert(st.text(0));
  if (rc != SQLITE_DONE) return error("reading sweep " + id + " failed");
  return points;
}

Result<std::vector<SweepRow>> ResultsStore::sweeps() const {
  Stmt st(m_db,
          "SELECT s.id, s.kernel, s.problems, s.space, s.created, s.updated, "
          "(SELECT count(*) FROM runs r WHERE r.sweep_id = s.id) FROM sweeps s ORDER BY s.updated");
  if (!st.ok()) return error("cannot query the sweeps");
  std::vector<SweepRow> rows;
  int rc;
  while ((rc = st.step()) == SQLITE_ROW) {
    SweepRow r;
    r.id = st.text(0);
    r.kernel = st.text(1);
    r.problems = parse_or_null(st.text(2));
    r.space = parse_or_null(st.text(3));
    r.created = st.text(4);
    r.updated = st.text(5);
    r.runs = st.integer(6);
    rows.push_back(std::move(r));
  }
  if (rc != SQLITE_DONE) return error("reading the sweeps failed");
  return rows;
}

nlohmann::json compare_runs(const StoredRun& a, const StoredRun& b) {
  auto differences = [](const nlohmann::json& x, const nlohmann::json& y) {
    nlohmann::json d = nlohmann::json::object();
    for (const auto& [k, v] : x.items())
      if (!y.contains(k) || y[k] != v) d[k] = {v, y.contains(k) ? y[k] : nlohmann::json()};
    for (const auto& [k, v] : y.items())
      if (!x.contains(k)) d[k] = {nlohmann::json(), v};
    return d;
  };
  nlohmann::json metrics = nlohmann::json::object();
  for (const auto& name : stored_metric_names()) {
    const double va = *a.metric(name), vb = *b.metric(name);
    metrics[name] = {{"a", va}, {"b", vb}, {"ratio", va != 0 ? vb / va : 0.0}};
  }
  return {{"a", a.id},
          {"b", b.id},
          {"kernel", {a.kernel, b.kernel}},
          {"status", {a.status, b.status}},
          {"device", {a.device, b.device}},
          {"timer", {a.timer, b.timer}},
          {"same_problem", a.problem == b.problem},
          {"config", differences(a.config, b.config)},
          {"problem", differences(a.problem, b.problem)},
          {"metrics", metrics}};
}

Result<std::string> kernel_source_hash(const Jit& jit, const std::string& source) {
  auto files = include_closure(jit.sources(), source);
  if (!files) return files.status();
  Hasher128 h;
  for (const auto& [name, text] : *files) h.field(name).field(text);
  return h.hex();
}

}  // namespace tl
