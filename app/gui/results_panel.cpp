// Results panel: the results store's history and this session's runs, filtered, sorted, two compared.
#include <algorithm>
#include <cinttypes>

#include <imgui.h>

#include "app/gui/app.hpp"

namespace tl::gui {
namespace {


std::string cell(const nlohmann::json& v) {
  if (v.is_null()) return "-";
  return v.is_string() ? v.get<std::string>() : v.dump();
}

std::string row_name(const HistoryRow& r) {
  return r.run.id > 0 ? "run " + std::to_string(r.run.id) : "session run s" + std::to_string(r.session_run);
}

}  // namespace

void ResultsPanel::add_rows(std::vector<HistoryRow> rows) {
  merge_history(m_rows, std::move(rows));
  m_kernels = history_kernels(m_rows);
  m_dirty = true;
}

const std::vector<std::size_t>& ResultsPanel::order() {
  if (m_dirty) {
    m_order = history_order(m_rows, m_view);
    m_dirty = false;
  }
  return m_order;
}

const HistoryRow* ResultsPanel::find(std::int64_t key) const {
  if (key == 0) return nullptr;
  for (const auto& r : m_rows)
    if (r.key() == key) return &r;
  return nullptr;
}

bool ResultsPanel::pick(std::int64_t a, std::int64_t b) {
  if (!find(a) || !find(b)) return false;
  m_pick_a = a;
  m_pick_b = b;
  return true;
}

const nlohmann::json& ResultsPanel::comparison() {
  const HistoryRow* a = find(m_pick_a);
  const HistoryRow* b = find(m_pick_b);
  if (!a || !b) {
    m_compare = nullptr;
    m_compared_a = m_compared_b = 0;
  } else if (m_compared_a != m_pick_a || m_compared_b != m_pick_b || m_compare.is_null()) {
    m_compare = compare_runs(a->run, b->run);  // the comparison `tilelab results --compare` prints
    m_compared_a = m_pick_a;
    m_compared_b = m_pick_b;
  }
  return m_compare;
}

void ResultsPanel::draw(App& app) {
  // [header] where the rows come from, the kernel filter, recording
  const std::vector<std::string>& kernels = m_kernels;
  ImGui::SetNextItemWidth(ui(200));
  if (ImGui::BeginCombo("kernel", m_view.kernel.empty() ? "(all kernels)" : m_view.kernel.c_str())) {
    if (ImGui::Selectable("(all kernels)", m_view.kernel.empty())) set_filter("");
    for (const auto& k : kernels)
      if (ImGui::Selectable(k.c_str(), k == m_view.kernel)) set_filter(k);
    ImGui::EndCombo();
  }
  same_line_if_room(button_width("open kernel"));
  if (ImGui::SmallButton("open kernel") && app.spec()) set_filter(app.workspace().kernel);
  same_line_if_room(button_width("loading..."));
  ImGui::BeginDisabled(m_loading);
  if (ImGui::SmallButton(m_loading ? "loading..." : "reload")) app.load_history();
  ImGui::EndDisabled();
  same_line_if_room(check_width("record runs"));
  bool record = app.record_runs();
  if (ImGui::Checkbox("record runs", &record)) app.set_record_runs(record);
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("Store this app's runs and sweep points in the results store, as `tilelab bench` and "
                      "`tilelab sweep` do (off: --no-store)");
  same_line_if_room(ui(220));
  ImGui::SetNextItemWidth(ui(220));
  if (ImGui::InputTextWithHint("##db", "other store (.db), Enter", m_db_path, sizeof(m_db_path),
                               ImGuiInputTextFlags_EnterReturnsTrue) &&
      m_db_path[0])
    app.set_results_db(m_db_path);

  const std::vector<std::size_t>& shown = order();
  std::size_t stored = 0;
  for (const auto& r : m_rows) stored += r.run.id > 0;
  if (!m_error.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, error_color());
    ImGui::TextWrapped("%s", m_error.c_str());
    ImGui::PopStyleColor();
  } else if (m_loading && m_rows.empty()) {
    text_fit_dim("loading history from " + (app.results_db().empty() ? default_results_db_path() : app.results_db()) +
                 " …");
  } else {
    text_fit_dim(strf("%zu of %zu rows: %zu from %s%s, %zu of this session not stored", shown.size(), m_rows.size(),
                      stored, m_db.c_str(), m_loaded >= static_cast<std::size_t>(App::kHistoryLimit) ? " (newest)" : "",
                      m_rows.size() - stored));
  }
  if (m_rows.empty() && !m_loading) {
    if (app.has_device()) ImGui::TextWrapped("No runs yet: run a kernel from the sidebar (Run + verify, Bench), or "
                                             "start a sweep (Sweep tab).");
    else ImGui::TextWrapped("No runs stored yet, and running needs a GPU (%s).", app.why_no_device().c_str());
  }

