// Chrome trace -> Timeline: the inverse of to_chrome_trace, tolerant of traces written by other tools.
#include "app/gui/trace_import.hpp"

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

namespace tl::gui {

Result<Timeline> timeline_from_chrome_trace(const nlohmann::json& trace) {
  using nlohmann::json;
  const json* events = nullptr;
  if (trace.is_object() && trace.contains("traceEvents") && trace["traceEvents"].is_array())
    events = &trace["traceEvents"];
  else if (trace.is_array())
    events = &trace;
  if (!events) return make_error(ErrorCode::parse, "not a Chrome trace: no \"traceEvents\" array");
  const json other = trace.is_object() ? trace.value("otherData", json::object()) : json::object();

  std::vector<std::string> regions;
  std::map<std::string, int> region_of;
  if (other.contains("regions") && other["regions"].is_array())
    for (const auto& r : other["regions"])
      if (r.is_string()) {
        region_of.emplace(r.get<std::string>(), static_cast<int>(regions.size()));
        regions.push_back(r.get<std::string>());
      }
  auto region = [&](const std::string& name) {
    auto [it, added] = region_of.emplace(name, static_cast<int>(regions.size()));
    if (added) regions.push_back(name);
    return it->second;
  };

  struct Ev {
    int region;
    std::uint8_t stage;
    std::uint32_t aux;
    double t0, t1;
    bool instant;
  };
  struct Track {
    int sm, block, warp;
    std::vector<Ev> events;
    std::vector<std::pair<std::string, double>> open;  // B events waiting for their E
  };
  std::map<std::pair<long long, long long>, Track> tracks;  // (pid, tid)
  std::size_t skipped = 0;
  for (const auto& e : *events) {
    if (!e.is_object()) continue;
    const std::string ph = e.value("ph", "");
    if (ph != "X" && ph != "i" && ph != "I" && ph != "B" && ph != "E") {
      if (ph != "M") ++skipped;
      continue;
    }
    if (!e.contains("ts") || !e["ts"].is_number()) {
      ++skipped;
      continue;
    }
    const long long pid = e.value("pid", 0LL), tid = e.value("tid", 0LL);
    const json args = e.value("args", json::object());
    auto [it, added] = tracks.try_emplace({pid, tid});
    Track& tr = it->second;
    if (added) {
      // Ours: pid = SM + 1 and block/warp in args; anything else: the pid as the SM, the tid as the warp.
      tr.sm = static_cast<int>(args.contains("block") ? pid - 1 : pid);
      tr.block = args.value("block", static_cast<int>(pid));
      tr.warp = args.value("warp", static_cast<int>(tid));
    }
    const double ts_ns = e["ts"].get<double>() * 1e3;
    const std::string name = e.value("name", "?");
    const auto stage = static_cast<std::uint8_t>(args.value("stage", static_cast<int>(kNoStage)));
    const auto aux = args.value("aux", 0u);
    if (ph == "B") {
      tr.open.emplace_back(name, ts_ns);
    } else if (ph == "E") {
      if (tr.open.empty()) {
        ++skipped;
        continue;
      }
      auto [bname, t0] = tr.open.back();
      tr.open.pop_back();
      tr.events.push_back({region(bname), stage, aux, t0, ts_ns, false});
    } else if (ph == "X") {
      const double dur = e.value("dur", 0.0) * 1e3;
      tr.events.push_back({region(name), stage, aux, ts_ns, ts_ns + dur, false});
    } else {
      tr.events.push_back({region(name), stage, aux, ts_ns, ts_ns, true});
    }
  }
  std::size_t total = 0;
  for (const auto& [k, tr] : tracks) total += tr.events.size();
  if (total == 0) return make_error(ErrorCode::parse, "the Chrome trace has no X, i or B/E events to show");

  TimelineBuilder b(regions);
  for (auto& [k, tr] : tracks) {
    if (tr.events.empty()) continue;
    std::stable_sort(tr.events.begin(), tr.events.end(), [](const Ev& x, const Ev& y) { return x.t0 < y.t0; });
    b.begin_warp(tr.sm, tr.block, tr.warp);
    for (const Ev& e : tr.events) {
      if (e.instant) b.instant(e.region, e.stage, e.aux, e.t0);
      else b.interval(e.region, e.stage, e.aux, e.t0, e.t1);
    }
  }
  Timeline t = b.finish();
  t.kernel = other.value("kernel", "");
  t.label = other.value("label", "");
  t.device = other.value("device", "");
  t.num_stages = other.value("num_stages", 0);
  t.model = other.value("model", false);
  if (t.model) t.model_note = other.value("model_note", "");
  if (skipped) t.warnings.push_back(std::to_string(skipped) + " trace events of other kinds were skipped");
  return t;
}

Result<Timeline> load_chrome_trace(const std::string& path) {
  std::ifstream in(path);
  if (!in) return make_error(ErrorCode::not_found, "cannot open trace " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  auto j = nlohmann::json::parse(ss.str(), nullptr, false);
  if (j.is_discarded()) return make_error(ErrorCode::parse, path + " is not valid JSON");
  auto t = timeline_from_chrome_trace(j);
  if (!t) return t.status().with_context(path);
  return t;
}

}  // namespace tl::gui
