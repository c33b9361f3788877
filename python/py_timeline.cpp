// tilelab.Timeline (stats, Chrome trace, plots), load_timeline, the roofline (points and plot) and the sweep heat map.
#include <fstream>

#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "py_common.hpp"
#include "runtime/results/roofline.hpp"
#include "viz/heatmap_scene.hpp"
#include "viz/roofline_scene.hpp"
#include "viz/timeline_scene.hpp"

namespace tl::py {

namespace {

using nb::literals::operator""_a;

PyPlot plot_timeline(const PyTimeline& pt, const std::string& view, double t0, double t1, int tracks, int first_track,
                     double width, const std::string& title) {
  const Timeline& t = *pt.timeline;
  if (width <= 0) width = view == "gantt" ? 1400 : 1000;
  if (view == "stats") return PyPlot{viz::build_region_stats_scene(t, region_statistics(t), width), "timeline"};
  if (view == "occupancy") return PyPlot{viz::build_occupancy_scene(t, stage_occupancy(t), width), "timeline"};
  if (view != "gantt") raise(ErrorCode::invalid_argument, "plot: unknown view '" + view + "' (gantt, stats or occupancy)");
  viz::GanttStyle style;
  style.width = width;
  style.t0_ns = t0 * 1e3;
  style.t1_ns = t1 * 1e3;
  if (tracks > 0) style.max_tracks = tracks;
  style.first_track = first_track;
  style.title = title;
  return PyPlot{viz::build_gantt_scene(t, style), "timeline"};
}

std::vector<nlohmann::json> records_of(nb::handle runs) {
  std::vector<nlohmann::json> records;
  for (nb::handle r : runs) {
    // A run result (its "record") or a RunRecord dict itself.
    if (nb::isinstance<nb::dict>(r) && nb::borrow<nb::dict>(r).contains("record")) records.push_back(to_json(r["record"]));
    else records.push_back(to_json(r));
  }
  return records;
}

// The ceilings a roofline is drawn against, as tilelab roofline and tl.plot.roofline find them.
CeilingsSource ceilings_for(const std::string& profile, const std::vector<nlohmann::json>& records) {
  Session& s = session();
  Result<CeilingsSource> c = make_error(ErrorCode::internal, "unset");
  if (profile.empty() && s.has_device()) {
    auto measured = s.ceilings();
    c = measured ? Result<CeilingsSource>(CeilingsSource{*measured, "GPU 0"}) : Result<CeilingsSource>(measured.status());
  } else {
    c = find_ceilings(profile, s.cache_dir(), records);
  }
  if (!c && c.status().code() == ErrorCode::not_found && profile.empty())
    raise(ErrorCode::not_found, "roofline: " + c.status().message() +
                                    ": pass device_profile=FILE (write one on the GPU machine with `tilelab info "
                                    "--measure --save-profile FILE`)");
  if (!c) raise(c.status().code(), "roofline: " + c.status().message());
  return std::move(*c);
}

}  // namespace

void bind_timelines(nb::module_& m) {
  nb::class_<PyTimeline>(m, "Timeline", "A per-warp pipeline timeline: recorded on the GPU, or a MODEL.")
      .def_prop_ro("kernel", [](const PyTimeline& t) { return t.timeline->kernel; })
      .def_prop_ro("label", [](const PyTimeline& t) { return t.timeline->label; })
      .def_prop_ro("model", [](const PyTimeline& t) { return t.timeline->model; })
      .def_prop_ro("duration_ns", [](const PyTimeline& t) { return t.timeline->duration_ns; })
      .def_prop_ro("events", [](const PyTimeline& t) { return t.timeline->events.size(); })
      .def_prop_ro("tracks", [](const PyTimeline& t) { return t.timeline->tracks.size(); })
      .def_prop_ro("blocks", [](const PyTimeline& t) { return t.timeline->blocks.size(); })
      .def_prop_ro("dropped_marks", [](const PyTimeline& t) { return t.timeline->dropped_marks(); })
      .def("stats",
           [](const PyTimeline& pt) {
             const Timeline& t = *pt.timeline;
             return to_python(timeline_summary_json(t, region_statistics(t), stage_occupancy(t)));
           })
      .def("chrome_trace", [](const PyTimeline& t) { return to_python(to_chrome_trace(*t.timeline)); })
      .def(
          "trace",
          [](const PyTimeline& t, const std::string& path) {
            std::ofstream out(path, std::ios::binary);
            out << to_chrome_trace(*t.timeline).dump() << '\n';
            if (!out) raise(ErrorCode::io, "cannot write '" + path + "'");
            return path;
          },
          "path"_a, "Writes the Chrome trace (opens in Perfetto).")
      .def("plot", &plot_timeline, "view"_a = "gantt", "t0"_a = 0.0, "t1"_a = 0.0, "tracks"_a = 0, "first_track"_a = 0,
           "width"_a = 0.0, "title"_a = "")
      .def("__repr__", [](const PyTimeline& pt) {
        const Timeline& t = *pt.timeline;
        return "tilelab.Timeline(" + std::string(t.model ? "MODEL " : "") + t.kernel + ", " +
               std::to_string(t.events.size()) + " events)";
      });

  m.def("load_timeline", [](const std::string& path) {
    return PyTimeline{std::make_shared<const Timeline>(take(read_chrome_trace(path)))};
  });

  m.def(
      "roofline",
      [](nb::handle runs, const std::string& profile, const std::vector<std::string>& kernels) {
        const std::vector<nlohmann::json> records = records_of(runs);
        const CeilingsSource c = ceilings_for(profile, records);
        const Roofline model = take(Roofline::from_ceilings(c.ceilings));
        const RooflineSet set = roofline_points(model, records, kernels);
        nlohmann::json j = roofline_to_json(model, set.points);
        j["ceilings_from"] = c.from;
        j["skipped"] = set.skipped;
        return to_python(j);
      },
      "runs"_a, "device_profile"_a = "", "kernels"_a = std::vector<std::string>{});
  m.def(
      "plot_roofline",
      [](nb::handle runs, const std::string& profile, const std::string& color_by, const std::string& title,
         double width, double height) {
        const std::vector<nlohmann::json> records = records_of(runs);
        viz::RooflineOptions o;
        o.color_by = color_by;
        o.title = title;
        if (width > 0) o.width = width;
        if (height > 0) o.height = height;
        auto scene = viz::build_roofline_scene(ceilings_for(profile, records).ceilings, records, o);
        if (!scene) raise(scene.status().code(), "roofline: " + scene.status().message());
        return PyPlot{std::move(scene->scene), "roofline"};
      },
      "runs"_a, "device_profile"_a = "", "color_by"_a = "", "title"_a = "", "width"_a = 0.0, "height"_a = 0.0);
  m.def(
      "plot_heatmap",
      [](nb::handle results, const std::string& x, const std::string& y, const std::string& metric,
         const std::string& title) {
        viz::HeatmapOptions o;
        o.x = x;
        o.y = y;
        if (!metric.empty()) o.metric = metric;
        o.title = title;
        std::vector<nlohmann::json> records;
        for (nb::handle r : results) records.push_back(to_json(r));
        auto h = viz::build_heatmap_scene(records, o);
        if (!h) raise(h.status().code(), "heatmap: " + h.status().message());
        return PyPlot{std::move(h->scene), "heatmap"};
      },
      "results"_a, "x"_a, "y"_a, "metric"_a = "", "title"_a = "");
}

}  // namespace tl::py
