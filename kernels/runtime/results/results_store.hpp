// The results store: every run (bench, sweep, Lua) as a row of an SQLite database, queried by `tilelab results`.
#pragma once

// One file (default ~/.local/share/tilelab/results.db), WAL mode, schema versioned with PRAGMA user_version.
// Each insert is its own transaction, so a process killed mid-sweep (kill -9) keeps every run finished before
// it; sweeps find what they already stored by their key and point and go on from there. A sweep point is one row
// (a unique index on sweep id and point key; storing it again replaces it), so sweeps run in parallel never double
// a point. Several processes share a store: each waits for another's lock (up to 30 s) rather than fail. A file
// that is not a database (or another program's database) is refused with a message naming it; nothing is written
// to it. Readers (`tilelab results`, `roofline --from`, the GUI's history) open it read-only: a read-only file
// works, and a path with no store is an error rather than a new empty store.

#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/core/status.hpp"
#include "runtime/results/run_record.hpp"

struct sqlite3;

namespace tl {

// $TILELAB_DB, else $XDG_DATA_HOME/tilelab/results.db, else ~/.local/share/tilelab/results.db.
std::string default_results_db_path();

// What a run record does not carry but its row does.
struct RunContext {
  std::string source_hash;   // of the kernel's source and every file it includes (kernel_source_hash)
  int sm_clock_khz = 0;      // the device's max clocks at the time
  int mem_clock_khz = 0;
  std::string sweep_id;      // "" outside a sweep
  std::string point_key;     // a sweep's point (problem|config as given), what a rerun skips
  std::string status;        // "" -> run_status(record); the sweep says "skipped" for invalid configs
};

// Parameters as JSON with integer values as numbers ({"block_M": 128, "dtype": "bf16"}): how rows and sweep points
// carry configs and problems, so scripts can compute with them.
nlohmann::json typed_params(const std::map<std::string, std::string>& params);

// "passed", "failed" (verification), "fault", "timeout", "skipped" (invalid config), "compile_error",
// "no_device" or "error".
std::string run_status(const RunRecord& record);

struct StoredRun {
  std::int64_t id = 0;
  std::string time;  // ISO 8601 UTC, "2026-11-22T21:57:20Z"
  std::string kernel, source_hash, device, sweep_id, point_key, status;
  int gpu = -1;  // the index of the GPU it ran on; -1: none (never ran) or not recorded (stores before version 3)
  nlohmann::json config = nlohmann::json::object(), problem = nlohmann::json::object();
  int sm_clock_khz = 0, mem_clock_khz = 0;
  double median_ms = 0, min_ms = 0, max_ms = 0, tflops = 0, gbps = 0, efficiency = 0;
  double rel_error = 0, max_abs_error = 0;
  bool passed = false;
  nlohmann::json resources = nlohmann::json::object();
  std::string failure_kind, failure_message;
  std::string timer = "events";  // how it was timed (events, cupti, graph: TimingOptions::timer)
  nlohmann::json record;  // the full RunRecord JSON

