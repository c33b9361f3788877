// Timeline panel: Gantt view rebuilt for the visible time window (level of detail), hover, selection statistics;
// region statistics and stage occupancy views; a run's timeline, a model one, or a Chrome trace file; two of them
// compared (pinned A over B on one time window).
#include <cstdio>
#include <algorithm>
#include <cmath>
#include <map>

#include <imgui.h>

#include "app/gui/app.hpp"
#include "library/library.hpp"

namespace tl::gui {

void TimelinePanel::set(std::shared_ptr<const Timeline> t, std::string from) {
  m_timeline = t;
  m_shown = Slot();
  m_shown.timeline = std::move(t);
  m_shown.from = std::move(from);
  if (m_timeline) m_shown.stats = region_statistics(*m_timeline);
  m_t0 = 0;
  m_t1 = m_timeline ? m_timeline->duration_ns : 0;
  if (m_pinned) m_t1 = std::max(m_t1, m_pinned->timeline->duration_ns);
  m_first_track = 0;
  m_sel0 = m_sel1 = -1;
}

bool TimelinePanel::pin() {
  if (!m_timeline) return false;
  m_pinned = m_shown;
  m_pinned->dirty = true;
  m_pinned->side_built = -1;
  return true;
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
  ImGui::SetNextItemWidth(ui(220));
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
  same_line_if_room(ui(160));
  if (m_pinned) {
    if (ImGui::Button("End comparison")) unpin();
  } else {
    ImGui::BeginDisabled(!m_timeline);
    if (ImGui::Button("Pin to compare")) (void)pin();
    ImGui::EndDisabled();
    if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled))
      ImGui::SetTooltip("keep this timeline as A; the next one shown (a run, a model, a trace) is drawn under it as B");
  }
  for (const auto& r : app.runs()) {
    if (!r.timeline) continue;
    const std::string label = "run " + std::to_string(r.id);
    same_line_if_room(ImGui::CalcTextSize(label.c_str()).x + ui(12));
    if (ImGui::SmallButton(label.c_str())) set(r.timeline, label);
  }
  if (!m_timeline) {
    ImGui::TextWrapped("No timeline. Capture one from the sidebar (GPU), compute the model of the open config, or "
                       "load a Chrome trace (tilelab timeline --out x.json).");
    return;
  }
  auto describe = [](const Slot& slot) {
    const Timeline& t = *slot.timeline;
    return strf("%s%s  %s  %zu events, %zu tracks, %s", t.model ? "MODEL  " : "", slot.from.c_str(), t.kernel.c_str(),
                t.events.size(), t.tracks.size(), viz::format_duration_ns(t.duration_ns).c_str());
  };
  if (m_pinned) text_fit("A: " + describe(*m_pinned));
  text_fit((m_pinned ? "B: " : "") + describe(m_shown));
  if (m_timeline->model && ImGui::IsItemHovered()) ImGui::SetTooltip("%s", m_timeline->model_note.c_str());
  ImGui::RadioButton("Gantt", &m_view, 0);
  ImGui::SameLine();
  ImGui::RadioButton("Region statistics", &m_view, 1);
  ImGui::SameLine();
  ImGui::RadioButton("Stage occupancy", &m_view, 2);
  if (m_view == 0) {
    ImGui::SameLine();
    text_fit_dim("  wheel: zoom time, drag: pan, shift+wheel: scroll tracks, right-drag: select, double-click: all");
  }

  const ImVec2 size = ImGui::GetContentRegionAvail();
  if (m_view != 0) {
    // Side by side when comparing: A on the left, B on the right.
    if (m_pinned) {
      const float w = (size.x - ImGui::GetStyle().ItemSpacing.x) / 2;
      draw_side(app, *m_pinned, "##tl_side_a", ImVec2(w, size.y));
      ImGui::SameLine();
      draw_side(app, m_shown, "##tl_side_b", ImVec2(w, size.y));
    } else {
      draw_side(app, m_shown, "##tl_side", size);
    }
    return;
  }
  // Gantt: the scene is rebuilt for the window [t0, t1] at the canvas size, so zoom never scales bars. Compared
  // timelines share the window, so the same time is at the same x in both.
  const float stats_h = m_sel1 > m_sel0 ? ui(130) : 0.0f;
  const float gantt_h = std::max(ui(80), size.y - stats_h);
  if (m_t1 <= m_t0) m_t1 = m_t0 + std::max(1.0, m_timeline->duration_ns);
  if (m_pinned) {
    const float h = (gantt_h - ImGui::GetStyle().ItemSpacing.y) / 2;
    draw_gantt(app, *m_pinned, "##gantt_a", ImVec2(std::max(ui(100), size.x), h), false);
    draw_gantt(app, m_shown, "##gantt_b", ImVec2(std::max(ui(100), size.x), h), true);
  } else {
    draw_gantt(app, m_shown, "##gantt", ImVec2(std::max(ui(100), size.x), gantt_h), true);
  }
  if (stats_h > 0 && !m_selecting) draw_selection_stats(*m_timeline);
}