  // [table]
  const nlohmann::json& cmp = comparison();
  const float compare_h = cmp.is_null() ? 24.0f : 300.0f;
  const ImGuiTableFlags flags = ImGuiTableFlags_Sortable | ImGuiTableFlags_RowBg | ImGuiTableFlags_Borders |
                                ImGuiTableFlags_Resizable | ImGuiTableFlags_ScrollY | ImGuiTableFlags_ScrollX;
  const int ncol = static_cast<int>(HistoryColumn::count);
  if (ImGui::BeginTable("##history", ncol, flags, ImVec2(0, std::max(80.0f, ImGui::GetContentRegionAvail().y - compare_h)))) {
    ImGui::TableSetupScrollFreeze(0, 1);
    for (int c = 0; c < ncol; ++c) {
      ImGuiTableColumnFlags f = 0;
      if (c == static_cast<int>(HistoryColumn::pick)) f = ImGuiTableColumnFlags_NoSort | ImGuiTableColumnFlags_WidthFixed;
      if (c == static_cast<int>(HistoryColumn::id))
        f = ImGuiTableColumnFlags_DefaultSort | ImGuiTableColumnFlags_PreferSortDescending | ImGuiTableColumnFlags_WidthFixed;
      ImGui::TableSetupColumn(kHistoryColumnNames[c], f, c <= 1 ? 34.0f : 0.0f);
    }
    ImGui::TableHeadersRow();
    if (ImGuiTableSortSpecs* specs = ImGui::TableGetSortSpecs(); specs && specs->SpecsDirty) {
      if (specs->SpecsCount > 0) {
        m_view.sort = static_cast<HistoryColumn>(specs->Specs[0].ColumnIndex);
        m_view.ascending = specs->Specs[0].SortDirection == ImGuiSortDirection_Ascending;
        m_dirty = true;
      }
      specs->SpecsDirty = false;
    }
    const std::vector<std::size_t>& rows = order();
    ImGuiListClipper clipper;
    clipper.Begin(static_cast<int>(rows.size()));
    while (clipper.Step())
      for (int i = clipper.DisplayStart; i < clipper.DisplayEnd; ++i) {
        const HistoryRow& h = m_rows[rows[static_cast<std::size_t>(i)]];
        const StoredRun& r = h.run;
        const std::int64_t key = h.key();
        ImGui::TableNextRow();
        ImGui::PushID(static_cast<int>(key));
        ImGui::TableNextColumn();
        bool picked = key == m_pick_a || key == m_pick_b;
        if (ImGui::Checkbox("##pick", &picked)) {
          if (picked) {
            m_pick_a = m_pick_b;
            m_pick_b = key;
          } else {
            if (m_pick_a == key) m_pick_a = 0;
            if (m_pick_b == key) m_pick_b = 0;
          }
        }
        ImGui::TableNextColumn();
        char id[32];
        if (r.id > 0) std::snprintf(id, sizeof id, "%" PRId64, r.id);
        else std::snprintf(id, sizeof id, "s%d", h.session_run);
        if (ImGui::Selectable(id, h.session_run > 0 && app.selected_run == h.session_run,
                              ImGuiSelectableFlags_SpanAllColumns | ImGuiSelectableFlags_AllowItemOverlap) &&
            h.session_run > 0) {
          app.selected_run = h.session_run;
          if (const RunEntry* e = app.find_run(h.session_run); e && e->timeline)
            app.timeline.set(e->timeline, "run " + std::to_string(e->id));
        }
        if (ImGui::IsItemHovered())
          ImGui::SetTooltip("%s%s%s\ndevice: %s%s\nsource hash: %s", r.sweep_id.empty() ? "" : "sweep ",
                            r.sweep_id.c_str(), h.session_run > 0 ? " (this session)" : "", r.device.c_str(),
                            r.gpu >= 0 ? (" (GPU " + std::to_string(r.gpu) + ")").c_str() : "", r.source_hash.c_str());
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(r.time.c_str());
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(r.kernel.c_str());
        ImGui::TableNextColumn();
        ImGui::TextColored(r.status == "passed" ? ok_color() : error_color(), "%s", r.status.c_str());
        if (ImGui::IsItemHovered() && !r.failure_message.empty())
          ImGui::SetTooltip("%s: %s", r.failure_kind.c_str(), r.failure_message.c_str());
        const bool timed = r.median_ms > 0;
        ImGui::TableNextColumn();
        if (timed) ImGui::Text("%.4f", r.median_ms);
        else ImGui::TextDisabled("-");
        ImGui::TableNextColumn();
        if (timed) ImGui::TextUnformatted(r.timer.c_str());
        else ImGui::TextDisabled("-");
        ImGui::TableNextColumn();
        if (timed && r.tflops > 0) ImGui::Text("%.1f", r.tflops);
        else ImGui::TextDisabled("-");
        ImGui::TableNextColumn();
        if (timed) ImGui::Text("%.0f", r.gbps);
        else ImGui::TextDisabled("-");
        ImGui::TableNextColumn();
        if (timed && r.efficiency > 0) ImGui::Text("%.0f", 100 * r.efficiency);
        else ImGui::TextDisabled("-");
        ImGui::TableNextColumn();
        if (r.status == "passed" || r.status == "failed") ImGui::Text("%.2e", r.rel_error);
        else ImGui::TextDisabled("-");
        ImGui::TableNextColumn();
        ImGui::Text("%d", static_cast<int>(*r.metric("registers")));
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(h.config_text.c_str());
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(h.problem_text.c_str());
        ImGui::PopID();
      }
    ImGui::EndTable();
  }

