// Sweep panel: edit a space, start and stop a sweep of the open kernel on the job thread, watch its heat map fill.
#include <algorithm>

#include <imgui.h>

#include "app/gui/app.hpp"

namespace tl::gui {

void SweepPanel::set_axes(std::string x, std::string y, std::string metric) {
  if (!x.empty()) m_x = std::move(x);
  if (!y.empty()) m_y = std::move(y);
  if (!metric.empty()) m_metric = std::move(metric);
}

// The first two swept parameters (one: both axes from it and its neighbour in the config) and the metric a sweep
// without a GPU can show.
void SweepPanel::choose_defaults(App& app) {
  const SweepState& s = app.sweep_state();
  auto swept = [&](const std::string& p) {
    return std::any_of(s.space.begin(), s.space.end(), [&](const auto& ax) { return ax.first == p; });
  };
  if (!s.space.empty() && !swept(m_x)) m_x = s.space[0].first;
  if (s.space.size() > 1 && (!swept(m_y) || m_y == m_x)) m_y = s.space[1].first == m_x ? s.space[0].first : s.space[1].first;
  if (s.space.size() == 1 && m_y.empty() && app.spec())
    for (const auto& p : app.spec()->config.params)
      if (p.name != m_x) {
        m_y = p.name;  // one swept axis: a single row of cells against a parameter held fixed
        break;
      }
  const auto metrics = sweep_metrics(s.any_ran);
  if (m_metric.empty() || std::find(metrics.begin(), metrics.end(), m_metric) == metrics.end())
    m_metric = s.any_ran ? "tflops" : "registers";
}

const viz::HeatmapScene* SweepPanel::heatmap(App& app) {
  const SweepState& s = app.sweep_state();
  choose_defaults(app);
  const std::string key = m_x + "|" + m_y + "|" + m_metric + "|" + std::to_string(app.theme_generation());
  if (s.generation != m_built_generation || key != m_built_key) {
    m_built_generation = s.generation;
    m_built_key = key;
    m_scene.reset();
    m_error.clear();
    if (!s.points.empty()) {
      viz::HeatmapOptions o;
      o.x = m_x;
      o.y = m_y;
      o.metric = m_metric;
      o.theme = app.plot_theme();
      auto h = viz::build_heatmap_scene(s.points, o);
      if (h) {
        m_scene = std::move(*h);
        m_view.fitted = false;
      } else {
        m_error = h.status().message();
      }
    }
  }
  return m_scene ? &*m_scene : nullptr;
}

void SweepPanel::draw(App& app) {
  const SweepState& s = app.sweep_state();
  if (!app.spec()) {
    ImGui::TextDisabled("no kernel open");
    return;
  }
  // A space to start from whenever another kernel is opened.
  // (The space of a sweep of this kernel already started, by a script say, stays in the field.)
  if (m_kernel != app.workspace().kernel) {
    m_kernel = app.workspace().kernel;
    const std::string suggestion = s.kernel == m_kernel && !s.space_text.empty()
                                       ? s.space_text
                                       : suggest_sweep_space(app.spec()->config, app.config());
    std::snprintf(space, sizeof space, "%s", suggestion.c_str());
  }
  ImGui::SetNextItemWidth(std::max(200.0f, ImGui::GetContentRegionAvail().x - 500 - ui(120)));
  ImGui::InputTextWithHint("space", "block_M=64,128;block_N=64,128", space, sizeof space);
  if (ImGui::IsItemHovered()) {
    std::string params;
    for (const auto& p : app.spec()->config.params) params += "\n  " + p.name + ": " + p.describe_allowed();
    ImGui::SetTooltip("Axes 'name=v1,v2;name=v1,v2' over config parameters of %s:%s", m_kernel.c_str(), params.c_str());
  }
  same_line_if_room(ui(120));
  ImGui::SetNextItemWidth(ui(70));
  ImGui::InputTextWithHint("GPUs", "0", gpus, sizeof gpus);
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("The GPUs the sweep runs on, a worker each, each taking the next point when it is free: all, "
                      "or indices like 0,1 (empty: GPU 0)");
  same_line_if_room(button_width("suggest"));
  if (ImGui::SmallButton("suggest")) {
    const std::string suggestion = suggest_sweep_space(app.spec()->config, app.config());
    std::snprintf(space, sizeof space, "%s", suggestion.c_str());
  }
  same_line_if_room(button_width("Start sweep"));
  ImGui::BeginDisabled(s.running);
  if (ImGui::Button("Start sweep")) {
    Status st = app.start_sweep(space, gpus);
    if (!st) app.message(Message::Level::error, st.message());
  }
  ImGui::EndDisabled();
  same_line_if_room(button_width("Stopping..."));
  ImGui::BeginDisabled(!s.running || s.stopping);
  if (ImGui::Button(s.stopping ? "Stopping..." : "Stop")) app.stop_sweep();
  ImGui::EndDisabled();
  if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled))
    ImGui::SetTooltip("Stops after the current point; starting the same sweep again skips the points it stored");
  // Sweeps recorded in the store (this app's and `tilelab sweep`'s): their rows fill the heat map again.
  same_line_if_room(ui(150));
  ImGui::SetNextItemWidth(ui(150));
  if (ImGui::BeginCombo("##recorded", "recorded sweeps", ImGuiComboFlags_HeightLarge)) {
    if (!m_stored_loaded) {
      m_stored_loaded = true;  // asked once per opening; the list arrives from the store's thread
      app.load_sweeps();
    }
    if (m_stored.empty()) ImGui::TextDisabled("none recorded (yet)");
    for (auto it = m_stored.rbegin(); it != m_stored.rend(); ++it) {
      const std::string label = it->id + "  " + it->kernel + "  " + std::to_string(it->runs) + " rows  " + it->updated;
      if (ImGui::Selectable(label.c_str(), it->id == s.id)) {
        Status st = app.show_stored_sweep(it->id);
        if (!st) app.message(Message::Level::error, st.message());
      }
    }
    ImGui::EndCombo();
  } else {
    m_stored_loaded = false;
  }

  std::string problem;
  for (const auto& [k, v] : app.problem()) problem += (problem.empty() ? "" : ",") + k + "=" + v;
  ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
  if (s.from_store)
    ImGui::TextWrapped("Showing a sweep recorded in the results store (its rows as stored); Start sweep runs the "
                       "space above at the sidebar's problem.");
  else
    ImGui::TextWrapped("%s at problem %s; the sidebar's config sets the parameters not swept. %s", m_kernel.c_str(),
                       problem.empty() ? "(defaults)" : problem.c_str(),
                       app.has_device()
                           ? (app.record_runs() ? "Each result is stored as it arrives." : "Not recorded (record runs is off).")
                           : "No GPU: every point is compiled and its resources reported; runs are not stored (invalid "
                             "points are, as skipped, like `tilelab sweep`).");
  ImGui::PopStyleColor();

  if (s.running || s.total > 0) {
    const float frac = s.total ? static_cast<float>(s.done) / static_cast<float>(s.total) : 0.0f;
    char label[128];
    std::snprintf(label, sizeof label, "%zu / %zu points%s", s.done, s.total, s.stopping ? " (stopping after this one)" : "");
    ImGui::ProgressBar(frac, ImVec2(std::min(500.0f, ImGui::GetContentRegionAvail().x), 0), label);
    ImGui::SameLine();
    text_fit_dim(strf("sweep %s, %zu stored", s.id.c_str(), s.stored));
  }
  if (!s.summary.empty()) ImGui::TextWrapped("%s", s.summary.c_str());
  if (!s.error.empty()) ImGui::TextColored(error_color(), "%s", s.error.c_str());
  if (s.points.empty()) {
    if (!s.running) ImGui::TextDisabled("Start a sweep to see its heat map here.");
    return;
  }

  // Axes and metric: the swept parameters first, then the rest of the config.
  std::vector<std::string> params;
  for (const auto& [name, values] : s.space) params.push_back(name);
  for (const auto& p : app.spec()->config.params)
    if (std::find(params.begin(), params.end(), p.name) == params.end()) params.push_back(p.name);
  auto combo = [](const char* label, std::string& value, const std::vector<std::string>& choices) {
    ImGui::SetNextItemWidth(ui(150));
    if (ImGui::BeginCombo(label, value.c_str())) {
      for (const auto& c : choices)
        if (ImGui::Selectable(c.c_str(), c == value)) value = c;
      ImGui::EndCombo();
    }
  };
  combo("x", m_x, params);
  same_line_if_room(ui(150) + label_width("y"));
  combo("y", m_y, params);
  same_line_if_room(ui(150) + label_width("metric"));
  combo("metric", m_metric, sweep_metrics(s.any_ran));

  const viz::HeatmapScene* h = heatmap(app);
  if (!h) {
    ImGui::TextColored(error_color(), "heat map: %s", m_error.c_str());
    return;
  }
  const ImVec2 size = ImGui::GetContentRegionAvail();
  if (!m_view.fitted) {
    // Fit into 92% of the canvas, centred: the title's text runs past the scene's cells.
    const ImVec2 inner(size.x * 0.92f, size.y * 0.92f);
    viz::fit_view(m_view, h->scene, inner);
    m_view.pan_x -= (size.x - inner.x) * 0.5 / m_view.zoom;
    m_view.pan_y -= (size.y - inner.y) * 0.5 / m_view.zoom;
    m_view.fitted = true;
  }
  const std::int64_t hovered = viz::scene_canvas("##heatmap", h->scene, m_view, size);
  if (hovered >= 0 && static_cast<std::size_t>(hovered) < h->cells.size()) {
    const viz::HeatmapCell& c = h->cells[static_cast<std::size_t>(hovered)];
    ImGui::BeginTooltip();
    ImGui::Text("%s=%s, %s=%s", m_x.c_str(), c.x.c_str(), m_y.c_str(), c.y.c_str());
    if (c.value) ImGui::Text("%s: %.4g (best of %zu)", m_metric.c_str(), *c.value, c.records);
    else ImGui::Text("%s (%zu record%s)", c.status.c_str(), c.records, c.records == 1 ? "" : "s");
    ImGui::EndTooltip();
  }
}

}  // namespace tl::gui
