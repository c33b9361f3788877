// `tilelab test`: every library kernel's correctness matrix (sizes, dtypes, configs) on this GPU, with JUnit XML.
#include <chrono>
#include <cstdio>
#include <set>
#include <sstream>
#include <tuple>
#include <utility>

#include "app/cli/commands.hpp"
#include "app/cli/run_support.hpp"
#include "library/library.hpp"
#include "runtime/core/files.hpp"
#include "runtime/spec/random_problem.hpp"
#include "runtime/spec/registry.hpp"

namespace tl::cli {
namespace {

struct TestArgs {
  SessionArgs session{20};
  std::string kernel, junit, config;
  bool quick = false, full = false;
  bool dry_run = false;  // list the cases and what validate says of each; nothing compiled or run
  int random = 0;  // --random N: N drawn problems per kernel instead of the matrix
  std::uint64_t seed = kDefaultDrawSeed;
};

using KV = std::map<std::string, std::string>;

struct Case {
  const KernelSpec* spec = nullptr;
  KV problem, config;
  bool base = false;  // the kernel's defaults (with --config's values): a refusal there is a skip, not a failure
  bool drawn = false;  // --random: a schema error is a refusal too (a default_from value out of range)
  std::string over_budget = {};  // --random: every redraw was over the test budget (why); not run
};

// Sizes by the problem's parameter names; most deliberately not multiples of any tile, plus one that is.
std::vector<KV> sizes_for(const Schema& problem, bool full) {
  auto has = [&](const char* n) { return problem.find(n) != nullptr; };
  std::vector<KV> s;
  if (has("M") && has("N") && has("K")) {
    // K=67 exercises K edges of kernels that allow any K; K=72 those that need K % 8 == 0 (16-byte rows).
    s = {{{"M", "257"}, {"N", "130"}, {"K", "67"}}, {{"M", "257"}, {"N", "130"}, {"K", "72"}},
         {{"M", "256"}, {"N", "128"}, {"K", "64"}}};
    if (full) s.insert(s.end(), {{{"M", "1"}, {"N", "1"}, {"K", "1"}}, {{"M", "513"}, {"N", "511"}, {"K", "1000"}}});
  } else if (has("rows") && has("cols")) {
    s = {{{"rows", "37"}, {"cols", "1000"}}, {{"rows", "64"}, {"cols", "4096"}}};
    if (full) s.insert(s.end(), {{{"rows", "1"}, {"cols", "8"}}, {{"rows", "75"}, {"cols", "100"}}});
  } else if (has("n")) {
    s = {{{"n", "1000003"}}, {{"n", "4096"}}};
    if (full) s.insert(s.end(), {{{"n", "1"}}, {{"n", "777"}}});
  } else {
    s = {{}};
  }
  return s;
}

// Configs that differ from the defaults in one parameter, in schema order (--full adds the spec's test_configs).
std::vector<KV> config_variations(const Schema& config) {
  std::vector<KV> out;
  for (const ParamSpec& p : config.params) {
    std::vector<std::string> values = p.choices;
    if (values.empty() && p.type == ParamType::int_) {
      const auto d = std::stoll(p.default_value);
      for (auto v : {d / 2, d * 2})
        if (v >= p.min && v <= p.max && v != d) values.push_back(std::to_string(v));
    } else if (values.empty() && p.type == ParamType::bool_) {
      values = {p.default_value == "true" ? "false" : "true"};
    }
    for (const auto& v : values)
      if (v != p.default_value) out.push_back({{p.name, v}});
  }
  return out;
}

// `forced` (--config) is set in every case of the matrix; the variations of a parameter it sets are left out.
std::vector<Case> build_matrix(const std::vector<const KernelSpec*>& specs, bool full, const DeviceLimits& limits,
                               const KV& forced) {
  std::vector<Case> cases;
  for (const KernelSpec* spec : specs) {
    if (spec->hidden) {  // the fault-path kernels: once, at their defaults
      cases.push_back({spec, {}, forced, true});
      continue;
    }
    std::vector<std::string> dtypes = {""};
    if (const ParamSpec* d = spec->problem.find("dtype"); d && !d->choices.empty()) dtypes = d->choices;
    std::vector<KV> variations;
    auto all = config_variations(spec->config);
    if (full && spec->test_configs)
      for (auto& c : spec->test_configs()) all.push_back(std::move(c));
    for (KV& v : all) {
      bool sets_forced = false;
      for (const auto& [k, _] : forced) sets_forced = sets_forced || v.count(k);
      if (sets_forced) continue;
      v.insert(forced.begin(), forced.end());
      variations.push_back(std::move(v));
    }
    for (const auto& size : spec->test_problems ? spec->test_problems(full) : sizes_for(spec->problem, full)) {
      for (const auto& dt : dtypes) {
        KV problem = size;
        if (!dt.empty()) problem["dtype"] = dt;
        cases.push_back({spec, problem, forced, true});
        int others = 0;
        for (const auto& v : variations) {
          if (!full && others == 1) break;
          if (instantiate(*spec, problem, v, limits).ok()) {
            cases.push_back({spec, problem, v, false});
            ++others;
          }
        }
      }
    }
  }
  return cases;
}

// --random: `n` problems per kernel (and the refused draws between them) drawn from its problem schema (random_problem.hpp), each at the kernel's
// default config (with --config's values); the hidden fault-path kernels once at their defaults, as in the matrix.
std::vector<Case> build_random(const std::vector<const KernelSpec*>& specs, int n, std::uint64_t seed,
                               const DeviceLimits& limits, const KV& forced) {
  std::vector<Case> cases;
  for (const KernelSpec* spec : specs) {
    if (spec->hidden) {
      cases.push_back({spec, {}, forced, true});
      continue;
    }
    for (DrawnProblem& d : draw_problems(*spec, n, seed, forced, limits)) {
      Case c{spec, std::move(d.given), forced, true, true};
      if (d.over_budget) c.over_budget = d.refused;
      cases.push_back(std::move(c));
    }
  }
  return cases;
}

std::string kv_text(const KV& kv) {
  std::string s;
  for (const auto& [k, v] : kv) s += (s.empty() ? "" : ",") + k + "=" + v;
  return s.empty() ? "defaults" : s;
}

std::string xml_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      case '\'': o += "&apos;"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t') o += ' ';
        else o += c;
    }
  }
  return o;
}