  // A metric by name: median_ms, min_ms, max_ms, tflops, gbps, efficiency, rel_error, max_abs_error,
  // registers, spills; nullopt for an unknown name.
  std::optional<double> metric(const std::string& name) const;
};
void to_json(nlohmann::json& j, const StoredRun& r);
// The names metric() knows, for messages.
const std::vector<std::string>& stored_metric_names();
// Whether a larger value of the metric is better (tflops, gbps, efficiency) or a smaller one (times, errors).
bool metric_higher_is_better(const std::string& name);

struct ResultsQuery {
  std::string kernel;    // exact name; "" = all
  std::string since;     // ISO date or date-time (UTC); rows at or after it
  std::string sweep_id;  // "" = all
  std::vector<std::int64_t> ids;  // only these rows (compare)
  std::int64_t limit = 0;         // 0 = no limit (the newest `limit` rows, still in time order)
  std::string best;               // a metric: only the best passed row of each kernel, device and problem (of those above)
};

struct SweepRow {
  std::string id, kernel, created, updated;
  nlohmann::json problems, space;
  std::int64_t runs = 0;  // rows stored under it
};

// What merge_from did: rows added to this store or replacing one of its sweep points, and sweeps new to it.
struct MergeCounts {
  std::int64_t runs = 0, sweeps = 0;
};

class ResultsStore {
 public:
  // Opens `path` ("" = default_results_db_path()), creating the file and its directory when missing, and checks,
  // creates or upgrades the schema (version 1 stores lose the duplicate rows of a sweep point: the newest outcome
  // stays; version 2 stores get the timer column, 'events' for their runs, and the gpu column, none for them).
  // Errors (io, parse, unsupported) name the file: not a database, another program's database, a newer schema.
  static Result<std::unique_ptr<ResultsStore>> open(const std::string& path);
  // Opens an existing store for reading only (SQLITE_OPEN_READONLY; any older schema reads): nothing is created,
  // upgraded or written. A path with no file is not_found ("no results store at X"); insert and begin_sweep fail.
  static Result<std::unique_ptr<ResultsStore>> open_read_only(const std::string& path);
  ~ResultsStore();
  ResultsStore(const ResultsStore&) = delete;
  ResultsStore& operator=(const ResultsStore&) = delete;

  const std::string& path() const { return m_path; }

  // One row, committed before it returns (a sweep point's row replaced, see above). Returns its id.
  Result<std::int64_t> insert(const RunRecord& record, const RunContext& context);
  Result<std::vector<StoredRun>> query(const ResultsQuery& q) const;

  // Registers a sweep (or touches its `updated` time when it is there already).
  Status begin_sweep(const std::string& id, const std::string& kernel, const nlohmann::json& problems,
                     const nlohmann::json& space);
  // The point keys stored under a sweep with an outcome of their own (not "error"): what a rerun skips.
  Result<std::set<std::string>> sweep_points(const std::string& id) const;
  Result<std::vector<SweepRow>> sweeps() const;

  // Copies the runs and sweeps of the store at `path` into this one, in one transaction: a sweep point keeps one row
  // (an "error" never replaces an outcome of the point's own; otherwise the newer run stays), a run outside sweeps is
  // added unless the same run is here already, so merging a store twice adds nothing. Shards of one sweep (`tilelab
  // sweep --shard`) merge into that sweep. A version-2 store merges (its runs were timed with
  // events and name no GPU); version 1 (sweep points not yet one row) is refused, as is this store itself.
  Result<MergeCounts> merge_from(const std::string& path);

  // 2: one row per sweep point (unique index runs_sweep_point); 3: the timer and gpu columns.
  static constexpr int kSchemaVersion = 3;

 private:
  ResultsStore() = default;
  // Opens the file and reads its schema version, refusing what is not a TileLab store of a version it reads.
  static Result<std::unique_ptr<ResultsStore>> connect(const std::string& path, bool read_only);
  Status exec(const char* sql) const;
  Status error(const std::string& what) const;

  std::string m_path;
  sqlite3* m_db = nullptr;
  bool m_read_only = false;
  std::int64_t m_version = 0, m_tables = 0;  // as found when opened
};

// The row `insert` would write for a run (id 0, time now): what a caller that shows runs not stored (the GUI with
// recording off) displays and compares like stored ones.
StoredRun stored_run_of(const RunRecord& record, const RunContext& context);

// Two stored runs side by side: {"a": id, "b": id, "kernel": [a, b], "same_problem": bool, "config": {param: [a, b]}
// for the parameters that differ, "problem": likewise, "metrics": {name: {"a", "b", "ratio" (b / a, 0 when a is 0)}},
// "status": [a, b]}.
nlohmann::json compare_runs(const StoredRun& a, const StoredRun& b);

// Hash of a kernel source and every file of the Jit's source set it includes (32 hex digits).
class Jit;
Result<std::string> kernel_source_hash(const Jit& jit, const std::string& source);

}  // namespace tl
