// Timeline panel: Gantt view rebuilt for the visible time window (level of detail), hover, selection statistics;
// region statistics and stage occupancy views; a run's timeline, a model one, or a Chrome trace file.
#include <cstdio>
#include <algorithm>
#include <cmath>
#include <map>

#include <imgui.h>

#include "app/gui/app.hpp"
#include "library/library.hpp"

namespace tl::gui {

void TimelinePanel::set(std::shared_ptr<const Timeline> t, std::string from) {
  m_timeline = std::move(t);
  m_from = std::move(from);
  m_t0 = 0;
  m_t1 = m_timeline ? m_timeline->duration_ns : 0;
  m_first_track = 0;
  m_sel0 = m_sel1 = -1;
  m_dirty = true;
  m_stats = m_timeline ? region_statistics(*m_timeline) : std::vector<RegionStats>{};
  m_occupancy.reset();
  m_side_built = -1;
}

Status TimelinePanel::load_trace(const std::string& path) {
  auto t = read_chrome_trace(path);
  if (!t) return t.status();
  std::snprintf(m_path, sizeof(m_path), "%s", path.c_str());
  set(std::make_shared<const Timeline>(std::move(*t)), path);
  return Status::success();
}

void TimelinePanel::model_of_open_kernel(App& app) {
  if (!app.instance()) {
    app.message(Message::Level::error, "model timeline: " + app.instance().status().message());
    return;
  }
  const DeviceInfo* dev = app.has_device() ? &app.system().devices.front() : nullptr;
  const Ceilings* c = app.ceilings() ? &*app.ceilings() : nullptr;
  auto t = model_timeline(*app.instance(), model_device(c, dev));
  if (!t) {
    app.message(Message::Level::error, "model timeline: " + t.status().message());
    return;
  }
  set(std::make_shared<const Timeline>(std::move(*t)), "model of " + app.workspace().kernel);
}

void TimelinePanel::draw(App& app) {
  // Sources: a run with a timeline, the model of the open config, or a trace file.
  if (ImGui::Button("Model of open config")) model_of_open_kernel(app);
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("computed from the config and the device ceilings, no GPU needed (gemm.wgmma, gemm.mma)");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(220);
  ImGui::InputText("##trace", m_path, sizeof(m_path));
  ImGui::SameLine();
  if (ImGui::Button("Load trace")) {
    Status st = load_trace(m_path);
    if (!st) app.message(Message::Level::error, st.message());
  }
  ImGui::SameLine();
  ImGui::BeginDisabled(!m_timeline);
  if (ImGui::Button("Save trace") && m_timeline) {
    Status st = save_chrome_trace(*m_timeline, m_path);
    app.message(st ? Message::Level::info : Message::Level::error, st ? std::string("wrote ") + m_path : st.message());
  }
  ImGui::EndDisabled();
  for (const auto& r : app.runs()) {
    if (!r.timeline) continue;
    ImGui::SameLine();
    const std::string label = "run " + std::to_string(r.id);
    if (ImGui::SmallButton(label.c_str())) set(r.timeline, label);
  }
  if (!m_timeline) {
    ImGui::TextDisabled("No timeline. Capture one from the sidebar (GPU), compute the model of the open config, or "
                        "load a Chrome trace (tilelab timeline --out x.json).");
    return;
  }
  const Timeline& t = *m_timeline;
  ImGui::Text("%s%s  %s  %zu events, %zu tracks, %s", t.model ? "MODEL  " : "", m_from.c_str(), t.kernel.c_str(),
              t.events.size(), t.tracks.size(), viz::format_duration_ns(t.duration_ns).c_str());
  if (t.model && ImGui::IsItemHovered()) ImGui::SetTooltip("%s", t.model_note.c_str());
  ImGui::RadioButton("Gantt", &m_view, 0);
  ImGui::SameLine();
  ImGui::RadioButton("Region statistics", &m_view, 1);
  ImGui::SameLine();
  ImGui::RadioButton("Stage occupancy", &m_view, 2);

  if (m_view != 0) {
    if (m_side_built != m_view) {
      m_side_built = m_view;
      if (m_view == 1) {
        m_side_scene = viz::build_region_stats_scene(t, m_stats);
      } else {
        if (!m_occupancy) m_occupancy = stage_occupancy(t);
        m_side_scene = viz::build_occupancy_scene(t, *m_occupancy);
      }
      m_side_view.fitted = false;
    }
    viz::scene_canvas("##tl_side", m_side_scene, m_side_view, ImGui::GetContentRegionAvail());
    return;
  }

  // Gantt: the scene is rebuilt for the window [t0, t1] at the canvas width, so zoom never scales bars.
  ImGui::SameLine();
  ImGui::TextDisabled("   wheel: zoom time, drag: pan, shift+wheel: scroll tracks, right-drag: select, "
                      "double-click: all");
  const ImVec2 size = ImGui::GetContentRegionAvail();
  const float stats_h = m_sel1 > m_sel0 ? 130.0f : 0.0f;
  const ImVec2 canvas(std::max(100.0f, size.x), std::max(80.0f, size.y - stats_h));
  if (m_t1 <= m_t0) m_t1 = m_t0 + std::max(1.0, t.duration_ns);
  viz::GanttStyle style;
  style.width = canvas.x;
  style.t0_ns = m_t0;
  style.t1_ns = m_t1;
  style.first_track = m_first_track;
  style.max_tracks = std::max(1, static_cast<int>((canvas.y - 60) / (style.row_height + style.row_gap)));
  style.legend = true;
  if (m_dirty || m_built_width != canvas.x || m_built.t0_ns != style.t0_ns || m_built.t1_ns != style.t1_ns ||
      m_built.first_track != style.first_track || m_built.max_tracks != style.max_tracks) {
    m_scene = viz::build_gantt_scene(t, style, &m_info);
    m_built = style;
    m_built_width = canvas.x;
    m_dirty = false;
  }
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  ImGui::InvisibleButton("##gantt", canvas, ImGuiButtonFlags_MouseButtonLeft | ImGuiButtonFlags_MouseButtonRight);
  const bool hovered = ImGui::IsItemHovered();
  ImGuiIO& io = ImGui::GetIO();
  const double plot_x0 = m_info.plot_x0, plot_x1 = m_info.plot_x1;
  auto time_at = [&](float sx) {
    const double f = std::clamp((sx - origin.x - plot_x0) / std::max(1.0, plot_x1 - plot_x0), 0.0, 1.0);
    return m_t0 + f * (m_t1 - m_t0);
  };
  if (hovered) {
    if (io.MouseWheel != 0 && io.KeyShift) {
      m_first_track = std::clamp(m_first_track - static_cast<int>(io.MouseWheel * 3), 0,
                                 std::max(0, static_cast<int>(t.tracks.size()) - 1));
    } else if (io.MouseWheel != 0) {
      const double at = time_at(io.MousePos.x);
      const double k = std::pow(0.8, io.MouseWheel);
      const double span = std::max(1.0, (m_t1 - m_t0) * k);
      const double f = (at - m_t0) / std::max(1e-9, m_t1 - m_t0);
      m_t0 = at - f * span;
      m_t1 = m_t0 + span;
    }
    if (ImGui::IsMouseDragging(ImGuiMouseButton_Left)) {
      const double dt = -io.MouseDelta.x / std::max(1.0, plot_x1 - plot_x0) * (m_t1 - m_t0);
      m_t0 += dt;
      m_t1 += dt;
    }
    if (ImGui::IsMouseClicked(ImGuiMouseButton_Right)) {
      m_sel0 = m_sel1 = time_at(io.MousePos.x);
      m_selecting = true;
    }
    if (ImGui::IsMouseDoubleClicked(ImGuiMouseButton_Left)) {
      m_t0 = 0;
      m_t1 = t.duration_ns;
      m_first_track = 0;
    }
  }
  if (m_selecting) {
    m_sel1 = time_at(io.MousePos.x);
    if (!ImGui::IsMouseDown(ImGuiMouseButton_Right)) {
      m_selecting = false;
      if (m_sel1 < m_sel0) std::swap(m_sel0, m_sel1);
      if (m_sel1 - m_sel0 <= 0) m_sel0 = m_sel1 = -1;
    }
  }
  viz::View view;  // 1:1, the scene is built at the canvas size
  ImDrawList* draw = ImGui::GetWindowDrawList();
  const std::int64_t hit = viz::draw_scene(draw, m_scene, view, origin, canvas, io.MousePos);
  if (m_sel0 >= 0 && m_sel1 != m_sel0) {
    auto x_of = [&](double tt) {
      return origin.x + static_cast<float>(plot_x0 + (tt - m_t0) / (m_t1 - m_t0) * (plot_x1 - plot_x0));
    };
    float a = std::max(origin.x + static_cast<float>(plot_x0), x_of(std::min(m_sel0, m_sel1)));
    float b = std::min(origin.x + static_cast<float>(plot_x1), x_of(std::max(m_sel0, m_sel1)));
    if (b > a) draw->AddRectFilled(ImVec2(a, origin.y), ImVec2(b, origin.y + canvas.y), IM_COL32(80, 160, 255, 50));
  }
  if (hovered && hit >= 0 && static_cast<std::size_t>(hit) < t.events.size()) {
    const TimelineEvent& e = t.events[static_cast<std::size_t>(hit)];
    std::string stage = e.stage == kNoStage ? "-" : std::to_string(e.stage);
    ImGui::SetTooltip("%s\n%s\nstart %s, duration %s\nstage %s, aux %u%s", t.region_name(e.region).c_str(),
                      t.tracks[e.track].name().c_str(), viz::format_duration_ns(e.start_ns).c_str(),
                      viz::format_duration_ns(e.duration_ns()).c_str(), stage.c_str(), e.aux,
                      e.unterminated ? "\n(unterminated: closed at the warp's last mark)" : "");
  } else if (hovered && io.MousePos.x - origin.x > plot_x0) {
    ImGui::SetTooltip("%s", viz::format_duration_ns(time_at(io.MousePos.x)).c_str());
  }
  if (stats_h > 0 && !m_selecting) {
    // Selection statistics over every track (not only those shown): per region, events starting in the range.
    struct Acc {
      std::uint64_t n = 0;
      double total = 0, max = 0;
    };
    std::map<int, Acc> acc;
    for (const auto& e : t.events) {
      if (e.start_ns < m_sel0 || e.start_ns > m_sel1 || e.instant) continue;
      Acc& a = acc[e.region];
      ++a.n;
      a.total += e.duration_ns();
      a.max = std::max(a.max, e.duration_ns());
    }
    ImGui::Text("selection %s .. %s (%s):", viz::format_duration_ns(m_sel0).c_str(),
                viz::format_duration_ns(m_sel1).c_str(), viz::format_duration_ns(m_sel1 - m_sel0).c_str());
    ImGui::SameLine();
    if (ImGui::SmallButton("zoom to selection")) {
      m_t0 = m_sel0;
      m_t1 = m_sel1;
    }
    ImGui::SameLine();
    if (ImGui::SmallButton("clear")) m_sel0 = m_sel1 = -1;
    if (ImGui::BeginTable("##selstats", 5, ImGuiTableFlags_Borders | ImGuiTableFlags_RowBg | ImGuiTableFlags_ScrollY)) {
      ImGui::TableSetupColumn("region");
      ImGui::TableSetupColumn("count");
      ImGui::TableSetupColumn("total");
      ImGui::TableSetupColumn("mean");
      ImGui::TableSetupColumn("max");
      ImGui::TableHeadersRow();
      for (const auto& [r, a] : acc) {
        ImGui::TableNextRow();
        ImGui::TableNextColumn();
        const viz::Color c = viz::region_color(r);
        ImGui::TextColored(ImVec4(c.r, c.g, c.b, 1), "%s", t.region_name(r).c_str());
        ImGui::TableNextColumn();
        ImGui::Text("%llu", static_cast<unsigned long long>(a.n));
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(viz::format_duration_ns(a.total).c_str());
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(viz::format_duration_ns(a.total / static_cast<double>(a.n)).c_str());
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(viz::format_duration_ns(a.max).c_str());
      }
      ImGui::EndTable();
    }
  }
}

}  // namespace tl::gui