  // [comparison] compare_runs: differing config/problem values, every metric with b / a
  if (cmp.is_null()) {
    if (!m_rows.empty()) ImGui::TextDisabled("tick two rows (cmp) to compare them");
    return;
  }
  const HistoryRow* a = find(m_pick_a);
  const HistoryRow* b = find(m_pick_b);
  if (ImGui::SmallButton("clear")) m_pick_a = m_pick_b = 0;
  // Two runs of this session with timelines: side by side (pinned A over B) in the Timeline panel.
  const RunEntry* run_a = a->session_run > 0 ? app.find_run(a->session_run) : nullptr;
  const RunEntry* run_b = b->session_run > 0 ? app.find_run(b->session_run) : nullptr;
  if (run_a && run_b && run_a->timeline && run_b->timeline) {
    ImGui::SameLine();
    if (ImGui::SmallButton("compare timelines")) {
      app.timeline.set(run_a->timeline, row_name(*a));
      (void)app.timeline.pin();
      app.timeline.set(run_b->timeline, row_name(*b));
      (void)app.show_panel("Timeline");
    }
  }
  ImGui::SameLine();
  text_fit(strf("%s (%s, %s) vs %s (%s, %s)", row_name(*a).c_str(), a->run.kernel.c_str(), a->run.status.c_str(),
                row_name(*b).c_str(), b->run.kernel.c_str(), b->run.status.c_str()));
  if (ImGui::BeginTable("##compare", 4, ImGuiTableFlags_Borders | ImGuiTableFlags_RowBg | ImGuiTableFlags_ScrollY,
                        ImVec2(0, 0))) {
    ImGui::TableSetupScrollFreeze(0, 1);
    ImGui::TableSetupColumn("");
    ImGui::TableSetupColumn(row_name(*a).c_str());
    ImGui::TableSetupColumn(row_name(*b).c_str());
    ImGui::TableSetupColumn("b / a");
    ImGui::TableHeadersRow();
    auto text_row = [](const std::string& what, const std::string& x, const std::string& y) {
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(what.c_str());
      ImGui::TableNextColumn();
      ImGui::TextColored(warn_color(), "%s", x.c_str());
      ImGui::TableNextColumn();
      ImGui::TextColored(warn_color(), "%s", y.c_str());
      ImGui::TableNextColumn();
    };
    if (cmp["kernel"][0] != cmp["kernel"][1]) text_row("kernel", cell(cmp["kernel"][0]), cell(cmp["kernel"][1]));
    if (cmp["device"][0] != cmp["device"][1]) text_row("device", cell(cmp["device"][0]), cell(cmp["device"][1]));
    for (const auto& [k, v] : cmp["problem"].items()) text_row("problem " + k, cell(v[0]), cell(v[1]));
    for (const auto& [k, v] : cmp["config"].items()) text_row("config " + k, cell(v[0]), cell(v[1]));
    if (cmp["config"].empty() && cmp["problem"].empty()) {
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      ImGui::TextDisabled("same config and problem");
    }
    for (const auto& [k, v] : cmp["metrics"].items()) {
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(k.c_str());
      ImGui::TableNextColumn();
      ImGui::Text("%.5g", v["a"].get<double>());
      ImGui::TableNextColumn();
      ImGui::Text("%.5g", v["b"].get<double>());
      ImGui::TableNextColumn();
      const double ratio = v["ratio"].get<double>();
      if (ratio == 0) {
        ImGui::TextDisabled("-");
      } else {
        // Green where b is better than a by the metric's own sense, red where worse.
        const bool better = metric_higher_is_better(k) ? ratio > 1 : ratio < 1;
        ImGui::TextColored(ratio == 1 ? ImGui::GetStyle().Colors[ImGuiCol_TextDisabled] : better ? ok_color() : error_color(), "%.3fx", ratio);
      }
    }
    ImGui::EndTable();
  }
}

}  // namespace tl::gui
