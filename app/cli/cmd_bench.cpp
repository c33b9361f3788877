// `tilelab bench KERNEL --problem ..`: compile, run in the worker, check against the reference, time, report.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

#include <nlohmann/json.hpp>

#include "app/cli/commands.hpp"
#include "app/cli/run_support.hpp"
#include "runtime/core/files.hpp"
#include "runtime/core/npy.hpp"
#include "runtime/results/results_store.hpp"
#include "session/sweep.hpp"

namespace tl::cli {
namespace {

struct BenchArgs {
  SessionArgs session;
  std::string kernel, problem, config, json, dump, vs, db;
  int repeat = 20, warmup = 3;
  TimingOptions timing;  // --timer, --graph-launches
  bool timeline = false;
  bool dram = false;
  bool no_store = false;
};

// Inputs as they were, each output whole, and the sampled output beside its reference; record.json with the rest.
Status dump_run(const std::string& dir, const RunRecord& r) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return make_error(ErrorCode::io, "cannot create " + dir + ": " + ec.message());
  const std::filesystem::path d(dir);
  for (const HostTensor& t : r.inputs)
    TL_RETURN_IF_ERROR(write_npy((d / (t.name + ".npy")).string(), npy_from_elements(t.data.data(), t.dtype, t.shape)));
  for (const OutputCheck& o : r.outputs) {
    if (!o.data.empty())
      TL_RETURN_IF_ERROR(write_npy((d / (o.name + ".npy")).string(), npy_from_elements(o.data.data(), o.dtype, o.shape)));
    const std::vector<std::int64_t> n = {static_cast<std::int64_t>(o.positions.size())};
    TL_RETURN_IF_ERROR(write_npy((d / (o.name + ".positions.npy")).string(), npy_from_u64(o.positions)));
    TL_RETURN_IF_ERROR(write_npy((d / (o.name + ".samples.npy")).string(), npy_from_doubles(o.samples, n)));
    TL_RETURN_IF_ERROR(write_npy((d / (o.name + ".reference.npy")).string(), npy_from_doubles(o.reference, n)));
  }
  std::ofstream(d / "record.json") << nlohmann::json(r).dump(2) << '\n';
  return Status::success();
}

int run_bench(const BenchArgs& a) {
  auto config = parse_key_values(a.config);
  if (!config) return report_error("--config: " + config.status().message());
  auto problem = parse_key_values(a.problem);
  if (!problem) return report_error("--problem: " + problem.status().message());
  if (Status timer = check_timer_options(a.timing); !timer.ok()) return report_error(timer.message());

  auto session = open_session(a.session);
  if (!session) return report_error(session.status().message());
  Session& s = **session;
  const RunTarget& target = s.target();
  // Opened before the run, so that a store that cannot record it says so before any GPU time is spent.
  std::unique_ptr<ResultsStore> store;
  if (!a.no_store && target.device) {
    auto opened = ResultsStore::open(a.db);
    if (!opened) return report_error(opened.status().message() + " (or --no-store)");
    store = std::move(*opened);
  }
  RunOptions ro;
  ro.timing = a.timing;
  ro.timing.repeat = a.repeat;
  ro.timing.warmup = a.warmup;
  ro.timing.measure_dram = a.dram;
  ro.keep_data = !a.dump.empty();
  ro.vs = a.vs;
  ro.timeline = ro.timeline_timed = a.timeline;
  auto bench = s.bench(a.kernel, *problem, *config, ro);
  if (!bench) return report_error(bench.status().message());
  const PreparedKernel* prepared = &bench->prepared;
  const RunRecord& r = bench->record;

  if (store) {
    auto id = store->insert(r, session_run_context(s, prepared->instance));
    if (!id) return report_error(id.status().message());
    std::printf("stored as run %lld in %s\n", static_cast<long long>(*id), store->path().c_str());
  }

  std::printf("%s  %s  problem %s  config %s\n", r.device.empty() ? target.device->name.c_str() : r.device.c_str(),
              r.name_expression.c_str(), prepared->instance.problem.to_string().c_str(),
              prepared->instance.config.to_string().c_str());
  print_run_table({r});
  if (r.baseline) print_baseline(r);
  if (r.time_ms.count > 0) std::printf("%s\n", timer_summary(r).c_str());
  if (a.timeline) {
    if (r.timeline && r.timeline_time_ms.median > 0 && r.time_ms.median > 0)
      std::printf("probes on: %.4f ms median (%+.2f%% vs off, runs alternated in one worker), %zu events, %llu dropped\n",
                  r.timeline_time_ms.median, (r.timeline_time_ms.median / r.time_ms.median - 1) * 100,
                  r.timeline->events.size(), static_cast<unsigned long long>(r.timeline->dropped_marks()));
    else if (!r.failure)
      std::printf("probes on: no timeline: %s\n", r.timeline_error.empty() ? "not timed" : r.timeline_error.c_str());
  }
  if (!r.efficiency.bound.empty())
    std::printf("efficiency: %s-bound, against the measured %s ceiling (%s)\n", r.efficiency.bound.c_str(),
                r.efficiency.ceiling.c_str(),
                r.efficiency.bound == "memory" ? (format_number(r.efficiency.ceiling_value * 1e-9, "%.0f") + " GB/s").c_str()
                                               : (format_number(r.efficiency.ceiling_value * 1e-12, "%.1f") + " TFLOP/s").c_str());
  else if (!r.failure && r.time_ms.count > 0)
    std::printf("efficiency: no measured ceilings for this GPU yet (run `tilelab info --measure` once)\n");
  if (r.dram && r.dram->measured)
    std::printf("DRAM: %s read + %s written = %.2fx the minimum bytes (CUPTI, one launch, cold L2)\n",
                format_number(r.dram->read_bytes * 1e-6, "%.3f MB").c_str(),
                format_number(r.dram->write_bytes * 1e-6, "%.3f MB").c_str(),
                r.min_bytes > 0 ? (r.dram->read_bytes + r.dram->write_bytes) / r.min_bytes : 0.0);
  else if (r.dram)
    std::printf("DRAM: not measured: %s\n", r.dram->reason.c_str());

  if (!a.json.empty()) {
    if (Status s = write_file_atomic(a.json, nlohmann::json(r).dump(2) + "\n"); !s.ok()) return report_error(s.message());
  }
  if (!a.dump.empty() && !r.failure) {
    Status s = dump_run(a.dump, r);
    if (!s.ok()) return report_error(s.message());
    std::printf("dumped inputs, outputs and reference samples (.npy) to %s\n", a.dump.c_str());
  }
  if (r.failure) {
    const char* what = r.failure->code == ErrorCode::fault     ? "the kernel faulted"
                       : r.failure->code == ErrorCode::timeout ? "the kernel timed out"
                                                               : "the run failed";
    return report_error(std::string(what) + ": " + r.failure->message);
  }
  if (!r.verified) return report_error(r.failure_text());
  return 0;
}

}  // namespace