struct Outcome {
  Case c;
  enum class Kind { pass, fail, skipped } kind = Kind::pass;
  std::string detail;  // why it failed or was skipped; errors for passes
  double seconds = 0;
};

Status write_junit(const std::string& path, const std::vector<Outcome>& outcomes, double total_s) {
  std::size_t failures = 0, skipped = 0;
  for (const auto& o : outcomes) {
    failures += o.kind == Outcome::Kind::fail;
    skipped += o.kind == Outcome::Kind::skipped;
  }
  std::ostringstream out;
  out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out << "<testsuites name=\"tilelab\" tests=\"" << outcomes.size() << "\" failures=\"" << failures << "\" skipped=\""
      << skipped << "\" time=\"" << total_s << "\">\n";
  out << "  <testsuite name=\"tilelab.kernels\" tests=\"" << outcomes.size() << "\" failures=\"" << failures
      << "\" errors=\"0\" skipped=\"" << skipped << "\" time=\"" << total_s << "\">\n";
  for (const auto& o : outcomes) {
    out << "    <testcase classname=\"" << xml_escape(o.c.spec->name) << "\" name=\""
        << xml_escape(kv_text(o.c.problem) + " | " + kv_text(o.c.config)) << "\" time=\"" << o.seconds << "\"";
    if (o.kind == Outcome::Kind::pass) {
      out << "/>\n";
    } else if (o.kind == Outcome::Kind::skipped) {
      out << ">\n      <skipped message=\"" << xml_escape(o.detail) << "\"/>\n    </testcase>\n";
    } else {
      out << ">\n      <failure message=\"" << xml_escape(o.detail) << "\"/>\n    </testcase>\n";
    }
  }
  out << "  </testsuite>\n</testsuites>\n";
  return write_file_atomic(path, out.str());
}

// How a case the schemas or can_implement turned away (st) is reported: skipped with the reason where the matrix
// expects a refusal (a drawn problem, or the kernel's default config on this problem), else failed; a refusal without
// a reason is a bug in the spec, so it fails too. The run and --dry-run both report through this.
std::pair<Outcome::Kind, std::string> not_prepared(const Case& c, const Status& st) {
  const ErrorCode code = st.code();
  if (!has_reason(st.message(), c.spec->name) && (code == ErrorCode::unsupported || code == ErrorCode::invalid_argument))
    return {Outcome::Kind::fail,
            std::string(error_code_name(code)) + " without a reason (the spec's refusal has an empty message)"};
  if (c.drawn) {
    if (auto why = refusal_text(st, c.spec->name)) return {Outcome::Kind::skipped, *why};  // reported, not a failure
  }
  if (code == ErrorCode::unsupported && c.base) return {Outcome::Kind::skipped, "not supported: " + st.message()};
  return {Outcome::Kind::fail, std::string(error_code_name(code)) + ": " + st.message()};
}

