// Results panel: this session's runs in a sortable table; two picked side by side.
#include <algorithm>

#include <imgui.h>

#include "app/gui/app.hpp"

namespace tl::gui {
namespace {

std::string join_values(const std::map<std::string, std::string>& kv) {
  std::string s;
  for (const auto& [k, v] : kv) s += (s.empty() ? "" : ",") + k + "=" + v;
  return s;
}

std::string status_text(const RunRecord& r) {
  if (r.failure) return error_code_name(r.failure->code);
  return r.passed() ? "PASS" : "FAIL";
}

double baseline_ratio(const RunRecord& r) {
  if (!r.baseline || r.baseline->time_ms.median <= 0 || r.time_ms.median <= 0) return 0;
  return r.baseline->time_ms.median / r.time_ms.median;  // > 1: faster than cuBLAS
}

enum Column { c_pick, c_id, c_kind, c_kernel, c_config, c_problem, c_status, c_ms, c_tflops, c_gbps, c_eff, c_err, c_vs };

void compare_row(const char* what, const std::string& a, const std::string& b) {
  ImGui::TableNextRow();
  ImGui::TableNextColumn();
  ImGui::TextUnformatted(what);
  ImGui::TableNextColumn();
  if (a != b) ImGui::TextColored(ImVec4(1, 0.85f, 0.4f, 1), "%s", a.c_str());
  else ImGui::TextUnformatted(a.c_str());
  ImGui::TableNextColumn();
  if (a != b) ImGui::TextColored(ImVec4(1, 0.85f, 0.4f, 1), "%s", b.c_str());
  else ImGui::TextUnformatted(b.c_str());
}

std::string num(double v, const char* fmt = "%.4g") {
  char buf[64];
  std::snprintf(buf, sizeof(buf), fmt, v);
  return buf;
}

}  // namespace

void ResultsPanel::draw(App& app) {
  auto& runs = app.runs();
  ImGui::TextDisabled("Runs of this app session (%zu). History from the results store will appear here once the "
                      "store lands (branch sweep).", runs.size());
  if (runs.empty()) {
    if (app.has_device()) ImGui::TextWrapped("Run a kernel from the sidebar (Run + verify, Bench, Capture timeline).");
    else ImGui::TextWrapped("No runs: running needs a GPU (%s).", app.why_no_device().c_str());
  }
  const float compare_h = (compare_a >= 0 && compare_b >= 0) ? 260.0f : 0.0f;
  const ImGuiTableFlags flags = ImGuiTableFlags_Sortable | ImGuiTableFlags_RowBg | ImGuiTableFlags_Borders |
                                ImGuiTableFlags_Resizable | ImGuiTableFlags_ScrollY | ImGuiTableFlags_ScrollX;
  if (ImGui::BeginTable("##runs", 13, flags, ImVec2(0, runs.empty() ? 80.0f : -compare_h - 4))) {
    ImGui::TableSetupScrollFreeze(0, 1);
    ImGui::TableSetupColumn("cmp", ImGuiTableColumnFlags_NoSort | ImGuiTableColumnFlags_WidthFixed, 30);
    ImGui::TableSetupColumn("#", ImGuiTableColumnFlags_DefaultSort | ImGuiTableColumnFlags_WidthFixed, 30);
    ImGui::TableSetupColumn("kind");
    ImGui::TableSetupColumn("kernel");
    ImGui::TableSetupColumn("config");
    ImGui::TableSetupColumn("problem");
    ImGui::TableSetupColumn("status");
    ImGui::TableSetupColumn("median ms");
    ImGui::TableSetupColumn("TFLOP/s");
    ImGui::TableSetupColumn("GB/s");
    ImGui::TableSetupColumn("eff %");
    ImGui::TableSetupColumn("rel err");
    ImGui::TableSetupColumn("vs cuBLAS");
    ImGui::TableHeadersRow();

    std::vector<const RunEntry*> order;
    for (const auto& r : runs) order.push_back(&r);
    if (ImGuiTableSortSpecs* specs = ImGui::TableGetSortSpecs(); specs && specs->SpecsCount > 0) {
      const ImGuiTableColumnSortSpecs& s = specs->Specs[0];
      const bool asc = s.SortDirection == ImGuiSortDirection_Ascending;
      auto key_num = [&](const RunEntry* e) -> double {
        const RunRecord& r = e->record;
        switch (s.ColumnIndex) {
          case c_ms: return r.time_ms.median;
          case c_tflops: return r.tflops;
          case c_gbps: return r.gbps;
          case c_eff: return r.efficiency.value;
          case c_err: return r.rel_error();
          case c_vs: return baseline_ratio(r);
          default: return e->id;
        }
      };
      auto key_text = [&](const RunEntry* e) -> std::string {
        switch (s.ColumnIndex) {
          case c_kind: return e->kind;
          case c_kernel: return e->record.kernel;
          case c_config: return join_values(e->record.config);
          case c_problem: return join_values(e->record.problem);
          case c_status: return status_text(e->record);
          default: return {};
        }
      };
      const bool textual = s.ColumnIndex >= c_kind && s.ColumnIndex <= c_status;
      std::stable_sort(order.begin(), order.end(), [&](const RunEntry* a, const RunEntry* b) {
        if (textual) return asc ? key_text(a) < key_text(b) : key_text(b) < key_text(a);
        return asc ? key_num(a) < key_num(b) : key_num(b) < key_num(a);
      });
    }
    for (const RunEntry* e : order) {
      const RunRecord& r = e->record;
      ImGui::TableNextRow();
      ImGui::PushID(e->id);
      ImGui::TableNextColumn();
      bool picked = e->id == compare_a || e->id == compare_b;
      if (ImGui::Checkbox("##pick", &picked)) {
        if (picked) {
          compare_a = compare_b;
          compare_b = e->id;
        } else {
          if (compare_a == e->id) compare_a = -1;
          if (compare_b == e->id) compare_b = -1;
        }
      }
      ImGui::TableNextColumn();
      if (ImGui::Selectable(std::to_string(e->id).c_str(), app.selected_run == e->id,
                            ImGuiSelectableFlags_SpanAllColumns | ImGuiSelectableFlags_AllowItemOverlap)) {
        app.selected_run = e->id;
        if (e->timeline) app.timeline.set(e->timeline, "run " + std::to_string(e->id));
      }
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(e->kind.c_str());
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(r.kernel.c_str());
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(join_values(r.config).c_str());
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(join_values(r.problem).c_str());
      ImGui::TableNextColumn();
      const std::string st = status_text(r);
      ImGui::TextColored(r.passed() ? ImVec4(0.45f, 0.85f, 0.5f, 1) : ImVec4(1, 0.45f, 0.4f, 1), "%s", st.c_str());
      if (ImGui::IsItemHovered() && r.failure) ImGui::SetTooltip("%s", r.failure_text().c_str());
      ImGui::TableNextColumn();
      ImGui::Text("%.4f", r.time_ms.median);
      ImGui::TableNextColumn();
      ImGui::Text("%.1f", r.tflops);
      ImGui::TableNextColumn();
      ImGui::Text("%.0f", r.gbps);
      ImGui::TableNextColumn();
      if (r.efficiency.bound.empty()) ImGui::TextDisabled("-");
      else ImGui::Text("%.0f", 100 * r.efficiency.value);
      ImGui::TableNextColumn();
      ImGui::Text("%.2e", r.rel_error());
      ImGui::TableNextColumn();
      if (baseline_ratio(r) > 0) ImGui::Text("%.2fx", baseline_ratio(r));
      else ImGui::TextDisabled("-");
      ImGui::PopID();
    }
    ImGui::EndTable();
  }
  const RunEntry* a = app.find_run(compare_a);
  const RunEntry* b = app.find_run(compare_b);
  if (!a || !b) {
    if (!runs.empty()) ImGui::TextDisabled("tick two runs to compare them");
    return;
  }
  ImGui::Text("run %d vs run %d", a->id, b->id);
  if (b->record.time_ms.median > 0 && a->record.time_ms.median > 0)
    ImGui::Text("run %d takes %.3fx the time of run %d", b->id, b->record.time_ms.median / a->record.time_ms.median,
                a->id);
  if (ImGui::BeginTable("##compare", 3, ImGuiTableFlags_Borders | ImGuiTableFlags_RowBg | ImGuiTableFlags_ScrollY,
                        ImVec2(0, 0))) {
    ImGui::TableSetupColumn("");
    ImGui::TableSetupColumn(("run " + std::to_string(a->id)).c_str());
    ImGui::TableSetupColumn(("run " + std::to_string(b->id)).c_str());
    ImGui::TableHeadersRow();
    const RunRecord &ra = a->record, &rb = b->record;
    compare_row("kernel", ra.kernel, rb.kernel);
    std::map<std::string, std::string> keys;
    for (const auto& [k, v] : ra.config) keys[k];
    for (const auto& [k, v] : rb.config) keys[k];
    for (const auto& [k, unused] : keys) {
      auto get = [&](const RunRecord& r) { auto it = r.config.find(k); return it == r.config.end() ? "-" : it->second; };
      compare_row(k.c_str(), get(ra), get(rb));
    }
    compare_row("problem", join_values(ra.problem), join_values(rb.problem));
    compare_row("status", status_text(ra), status_text(rb));
    compare_row("median ms", num(ra.time_ms.median), num(rb.time_ms.median));
    compare_row("TFLOP/s", num(ra.tflops), num(rb.tflops));
    compare_row("GB/s", num(ra.gbps), num(rb.gbps));
    compare_row("registers", std::to_string(ra.resources.registers), std::to_string(rb.resources.registers));
    compare_row("spills (B)", std::to_string(ra.resources.spill_store_bytes), std::to_string(rb.resources.spill_store_bytes));
    compare_row("rel err", num(ra.rel_error(), "%.2e"), num(rb.rel_error(), "%.2e"));
    ImGui::EndTable();
  }
}

}  // namespace tl::gui
