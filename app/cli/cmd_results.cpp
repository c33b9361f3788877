// `tilelab results`: the stored runs as a table, JSON or CSV; the best per kernel and problem; two runs compared;
// stores merged (`results merge`).
#include <cstdio>
#include <iostream>

#include <nlohmann/json.hpp>

#include "app/cli/commands.hpp"
#include "app/cli/run_support.hpp"
#include "runtime/results/results_store.hpp"

namespace tl::cli {
namespace {

struct ResultsArgs {
  std::string db, kernel, since, sweep, best;
  std::vector<std::int64_t> compare;
  std::int64_t limit = 0;
  bool json = false, csv = false, sweeps = false;
};

std::string params_of(const nlohmann::json& j) {
  std::string s;
  if (!j.is_object()) return s;
  for (const auto& [k, v] : j.items()) s += (s.empty() ? "" : ",") + k + "=" + (v.is_string() ? v.get<std::string>() : v.dump());
  return s;
}

// RFC 4180: a field with a comma, quote or line break is quoted, its quotes doubled.
std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

void print_csv(const std::vector<StoredRun>& rows) {
  std::printf("id,time,kernel,status,sweep_id,device,gpu,sm_clock_khz,median_ms,min_ms,max_ms,tflops,gbps,efficiency,"
              "rel_error,max_abs_error,passed,registers,spills,config,problem,source_hash,failure_kind,failure_message,timer\n");
  for (const auto& r : rows) {
    std::printf("%lld,%s,%s,%s,%s,%s,%s,%d,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%d,%d,%d,%s,%s,%s,%s,%s,%s\n",
                static_cast<long long>(r.id), r.time.c_str(), csv_field(r.kernel).c_str(), r.status.c_str(),
                r.sweep_id.c_str(), csv_field(r.device).c_str(), r.gpu >= 0 ? std::to_string(r.gpu).c_str() : "",
                r.sm_clock_khz, r.median_ms, r.min_ms, r.max_ms, r.tflops,
                r.gbps, r.efficiency, r.rel_error, r.max_abs_error, r.passed ? 1 : 0,
                static_cast<int>(*r.metric("registers")), static_cast<int>(*r.metric("spills")),
                csv_field(params_of(r.config)).c_str(), csv_field(params_of(r.problem)).c_str(), r.source_hash.c_str(),
                r.failure_kind.c_str(), csv_field(r.failure_message).c_str(), r.timer.c_str());
  }
}

void print_table(const std::vector<StoredRun>& rows) {
  std::printf("%6s %-20s %-12s %-13s %9s %-6s %8s %7s %5s %9s %4s  %s\n", "id", "time", "kernel", "status", "median_ms",
              "timer", "TFLOP/s", "GB/s", "eff", "rel_err", "regs", "config | problem");
  for (const auto& r : rows) {
    const bool timed = r.median_ms > 0;
    std::printf("%6lld %-20s %-12s %-13s %9s %-6s %8s %7s %5s %9s %4d  %s | %s\n", static_cast<long long>(r.id),
                r.time.c_str(), r.kernel.c_str(), r.status.c_str(), timed ? format_number(r.median_ms, "%.4f").c_str() : "-",
                timed ? r.timer.c_str() : "-",
                timed && r.tflops > 0 ? format_number(r.tflops, "%.1f").c_str() : "-",
                timed ? format_number(r.gbps, "%.0f").c_str() : "-",
                timed && r.efficiency > 0 ? format_number(100 * r.efficiency, "%.0f%%").c_str() : "-",
                r.status == "passed" || r.status == "failed" ? format_number(r.rel_error, "%.1e").c_str() : "-",
                static_cast<int>(*r.metric("registers")), params_of(r.config).c_str(), params_of(r.problem).c_str());
    if (!r.failure_message.empty()) std::printf("%6s %s: %s\n", "", r.failure_kind.c_str(), r.failure_message.c_str());
  }
}

int print_compare(const ResultsStore& store, const ResultsArgs& a) {
  ResultsQuery q;
  q.ids = a.compare;
  auto rows = store.query(q);
  if (!rows) return report_error(rows.status().message());
  const StoredRun *x = nullptr, *y = nullptr;
  for (const auto& r : *rows) {
    if (r.id == a.compare[0]) x = &r;
    if (r.id == a.compare[1]) y = &r;
  }
  for (auto [p, id] : {std::pair{x, a.compare[0]}, std::pair{y, a.compare[1]}})
    if (!p) return report_error("no run " + std::to_string(id) + " in " + store.path() + " (see `tilelab results`)");
  nlohmann::json c = compare_runs(*x, *y);
  if (a.json) {
    std::cout << c.dump(2) << '\n';
    return 0;
  }
  std::printf("run %lld (%s, %s) vs run %lld (%s, %s)\n", static_cast<long long>(x->id), x->kernel.c_str(), x->status.c_str(),
              static_cast<long long>(y->id), y->kernel.c_str(), y->status.c_str());
  if (!c["same_problem"].get<bool>())
    for (const auto& [k, v] : c["problem"].items())
      std::printf("  problem %-10s %s -> %s\n", k.c_str(), v[0].dump().c_str(), v[1].dump().c_str());
  for (const auto& [k, v] : c["config"].items())
    std::printf("  config  %-10s %s -> %s\n", k.c_str(), v[0].dump().c_str(), v[1].dump().c_str());
  if (c["config"].empty()) std::printf("  same config\n");
  if (x->timer != y->timer) std::printf("  timer   %s -> %s (times taken differently)\n", x->timer.c_str(), y->timer.c_str());
  std::printf("  %-14s %12s %12s %8s\n", "metric", "a", "b", "b/a");
  for (const auto& [k, v] : c["metrics"].items())
    std::printf("  %-14s %12.5g %12.5g %8s\n", k.c_str(), v["a"].get<double>(), v["b"].get<double>(),
                v["ratio"].get<double>() != 0 ? format_number(v["ratio"].get<double>(), "%.3fx").c_str() : "-");
  return 0;
}

int run_results(const ResultsArgs& a) {
  if (a.json && a.csv) return report_error("--json and --csv: pick one");
  auto opened = ResultsStore::open_read_only(a.db);
  if (!opened) return report_error(opened.status().message());
  const ResultsStore& store = **opened;
  if (!a.compare.empty()) return print_compare(store, a);
  if (a.sweeps) {
    auto sweeps = store.sweeps();
    if (!sweeps) return report_error(sweeps.status().message());
    if (a.json) {
      nlohmann::json out = nlohmann::json::array();
      for (const auto& s : *sweeps)
        out.push_back({{"id", s.id}, {"kernel", s.kernel}, {"problems", s.problems}, {"space", s.space},
                       {"created", s.created}, {"updated", s.updated}, {"runs", s.runs}});
      std::cout << out.dump(2) << '\n';
      return 0;
    }
    std::printf("%-16s %-12s %5s %-20s %s\n", "sweep", "kernel", "runs", "updated", "space");
    for (const auto& s : *sweeps) {
      std::string space;
      for (const auto& ax : s.space) {
        std::string vals;
        for (const auto& v : ax["values"]) vals += (vals.empty() ? "" : ",") + v.get<std::string>();
        space += (space.empty() ? "" : ";") + ax["name"].get<std::string>() + "=" + vals;
      }
      std::printf("%-16s %-12s %5lld %-20s %s\n", s.id.c_str(), s.kernel.c_str(), static_cast<long long>(s.runs),
                  s.updated.c_str(), space.c_str());
    }
    return 0;
  }
  ResultsQuery q;
  q.kernel = a.kernel;
  q.since = a.since;
  q.sweep_id = a.sweep;
  q.limit = a.limit;
  q.best = a.best;
  auto rows = store.query(q);
  if (!rows) return report_error(rows.status().message());
  const std::vector<StoredRun>& shown = *rows;
  if (a.json) {
    std::cout << nlohmann::json(shown).dump(2) << '\n';
  } else if (a.csv) {
    print_csv(shown);
  } else {
    print_table(shown);
    std::printf("%zu run(s) in %s\n", shown.size(), store.path().c_str());
  }
  return 0;
}

struct MergeArgs {
  std::vector<std::string> from;
  std::string into;
};

// Each store in turn, each in its own transaction: one that cannot be merged stops the command with what was merged
// before it kept.
int run_merge(const MergeArgs& a) {
  auto target = ResultsStore::open(a.into);
  if (!target) return report_error(target.status().message());
  MergeCounts total;
  for (const auto& path : a.from) {
    auto n = (*target)->merge_from(path);
    if (!n) return report_error(n.status().message());
    std::printf("%s: %lld run(s) added or replacing an older run of their sweep point, %lld new sweep(s)\n", path.c_str(),
                static_cast<long long>(n->runs), static_cast<long long>(n->sweeps));
    total.runs += n->runs;
    total.sweeps += n->sweeps;
  }
  std::printf("merged %zu store(s) into %s: %lld run(s), %lld new sweep(s)\n", a.from.size(), (*target)->path().c_str(),
              static_cast<long long>(total.runs), static_cast<long long>(total.sweeps));
  return 0;
}

}  // namespace

void add_results_command(CLI::App& app, Context& ctx) {
  auto* cmd = app.add_subcommand("results", "List the runs in the results store (bench, sweeps, Lua), or compare two");
  auto a = std::make_shared<ResultsArgs>();
  cmd->add_option("--db", a->db, "Results store (default: $TILELAB_DB or ~/.local/share/tilelab/results.db)");
  cmd->add_option("--kernel", a->kernel, "Only this kernel's runs");
  cmd->add_option("--since", a->since, "Only runs at or after this UTC date or time (2026-11-22, 2026-11-22T21:00)");
  cmd->add_option("--sweep", a->sweep, "Only the runs of this sweep (the id `tilelab sweep` prints)");
  cmd->add_option("--limit", a->limit, "Only the newest N runs")->check(in_range(1, 1e9));
  cmd->add_option("--best", a->best, "Only the best passed run of each kernel and problem by METRIC (tflops, gbps, "
                                     "efficiency, median_ms, ...)");
  cmd->add_option("--compare", a->compare, "Compare two runs by id: config and problem differences, metrics and ratios")
      ->expected(2)
      ->check(in_range(1, 9e18));
  cmd->add_flag("--sweeps", a->sweeps, "List the sweeps instead (id, kernel, runs stored, space)");
  cmd->add_flag("--json", a->json, "Print JSON (an array of rows; with --compare an object)");
  cmd->add_flag("--csv", a->csv, "Print CSV (one header line, one line per run)");
  auto* merge = cmd->add_subcommand("merge", "Merge results stores into one (the shards of a sweep become that sweep)");
  auto m = std::make_shared<MergeArgs>();
  merge->add_option("stores", m->from, "Stores to merge (read only)")->required()->check(CLI::ExistingFile);
  merge->add_option("--into", m->into, "The store they are merged into (created when missing)")->required();
  merge->callback([&ctx, m] { ctx.exit_code = run_merge(*m); });
  cmd->callback([&ctx, a, merge] {
    if (!merge->parsed()) ctx.exit_code = run_results(*a);
  });
}

}  // namespace tl::cli
