// `tilelab roofline`: runs from result files drawn on a device's measured roofline, or exported as JSON/CSV.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>

#include <nlohmann/json.hpp>

#include "app/cli/commands.hpp"
#include "app/cli/run_support.hpp"
#include "runtime/core/files.hpp"
#include "runtime/core/log.hpp"
#include "runtime/device/device_profile.hpp"
#include "runtime/results/results_store.hpp"
#include "runtime/results/roofline.hpp"
#include "runtime/worker/client.hpp"
#include "viz/cairo_painter.hpp"
#include "viz/roofline_scene.hpp"

namespace tl::cli {
namespace {

namespace fs = std::filesystem;

struct RooflineArgs {
  std::vector<std::string> from, kernels;
  std::string profile, color_by, out, title, cache_dir;
  ResultsQuery store_filter;  // --since, --sweep, --best: which rows of a .db source
  double width = 960, height = 620;
};

std::string lower_ext(const std::string& path) {
  std::string e = fs::path(path).extension().string();
  std::transform(e.begin(), e.end(), e.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return e;
}

// Run records of one --from source: a result file, or a results store (.db: the stored runs `filter` selects that
// have a record; sweep points skipped as invalid have none). A store is only read: a missing .db is an error, not a
// new store.
Result<std::vector<nlohmann::json>> load_run_source(const std::string& path, const ResultsQuery& filter) {
  if (lower_ext(path) != ".db") return load_run_records(path);
  auto store = ResultsStore::open_read_only(path);
  if (!store) return store.status();
  auto rows = (*store)->query(filter);
  if (!rows) return rows.status();
  std::vector<nlohmann::json> records;
  for (const auto& row : *rows)
    if (row.record.is_object() && !row.record.empty()) records.push_back(row.record);
  return records;
}

void print_points(const std::vector<RooflinePoint>& points) {
  if (points.empty()) return;
  std::printf("%-40s %10s %10s %-8s %6s %11s %11s\n", "run", "FLOP/B", "TFLOP/s", "bound", "eff", "predicted", "measured");
  const std::size_t shown = std::min<std::size_t>(points.size(), 40);
  for (std::size_t i = 0; i < shown; ++i) {
    const auto& p = points[i];
    std::string name = p.kernel + (p.config.empty() ? "" : " " + p.config_text());
    if (name.size() > 40) name = name.substr(0, 37) + "...";
    std::printf("%-40s %10.3g %10.4g %-8s %5.1f%% %8.4g ms %8.4g ms\n", name.c_str(), p.intensity, p.flops_per_s * 1e-12,
                p.bound.c_str(), p.efficiency * 100, p.predicted_ms, p.measured_ms);
  }
  if (shown < points.size()) std::printf("... and %zu more (all of them in a .json or .csv --out)\n", points.size() - shown);
}

int run_roofline(const RooflineArgs& a) {
  const std::string ext = lower_ext(a.out);
  const bool data = ext == ".json" || ext == ".csv";
  std::optional<viz::ImageFormat> image;
  if (!data) {
    auto f = viz::image_format_from_path(a.out);
    if (!f) return report_error("--out " + a.out + ": use .png, .svg, .pdf (the plot) or .json, .csv (the data)");
    image = *f;
  }
  std::vector<nlohmann::json> records;
  for (const auto& path : a.from) {
    auto r = load_run_source(path, a.store_filter);
    if (!r) return report_error(r.status().message());
    records.insert(records.end(), r->begin(), r->end());
  }
  auto ceilings = find_ceilings(a.profile, a.cache_dir, records);
  if (!ceilings && ceilings.status().code() == ErrorCode::not_found && a.profile.empty())
    return report_error(ceilings.status().message() +
                        ": pass --device-profile FILE (write one on the GPU machine with `tilelab info --measure "
                        "--save-profile FILE`)");
  if (!ceilings) return report_error(ceilings.status().message());
  auto model = Roofline::from_ceilings(ceilings->ceilings);
  if (!model) return report_error(ceilings->from + ": " + model.status().message());
  RooflineSet set = roofline_points(*model, records, a.kernels);

  std::printf("ceilings: %s\n", ceilings->from.c_str());
  if (!a.from.empty() && set.points.empty() && set.skipped.empty())
    std::printf("no runs%s in %zu file(s): drawing the ceilings only\n",
                a.kernels.empty() ? "" : " of the given --kernel", a.from.size());
  print_points(set.points);
  for (const auto& s : set.skipped) std::printf("not drawn: %s\n", s.c_str());

  if (data) {
    std::string text = ext == ".json" ? roofline_to_json(*model, set.points).dump(2) + "\n" : points_to_csv(set.points);
    if (Status s = write_file_atomic(a.out, text); !s.ok()) return report_error(s.message());
  } else {
    viz::RooflineOptions o;
    o.title = a.title;
    o.color_by = a.color_by;
    o.width = a.width;
    o.height = a.height;
    auto scene = viz::build_roofline_scene(*model, set.points, o);
    if (!scene) return report_error(scene.status().message());
    for (const auto& n : scene->notes) std::printf("not drawn: %s\n", n.c_str());
    if (Status s = viz::write_scene(scene->scene, a.out, image); !s.ok()) return report_error(s.message());
  }
  std::printf("wrote %s (%zu point%s)\n", a.out.c_str(), set.points.size(), set.points.size() == 1 ? "" : "s");
  return 0;
}

}  // namespace

void add_roofline_command(CLI::App& app, Context& ctx) {
  auto* cmd = app.add_subcommand("roofline", "Draw runs on this device's measured roofline, or export the points");
  auto a = std::make_shared<RooflineArgs>();
  cmd->add_option("--from", a->from,
                  "Result files: a RunRecord JSON object (`tilelab bench --json`), an array of them, JSON lines, or a "
                  "results store (.db)");
  cmd->add_option("--kernel", a->kernels, "Only runs of this kernel (repeatable)");
  cmd->add_option("--since", a->store_filter.since, "From a results store (.db): only runs at or after this UTC date or time");
  cmd->add_option("--sweep", a->store_filter.sweep_id, "From a results store (.db): only the runs of this sweep");
  cmd->add_option("--best", a->store_filter.best,
                  "From a results store (.db): only the best passed run of each kernel and problem by METRIC (tflops, gbps, "
                  "efficiency)");
  cmd->add_option("--device-profile", a->profile,
                  "Ceilings from this device profile (`tilelab info --measure --save-profile FILE`); default: this "
                  "machine's GPU 0, else the cached ceilings");
  cmd->add_option("--color-by", a->color_by, "Colour the points by this config (or problem) parameter; default: by kernel");
  cmd->add_option("--title", a->title, "Plot title (default: the device and when its ceilings were measured)");
  cmd->add_option("--width", a->width, "Plot width in scene units (pixels in PNG)")->check(in_range(400, 8000));
  cmd->add_option("--height", a->height, "Plot height")->check(in_range(300, 8000));
  cmd->add_option("--cache-dir", a->cache_dir, "Ceilings cache directory (default: $TILELAB_CACHE_DIR or ~/.cache/tilelab)");
  cmd->add_option("--out", a->out, "Output: .png, .svg, .pdf (the plot) or .json, .csv (the points and ceilings)")
      ->required();
  cmd->callback([&ctx, a] { ctx.exit_code = run_roofline(*a); });
}

}  // namespace tl::cli