void add_bench_command(CLI::App& app, Context& ctx) {
  auto* cmd = app.add_subcommand("bench", "Run one kernel config on the GPU: check against the reference, time it");
  auto a = std::make_shared<BenchArgs>();
  cmd->add_option("kernel", a->kernel, "Kernel name (see `tilelab kernels`)")->required();
  cmd->add_option("--problem", a->problem, "Problem as key=value,... (sizes and dtype; defaults for the rest)");
  cmd->add_option("--config", a->config, "Config as key=value,... (defaults for the rest)");
  cmd->add_option("--repeat", a->repeat, "Timed runs (0: check only, no timing)")->capture_default_str()->check(in_range(0, 100000));
  cmd->add_option("--warmup", a->warmup, "Untimed runs before timing")->capture_default_str()->check(in_range(0, 10000));
  add_timer_options(cmd, a->timing);
  cmd->add_option("--json", a->json, "Write the run record as JSON to FILE");
  cmd->add_option("--dump", a->dump, "Write inputs, outputs and reference samples as .npy files into DIR");
  cmd->add_option("--vs", a->vs,
                  "Also time the same problem in the same process on the same buffers with: cublas (GEMMs), cudnn "
                  "(attention forward: cuDNN's SDPA; libcudnn from $TL_CUDNN_LIBRARY or the loader's path)")
      ->check(CLI::IsMember({"cublas", "cudnn"}));
  cmd->add_flag("--timeline", a->timeline, "Also time the probe build (-DTL_TIMELINE=1) the same way and report the probe "
                                           "overhead and the recorded timeline's size");
  cmd->add_flag("--dram", a->dram,
                "Also measure the DRAM bytes one launch reads and writes (CUPTI range profiler; libcupti opened at run "
                "time), for the roofline's actual intensity");
  cmd->add_option("--db", a->db, "Results store the run is recorded in (default: $TILELAB_DB or ~/.local/share/tilelab/results.db)");
  cmd->add_flag("--no-store", a->no_store, "Do not record the run in the results store");
  add_session_options(cmd, a->session);
  cmd->callback([&ctx, a] { ctx.exit_code = run_bench(*a); });
}

}  // namespace tl::cli
