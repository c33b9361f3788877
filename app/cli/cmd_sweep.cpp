// `tilelab sweep KERNEL --problem .. --space 'a=1,2;b=3,4' [--gpus all]`: the sweep engine on the command line.
#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <thread>
#include <tuple>

#include <nlohmann/json.hpp>

#include "app/cli/commands.hpp"
#include "app/cli/run_support.hpp"
#include "runtime/core/files.hpp"
#include "session/sweep.hpp"

namespace tl::cli {
namespace {

struct SweepArgs {
  SessionArgs session;
  std::string kernel, space, config, db, json, best = "tflops", shard, vs, gpus;
  std::vector<std::string> problems;
  int jobs = 0, repeat = 20, warmup = 3;
  TimingOptions timing;  // --timer, --graph-launches
  std::uint64_t samples = SweepSpec{}.run.max_samples;
  bool no_store = false, plain = false, fresh = false;
};

int run_sweep_command(const SweepArgs& a) {
  SweepSpec spec;
  spec.kernel = a.kernel;
  spec.problems.clear();
  for (const auto& text : a.problems) {
    auto p = parse_key_values(text);
    if (!p) return report_error("--problem " + text + ": " + p.status().message());
    spec.problems.push_back(*p);
  }
  if (spec.problems.empty()) spec.problems.push_back({});
  auto space = parse_sweep_space(a.space);
  if (!space) return report_error("--space: " + space.status().message());
  spec.space = *space;
  auto base = parse_key_values(a.config);
  if (!base) return report_error("--config: " + base.status().message());
  spec.base_config = *base;
  spec.jobs = a.jobs;
  spec.resume = !a.fresh;
  if (!a.shard.empty()) {
    auto shard = parse_shard(a.shard);
    if (!shard) return report_error("--shard: " + shard.status().message());
    std::tie(spec.shard, spec.shards) = *shard;
  }
  if (Status timer = check_timer_options(a.timing); !timer.ok()) return report_error(timer.message());
  spec.run.timing = a.timing;
  spec.run.timing.repeat = a.repeat;
  spec.run.timing.warmup = a.warmup;
  spec.run.max_samples = a.samples;
  spec.run.vs = a.vs;
  const auto& names = stored_metric_names();
  if (std::find(names.begin(), names.end(), a.best) == names.end())
    return report_error("--best " + a.best + ": not a metric (tflops, gbps, efficiency, median_ms, min_ms)");

  auto session = open_session(a.session);
  if (!session) return report_error(session.status().message());
  Session& s = **session;
  if (!a.gpus.empty()) {
    auto gpus = parse_gpus(a.gpus, s.gpu_count(), s.target().why_no_device);
    if (!gpus) return report_error("--gpus " + a.gpus + ": " + gpus.status().message());
    spec.gpus = *gpus;
  }
  std::unique_ptr<ResultsStore> store;
  if (!a.no_store) {
    auto opened = ResultsStore::open(a.db);
    if (!opened) return report_error(opened.status().message());
    store = std::move(*opened);
  }
  std::string on;
  if (spec.gpus.size() > 1) {
    on = ", on GPUs ";
    for (std::size_t i = 0; i < spec.gpus.size(); ++i) on.append(i ? "," : "").append(std::to_string(spec.gpus[i]));
  } else if (spec.gpus.size() == 1) {
    on = ", on GPU " + std::to_string(spec.gpus[0]);
  }
  std::printf("sweep %s of %s: %zu problem(s), %s%s%s; %s\n", sweep_id(spec).c_str(), a.kernel.c_str(),
              spec.problems.size(), a.space.c_str(), spec.shards > 1 ? (", shard " + a.shard).c_str() : "", on.c_str(),
              store ? ("results in " + store->path()).c_str() : "not stored (--no-store)");
  if (!s.has_device())
    std::printf("no GPU (%s): compiling every point and reporting its resources; runs are skipped\n",
                s.target().why_no_device.c_str());
  std::fflush(stdout);

  SweepPrinter printer(stdout, a.plain, spec.gpus.size() > 1);
  Result<SweepSummary> result = [&] {
    InterruptScope interrupt;  // Ctrl-C stops the sweep after the current run
    return run_sweep(s, store.get(), spec, [&](const SweepPoint& p, const SweepProgress& pr) { printer.point(p, pr); },
                     interrupt.flag(), a.best);
  }();
  printer.finish();
  if (!result) return report_error(result.status().message());
  const SweepSummary& sum = *result;

  if (sum.other_shards > 0) std::printf("shard %s: %zu of the sweep's points left to the other shards\n", a.shard.c_str(), sum.other_shards);
  std::printf("%zu points: %zu ran (%zu passed, %zu failed), %zu skipped (invalid), %zu filtered, %zu already stored, "
              "%zu not run; %zu compiled (%zu from cache) on %d thread(s)\n",
              sum.total, sum.ran, sum.passed, sum.failed, sum.skipped, sum.filtered, sum.resumed, sum.not_run,
              sum.compiled, sum.compile_cache_hits, spec.jobs > 0 ? spec.jobs : static_cast<int>(std::thread::hardware_concurrency()));
  if (sum.ran > 0)
    std::printf("time: %.2f s wall, %.3f s in the kernels' own launches; overhead %.2f ms per config run "
                "(per run: %.2f ms waiting for compiles, %.2f ms in the run outside the kernels, %.2f ms storing)\n",
                sum.wall_s, sum.kernel_s, sum.overhead_ms, sum.compile_wait_s * 1e3 / double(sum.ran),
                (sum.run_s - sum.kernel_s) * 1e3 / double(sum.ran), sum.store_s * 1e3 / double(sum.ran));
  else
    std::printf("time: %.2f s wall\n", sum.wall_s);
  // Each GPU's share, restarts and best (chips of one model can rank some configs differently).
  if (sum.gpus.size() > 1 || (!sum.gpus.empty() && sum.gpus[0].restarts > 0))
    for (const SweepGpu& g : sum.gpus) {
      std::printf("GPU %d (%s): ran %zu (%zu passed) in %.2f s", g.index, g.name.c_str(), g.ran, g.passed, g.busy_s);
      if (g.restarts) std::printf(", worker restarted %dx", g.restarts);
      if (g.best && sum.gpus.size() > 1) {
        const SweepPoint& b = sum.points[*g.best];
        std::printf("; its best %s", params_text(b.config).c_str());
        if (b.record->flops > 0) std::printf(" (%.1f TFLOP/s)", b.record->tflops);
        else std::printf(" (%.0f GB/s)", b.record->gbps);
      }
      std::printf("\n");
    }
  if (sum.best) {
    const SweepPoint& b = sum.points[*sum.best];
    std::printf("best by %s: %s  problem %s\n", a.best.c_str(), params_text(b.config).c_str(), params_text(b.problem).c_str());
    print_run_table({*b.record});
    if (b.record->time_ms.count > 0) std::printf("%s\n", timer_summary(*b.record).c_str());
  }
  // Each problem's library row (run once, beside its first point) under that problem's fastest passed config.
  for (const SweepPoint& p : sum.points) {
    if (!p.record || !p.record->baseline) continue;
    const SweepPoint* fastest = nullptr;
    for (const SweepPoint& q : sum.points)
      if (q.problem == p.problem && q.status == PointStatus::passed && q.record &&
          (!fastest || q.record->time_ms.median < fastest->record->time_ms.median))
        fastest = &q;
    RunRecord shown = fastest ? *fastest->record : *p.record;
    shown.baseline = p.record->baseline;
    std::printf("%s on problem %s, beside its fastest config %s:\n", p.record->baseline->name.c_str(),
                params_text(p.problem).c_str(), fastest ? params_text(fastest->config).c_str() : "(none passed)");
    print_run_table({shown});
    print_baseline(shown);
  }
  if (!a.json.empty()) {
    nlohmann::json out = sum;
    out["points"] = sum.points;
    if (Status s = write_file_atomic(a.json, out.dump(2) + "\n"); !s.ok()) return report_error(s.message());
  }
  if (sum.interrupted) {
    std::printf("interrupted: stopped after the current run; rerun the same command to continue (sweep %s)\n", sum.id.c_str());
    return 130;
  }
  return 0;
}

}  // namespace

void add_sweep_command(CLI::App& app, Context& ctx) {
  auto* cmd = app.add_subcommand("sweep", "Sweep a kernel's config space: compile in parallel, run on one or more GPUs, store every result");
  auto a = std::make_shared<SweepArgs>();
  cmd->add_option("kernel", a->kernel, "Kernel name (see `tilelab kernels`)")->required();
  cmd->add_option("--problem", a->problems, "Problem as key=value,...; repeat for several problems");
  cmd->add_option("--space", a->space, "Axes as 'name=v1,v2;name=v1,v2' (config parameters)")->required();
  cmd->add_option("--config", a->config, "Values of the parameters the space does not vary, key=value,...");
  cmd->add_option("--jobs", a->jobs, "Compile threads (default: the machine's cores)")->check(in_range(1, 1024));
  cmd->add_option("--gpus", a->gpus, "GPUs to run on, a worker each: all, or indices like 0,1 (default: GPU 0)");
  cmd->add_option("--db", a->db, "Results store (default: $TILELAB_DB or ~/.local/share/tilelab/results.db)");
  cmd->add_flag("--no-store", a->no_store, "Do not store the results (and do not resume)");
  cmd->add_option("--shard", a->shard, "Run only slice I of N of the points (I/N, 0 <= I < N: a scheduler's array task; "
                                       "the shards' stores merge with `tilelab results merge`)");
  cmd->add_flag("--fresh", a->fresh, "Run every point again, even those stored by an earlier run of this sweep");
  cmd->add_option("--best", a->best, "Metric that picks the best config: tflops, gbps, efficiency, median_ms, min_ms")
      ->capture_default_str();
  cmd->add_option("--repeat", a->repeat, "Timed runs per config (0: check only)")->capture_default_str()->check(in_range(0, 100000));
  cmd->add_option("--warmup", a->warmup, "Untimed runs before timing")->capture_default_str()->check(in_range(0, 10000));
  add_timer_options(cmd, a->timing);
  cmd->add_option("--samples", a->samples, "Output positions of each point checked against the float64 reference (0: all)")
      ->capture_default_str()
      ->check(in_range(0, 1e9));
  cmd->add_option("--json", a->json, "Write every point (status, reason, resources, run record) to FILE");
  cmd->add_flag("--plain", a->plain, "One line per point even on a terminal (no progress bar)");
  cmd->add_option("--vs", a->vs,
                  "Also time the library once per problem, in the same worker on its first point's buffers: cublas "
                  "(GEMMs), cudnn (attention); its row prints under the problem's fastest config")
      ->check(CLI::IsMember({"cublas", "cudnn"}));
  add_session_options(cmd, a->session);
  cmd->callback([&ctx, a] { ctx.exit_code = run_sweep_command(*a); });
}

}  // namespace tl::cli