// --dry-run: the matrix's cases, each with what the schemas and can_implement say of it (validate: no host data, no
// compile, no GPU), so a change of a spec's refusals shows as the cases that would run, be skipped or fail.
int list_cases(const std::vector<Case>& cases, const DeviceLimits& limits) {
  std::printf("%-12s %-34s %-48s %-6s  %s\n", "kernel", "problem", "config", "would", "detail");
  std::size_t run = 0, skip = 0, fail = 0;
  for (const Case& c : cases) {
    std::string would = "RUN", detail;
    if (!c.over_budget.empty()) {
      would = "SKIP", detail = "refused: " + c.over_budget;
    } else if (auto v = validate(*c.spec, c.problem, c.config, limits); !v.ok()) {
      const auto [kind, why] = not_prepared(c, v.status());
      would = kind == Outcome::Kind::skipped ? "SKIP" : "FAIL";
      detail = why;
    }
    (would == "RUN" ? run : would == "SKIP" ? skip : fail)++;
    std::printf("%-12s %-34s %-48s %-6s  %s\n", c.spec->name.c_str(), kv_text(c.problem).c_str(),
                kv_text(c.config).c_str(), would.c_str(), detail.c_str());
  }
  std::printf("%zu cases: %zu would run, %zu would be skipped (refused), %zu would fail (dry run: nothing compiled or "
              "run; the limits of %s)\n",
              cases.size(), run, skip, fail, limits.arch.c_str());
  return fail > 0 ? 1 : 0;
}

int run_test(const TestArgs& a) {
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<const KernelSpec*> specs;
  if (!a.kernel.empty()) {
    auto s = library_registry().find(a.kernel);
    if (!s) return report_error(s.status().message());
    specs.push_back(*s);
  } else {
    specs = library_registry().list(false);
  }
  auto forced = parse_key_values(a.config);
  if (!forced) return report_error(forced.status().with_context("--config").message());
  if (!forced->empty() && a.kernel.empty())
    return report_error("--config sets parameters of one kernel's config: give --kernel too");
  for (const auto& [k, v] : *forced)
    if (!specs[0]->config.find(k))
      return report_error("--config: " + specs[0]->name + " has no config parameter '" + k +
                          "' (`tilelab kernels` lists them)");
  auto session = open_session(a.session);
  if (!session) return report_error(session.status().message());
  Session& s = **session;
  const RunTarget& target = s.target();
  const auto cases = a.random > 0 ? build_random(specs, a.random, a.seed, target.limits, *forced)
                                  : build_matrix(specs, a.full, target.limits, *forced);
  if (a.random > 0)
    std::printf("random problems: %d per kernel, seed %llu (replay: tilelab test --random %d --seed %llu%s%s); "
                "a problem reads as `--problem` takes it, unset parameters at their defaults\n",
                a.random, static_cast<unsigned long long>(a.seed), a.random, static_cast<unsigned long long>(a.seed),
                a.kernel.empty() ? "" : " --kernel ", a.kernel.c_str());

  if (a.dry_run) return list_cases(cases, target.limits);
  if (target.device) {
    std::printf("testing %zu cases on GPU 0 (%s, %s)\n", cases.size(), target.device->name.c_str(),
                target.limits.arch.c_str());
  } else {
    std::printf("no GPU: %s\ncompiling %zu cases for %s (NVRTC); the runs are skipped\n", target.why_no_device.c_str(),
                cases.size(), target.limits.arch.c_str());
  }
  std::printf("%-12s %-34s %-48s %-6s %9s %9s  %s\n", "kernel", "problem", "config", "result", "rel_err", "max_abs",
              "detail");

  auto print_outcome = [](const Outcome& o, const RunRecord& r) {
    const bool checked = !r.outputs.empty();
    std::printf("%-12s %-34s %-48s %-6s %9s %9s  %s\n", o.c.spec->name.c_str(), kv_text(o.c.problem).c_str(),
                kv_text(o.c.config).c_str(),
                o.kind == Outcome::Kind::pass ? "PASS" : o.kind == Outcome::Kind::fail ? "FAIL" : "SKIP",
                checked ? format_number(r.rel_error(), "%.2e").c_str() : "-",
                checked ? format_number(r.max_abs_error(), "%.2e").c_str() : "-", o.detail.c_str());
    std::fflush(stdout);
  };
  std::vector<Outcome> outcomes;
  for (const Case& c : cases) {
    const auto c0 = std::chrono::steady_clock::now();
    Outcome o;
    o.c = c;
    RunRecord r;
    if (!c.over_budget.empty()) {
      o.kind = Outcome::Kind::skipped;
      o.detail = "refused: " + c.over_budget;
      print_outcome(o, r);
      outcomes.push_back(std::move(o));
      continue;
    }
    auto prepared = s.prepare(c.spec->name, c.problem, c.config);
    if (!prepared) {
      std::tie(o.kind, o.detail) = not_prepared(c, prepared.status());
    } else if (!s.has_device()) {
      o.kind = Outcome::Kind::skipped;
      o.detail = "compiled (" + std::to_string(prepared->compiled.resources.registers) + " registers); run skipped: no GPU";
    } else {
      RunOptions ro;
      ro.timing.repeat = 0;  // correctness only: one checked launch
      r = s.run(*prepared, ro);
      o.kind = r.passed() ? Outcome::Kind::pass : Outcome::Kind::fail;
      o.detail = r.failure_text();
    }
    if (o.kind == Outcome::Kind::fail && c.drawn)
      o.detail += " (replay: tilelab bench " + c.spec->name + (c.problem.empty() ? "" : " --problem " + kv_text(c.problem)) +
                  (c.config.empty() ? "" : " --config " + kv_text(c.config)) + ")";
    o.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - c0).count();
    print_outcome(o, r);
    outcomes.push_back(std::move(o));
  }

  std::size_t pass = 0, fail = 0, skip = 0;
  for (const auto& o : outcomes) {
    pass += o.kind == Outcome::Kind::pass;
    fail += o.kind == Outcome::Kind::fail;
    skip += o.kind == Outcome::Kind::skipped;
  }
  const double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("%zu passed, %zu failed, %zu skipped (%.1f s)\n", pass, fail, skip, total);
  if (skip > 0 && !target.device)
    std::printf("runs skipped: no GPU: %s (compile checks only)\n", target.why_no_device.c_str());
  if (!a.junit.empty()) {
    Status s = write_junit(a.junit, outcomes, total);
    if (!s.ok()) return report_error(s.message());
  }
  return fail > 0 ? 1 : 0;
}

}  // namespace