void TimelinePanel::draw_side(App& app, Slot& slot, const char* id, ImVec2 canvas) {
  const Timeline& t = *slot.timeline;
  if (slot.side_built != m_view || slot.theme != app.theme_generation() || slot.side_size.x != canvas.x ||
      slot.side_size.y != canvas.y) {
    slot.side_built = m_view;
    slot.theme = app.theme_generation();
    slot.side_size = canvas;
    const double w = canvas.x / app.ui_scale(), h = canvas.y / app.ui_scale();
    if (m_view == 1) {
      slot.side = viz::build_region_stats_scene(t, slot.stats, w, app.plot_theme());
    } else {
      if (!slot.occupancy) slot.occupancy = stage_occupancy(t);
      slot.side = viz::build_occupancy_scene(t, *slot.occupancy, w, h, app.plot_theme());
    }
    slot.side_view.fitted = false;
  }
  viz::scene_canvas(id, slot.side, slot.side_view, canvas);
}

void TimelinePanel::draw_gantt(App& app, Slot& slot, const char* id, ImVec2 canvas, bool with_selection) {
  const Timeline& t = *slot.timeline;
  const double scale = app.ui_scale();
  viz::GanttStyle style;
  style.width = canvas.x / scale;
  style.height = canvas.y / scale;
  style.t0_ns = m_t0;
  style.t1_ns = m_t1;
  style.first_track = m_first_track;
  style.max_tracks = 0;  // as many as the height holds
  style.theme = app.plot_theme();
  if (m_pinned) style.title = std::string(&slot == &*m_pinned ? "A: " : "B: ") + slot.from + "  ·  " + t.kernel;
  if (slot.dirty || slot.theme != app.theme_generation() || slot.built.width != style.width ||
      slot.built.height != style.height || slot.built.t0_ns != style.t0_ns || slot.built.t1_ns != style.t1_ns ||
      slot.built.first_track != style.first_track || slot.built.title != style.title) {
    slot.gantt = viz::build_gantt_scene(t, style, &slot.info);
    slot.built = style;
    slot.theme = app.theme_generation();
    slot.dirty = false;
  }
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  ImGui::InvisibleButton(id, canvas, ImGuiButtonFlags_MouseButtonLeft | ImGuiButtonFlags_MouseButtonRight);
  const bool hovered = ImGui::IsItemHovered();
  ImGuiIO& io = ImGui::GetIO();
  const double plot_x0 = slot.info.plot_x0 * scale, plot_x1 = slot.info.plot_x1 * scale;
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
    if (with_selection && ImGui::IsMouseClicked(ImGuiMouseButton_Right)) {
      m_sel0 = m_sel1 = time_at(io.MousePos.x);
      m_selecting = true;
    }
    if (ImGui::IsMouseDoubleClicked(ImGuiMouseButton_Left)) {
      m_t0 = 0;
      m_t1 = std::max(t.duration_ns, m_pinned ? m_pinned->timeline->duration_ns : 0.0);
      if (m_timeline) m_t1 = std::max(m_t1, m_timeline->duration_ns);
      m_first_track = 0;
    }
  }
  if (with_selection && m_selecting) {
    m_sel1 = time_at(io.MousePos.x);
    if (!ImGui::IsMouseDown(ImGuiMouseButton_Right)) {
      m_selecting = false;
      if (m_sel1 < m_sel0) std::swap(m_sel0, m_sel1);
      if (m_sel1 - m_sel0 <= 0) m_sel0 = m_sel1 = -1;
    }
  }
  viz::View view;  // the scene is built at the canvas size: zoom is the UI scale only
  view.zoom = scale;
  ImDrawList* draw = ImGui::GetWindowDrawList();
  const std::int64_t hit = viz::draw_scene(draw, slot.gantt, view, origin, canvas, io.MousePos, id);
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
}

// Selection statistics over every track (not only those shown): per region, events starting in the range.
void TimelinePanel::draw_selection_stats(const Timeline& t) {
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
  text_fit(strf("selection %s – %s (%s):", viz::format_duration_ns(m_sel0).c_str(),
                viz::format_duration_ns(m_sel1).c_str(), viz::format_duration_ns(m_sel1 - m_sel0).c_str()));
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

}  // namespace tl::gui
