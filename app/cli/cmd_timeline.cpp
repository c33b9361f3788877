// `tilelab timeline KERNEL`: record (GPU) or model (--model) a pipeline timeline; Chrome trace / PNG / SVG / PDF, stats.
#include <cstdio>
#include <filesystem>
#include <iostream>

#include <nlohmann/json.hpp>

#include "app/cli/commands.hpp"
#include "app/cli/run_support.hpp"
#include "library/library.hpp"
#include "runtime/core/files.hpp"
#include "runtime/trace/timeline.hpp"
#include "runtime/worker/client.hpp"
#include "viz/cairo_painter.hpp"
#include "viz/timeline_scene.hpp"

namespace tl::cli {
namespace {

struct TimelineArgs {
  SessionArgs session{60};
  std::string kernel, problem, config, out, view = "gantt", stats_json;
  bool model = false, stats = false;
  double t0_us = 0, t1_us = 0, width = 1400;
  int tracks = 64, first_track = 0, repeat = 3, warmup = 1;
  std::uint32_t capacity = 0;
};

std::string lower_extension(const std::string& path) {
  std::string ext = std::filesystem::path(path).extension().string();
  if (!ext.empty()) ext.erase(0, 1);
  for (auto& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return ext;
}

void print_stats(const Timeline& t, const std::vector<RegionStats>& stats, const StageOccupancy& occ) {
  std::printf("%-16s %9s %12s %12s %12s %12s %12s\n", "region", "count", "mean", "median", "p90", "max", "total");
  for (const auto& s : stats) {
    if (s.count == 0) {
      std::printf("%-16s %9s  %llu instants\n", s.name.c_str(), "-", static_cast<unsigned long long>(s.instants));
      continue;
    }
    std::printf("%-16s %9llu %12s %12s %12s %12s %12s", s.name.c_str(), static_cast<unsigned long long>(s.count),
                viz::format_duration_ns(s.mean_ns).c_str(), viz::format_duration_ns(s.median_ns).c_str(),
                viz::format_duration_ns(s.p90_ns).c_str(), viz::format_duration_ns(s.max_ns).c_str(),
                viz::format_duration_ns(s.total_ns).c_str());
    if (s.instants) std::printf("  (+%llu instants)", static_cast<unsigned long long>(s.instants));
    std::printf("\n");
  }
  std::printf("stages in flight: mean %.2f, max %d", occ.mean, occ.max_in_flight);
  if (t.num_stages > 0) std::printf(" of num_stages=%d", t.num_stages);
  std::printf("\n");
}

int run_timeline_command(const TimelineArgs& a) {
  if (a.out.empty() && !a.stats && a.stats_json.empty())
    return report_error("timeline: give --out FILE (.json Chrome trace, .png, .svg, .pdf), --stats or --stats-json FILE");
  std::string format;
  if (!a.out.empty()) {
    format = lower_extension(a.out);
    if (format != "json" && !viz::parse_image_format(format))
      return report_error("timeline: cannot tell the format of '" + a.out + "' from its extension: use .json (Chrome "
                          "trace, opens in Perfetto), .png, .svg or .pdf");
  }
  if (a.t1_us > 0 && a.t1_us <= a.t0_us)
    return report_error("timeline: --t1 " + format_number(a.t1_us) + " must be after --t0 " + format_number(a.t0_us) +
                        " (µs; --t1 0 is the end of the run)");
  if (a.view != "gantt" && a.view != "stats" && a.view != "occupancy")
    return report_error("timeline: unknown --view '" + a.view + "' (gantt, stats or occupancy)");
  auto config = parse_key_values(a.config);
  if (!config) return report_error("--config: " + config.status().message());
  auto problem = parse_key_values(a.problem);
  if (!problem) return report_error("--problem: " + problem.status().message());
  auto session = open_session(a.session);
  if (!session) return report_error(session.status().message());
  Session& s = **session;
  const RunTarget& target = s.target();
  auto spec = s.registry().find(a.kernel);
  if (!spec) return report_error(spec.status().message());
  // The checks that build nothing (schemas, can_implement), then the GPU, then the instance (its host data).
  if (auto valid = validate(**spec, *problem, *config, target.limits); !valid)
    return report_error("invalid problem/config: " + valid.status().message());

  Timeline t;
  if (a.model) {
    auto inst = s.instantiate(a.kernel, *problem, *config);
    if (!inst) return report_error("invalid problem/config: " + inst.status().message());
    const ModelDevice device = model_device(target.ceilings ? &*target.ceilings : nullptr,
                                            target.device ? &*target.device : nullptr);
    auto m = model_timeline(*inst, device);
    if (!m) return report_error(m.status().message());
    t = std::move(*m);
  } else {
    if ((*spec)->probes.empty())
      return report_error(a.kernel + " records no timeline (it has no probes); kernels with probes: gemm.wgmma, gemm.mma");
    if (!target.device)
      return report_error("cannot record a timeline of " + a.kernel + ": no GPU: " + target.why_no_device +
                          "\n  use --model for a timeline computed from the config (labelled as a model)");
    auto prepared = s.prepare(a.kernel, *problem, *config);
    if (!prepared) return report_error(prepared.status().message());
    Status built = add_timeline_build(s.jit(), *prepared);
    if (!built.ok()) return report_error(built.message());
    RunOptions ro;
    ro.timing.repeat = a.repeat;
    ro.timing.warmup = a.warmup;
    ro.timeline = true;
    ro.timeline_capacity = a.capacity;
    RunRecord r = s.run(*prepared, ro);
    if (r.failure) return report_error("the run failed: " + r.failure_text());
    if (!r.timeline) return report_error("no timeline: " + r.timeline_error);
    if (!r.verified) std::fprintf(stderr, "tilelab: warning: the run did not verify: %s\n", r.failure_text().c_str());
    t = std::move(*r.timeline);
  }

  std::printf("%s%s  %s\n", t.model ? "MODEL timeline (computed from the config, not measured)  " : "", t.kernel.c_str(),
              t.label.c_str());
  if (t.model) std::printf("model: %s\n", t.model_note.c_str());
  std::printf("%zu events on %zu tracks, %zu blocks, %s", t.events.size(), t.tracks.size(), t.blocks.size(),
              viz::format_duration_ns(t.duration_ns).c_str());
  if (t.dropped_marks()) std::printf(", %llu marks DROPPED (raise --capacity)", static_cast<unsigned long long>(t.dropped_marks()));
  std::printf("\n");
  for (const auto& w : t.warnings) std::printf("warning: %s\n", w.c_str());

  const auto stats = region_statistics(t);
  const auto occ = stage_occupancy(t);
  if (a.stats) print_stats(t, stats, occ);
  if (!a.stats_json.empty()) {
    Status s = write_file_atomic(a.stats_json, timeline_summary_json(t, stats, occ).dump(2) + "\n");
    if (!s.ok()) return report_error(s.message());
  }
  if (a.out.empty()) return 0;
  if (format == "json") {
    Status s = save_chrome_trace(t, a.out);
    if (!s.ok()) return report_error(s.message());
  } else {
    viz::Scene scene;
    if (a.view == "stats") {
      scene = viz::build_region_stats_scene(t, stats, a.width);
    } else if (a.view == "occupancy") {
      scene = viz::build_occupancy_scene(t, occ, a.width);
    } else {
      viz::GanttStyle style;
      style.width = a.width;
      style.t0_ns = a.t0_us * 1e3;
      style.t1_ns = a.t1_us * 1e3;
      style.max_tracks = a.tracks;
      style.first_track = a.first_track;
      scene = viz::build_gantt_scene(t, style);
    }
    Status s = viz::write_scene(scene, a.out);
    if (!s.ok()) return report_error(s.message());
  }
  std::printf("wrote %s\n", a.out.c_str());
  return 0;
}

}  // namespace

void add_timeline_command(CLI::App& app, Context& ctx) {
  auto* cmd = app.add_subcommand("timeline", "Record (GPU) or model (--model) a kernel's per-warp pipeline timeline");
  auto a = std::make_shared<TimelineArgs>();
  cmd->add_option("kernel", a->kernel, "Kernel name (gemm.wgmma, gemm.mma)")->required();
  cmd->add_option("--problem", a->problem, "Problem as key=value,...");
  cmd->add_option("--config", a->config, "Config as key=value,...");
  cmd->add_flag("--model", a->model, "No GPU needed: compute the timeline from the config and the device ceilings "
                                     "(labelled as a model everywhere)");
  cmd->add_option("-o,--out", a->out, "Output: .json (Chrome trace, opens in Perfetto), .png, .svg or .pdf");
  cmd->add_option("--view", a->view, "Image view: gantt, stats or occupancy")->capture_default_str();
  cmd->add_flag("--stats", a->stats, "Print per-region statistics and stage occupancy");
  cmd->add_option("--stats-json", a->stats_json, "Write the statistics and occupancy as JSON to FILE");
  cmd->add_option("--t0", a->t0_us, "Gantt zoom window start, µs")->check(in_range(0, 1e12, "µs"));
  cmd->add_option("--t1", a->t1_us, "Gantt zoom window end, µs (0: the whole run)")->check(in_range(0, 1e12, "µs"));
  cmd->add_option("--tracks", a->tracks, "Gantt rows shown (0: all)")->capture_default_str()->check(in_range(0, 1e6));
  cmd->add_option("--first-track", a->first_track, "First Gantt row shown")->capture_default_str()->check(in_range(0, 1e9));
  cmd->add_option("--width", a->width, "Image width in points")->capture_default_str()->check(in_range(200, 20000));
  cmd->add_option("--capacity", a->capacity, "Marks per warp in the probe buffer (default: from the kernel's spec)")
      ->check(in_range(1, 1 << 18));
  cmd->add_option("--repeat", a->repeat, "Timed runs before the probe run")->capture_default_str()->check(in_range(0, 100000));
  cmd->add_option("--warmup", a->warmup, "Untimed runs before timing")->capture_default_str()->check(in_range(0, 10000));
  add_session_options(cmd, a->session);
  cmd->callback([&ctx, a] { ctx.exit_code = run_timeline_command(*a); });
}

}  // namespace tl::cli