void add_test_command(CLI::App& app, Context& ctx) {
  auto* cmd = app.add_subcommand("test", "Correctness matrix of the library kernels on this GPU (compile checks without one)");
  auto a = std::make_shared<TestArgs>();
  cmd->add_option("--kernel", a->kernel, "Only this kernel (test.oob / test.spin: the fault-path kernels)");
  auto* quick = cmd->add_flag("--quick", a->quick, "Two sizes per kernel, default + one other config (the default)");
  auto* full = cmd->add_flag("--full", a->full, "More sizes (1 element, odd shapes) and every one-parameter config variation")->excludes(quick);
  auto* random = cmd->add_option("--random", a->random,
                                 "N problems per kernel drawn from its problem schema (edge values: min, min+1, odd "
                                 "and prime sizes, powers of two +-1, defaults and default_from left unset; at most "
                                 "256 MiB of tensors and 4 GFLOP each), each at the kernel's default config, instead "
                                 "of the matrix; a problem the kernel refuses is reported with its reason and another "
                                 "drawn (at most 4N draws)")
                     ->check(in_range(1, 100000));
  random->excludes(quick)->excludes(full);
  cmd->add_option("--seed", a->seed, "Seed of --random's draws (default " + std::to_string(kDefaultDrawSeed) +
                                         "; the same seed draws the same problems)")
      ->needs(random);
  cmd->add_flag("--dry-run", a->dry_run,
                "List the cases and whether each would run, be skipped (refused with its reason) or fail the "
                "schemas and can_implement; nothing is compiled or run");
  cmd->add_option("--junit", a->junit, "Write JUnit XML to FILE");
  cmd->add_option("--config", a->config,
                  "key=value,... of --kernel's config set in every case (its variations of those parameters left out)");
  add_session_options(cmd, a->session);
  cmd->callback([&ctx, a] { ctx.exit_code = run_test(*a); });
}

}  // namespace tl::cli
