// Layout viewer panel: the same scenes the CLI exports, drawn live through the ImGui painter.
#include "app/gui/layout_panel.hpp"

#include <cstring>
#include <filesystem>

#include <imgui.h>

#include "tile/banks.hpp"
#include "viz/cairo_painter.hpp"
#include "viz/layout_adapter.hpp"

namespace tl::gui {
namespace {

// "auto" first, then the ColorBy modes in enum order.
constexpr const char* kColorModes[] = {"auto", "thread", "warp", "value", "bank", "index"};

}  // namespace

LayoutPanel::LayoutPanel() {
  auto atoms = viz::list_layout_atoms();
  std::string first = atoms.empty() ? "(8,(4,2)):(4,(1,32))" : atoms.front().name;
  for (const auto& a : atoms) {
    if (a.name == "mma.m16n8k16.f32.C") first = a.name;
  }
  set_spec(first);
}

void LayoutPanel::set_spec(const std::string& spec) {
  std::snprintf(m_spec, sizeof(m_spec), "%s", spec.c_str());
  m_dirty = true;
}

void LayoutPanel::set_access(const std::string& access) {
  std::snprintf(m_access, sizeof(m_access), "%s", access.c_str());
  m_dirty = true;
}

void LayoutPanel::set_color(const std::string& mode) {
  for (int i = 0; i < IM_ARRAYSIZE(kColorModes); ++i)
    if (mode == kColorModes[i]) m_color = i;
  m_dirty = true;
}

void LayoutPanel::set_kernel_layouts(std::vector<LayoutInfo> layouts) { m_kernel_layouts = std::move(layouts); }

void LayoutPanel::rebuild() {
  m_dirty = false;
  m_error.clear();
  m_bank_summary.clear();
  auto grid = viz::grid_from_spec(m_spec, m_dtype);
  if (!grid) {
    m_error = grid.status().message();
    m_scene = {};
    return;
  }
  m_grid = std::move(*grid);
  viz::GridStyle style;
  if (m_color == 0) {
    style.color = m_grid.has_threads() ? viz::ColorBy::thread : viz::ColorBy::bank;
  } else {
    style.color = static_cast<viz::ColorBy>(m_color - 1);
  }
  auto scene = m_inverse && m_grid.has_threads() ? viz::build_inverse_scene(m_grid, style)
                                                 : viz::build_layout_scene(m_grid, style);
  if (!scene) {
    m_error = scene.status().message();
    m_scene = {};
    return;
  }
  m_scene = std::move(*scene);
  if (m_access[0]) add_bank_overlay();
  m_view.fitted = false;
}

// Outlines every cell the access pattern touches on the layout: green where its bank serves one word per
// wavefront, red (thicker with the degree) where the bank conflicts; the summary line says the wavefronts.
void LayoutPanel::add_bank_overlay() {
  if (m_inverse || !m_grid.has_offsets()) {
    m_bank_summary = "bank overlay: needs a shared-memory layout (not a fragment)";
    return;
  }
  auto smem = viz::smem_from_spec(m_spec, 0);
  if (!smem) {
    m_bank_summary = "bank overlay: " + smem.status().message();
    return;
  }
  auto pattern = viz::access_from_spec(m_access, *smem);
  if (!pattern) {
    m_bank_summary = "access: " + pattern.status().message();
    return;
  }
  BankReport report = analyze_banks(smem->layout, smem->elem_bytes, *pattern);
  if (!report.ok) {
    m_bank_summary = "access: " + report.message;
    return;
  }
  std::vector<const viz::Rect*> by_cell(m_grid.cells.size(), nullptr);
  for (const auto& r : m_scene.rects)
    if (r.id >= 0 && static_cast<std::size_t>(r.id) < by_cell.size()) by_cell[static_cast<std::size_t>(r.id)] = &r;
  std::vector<viz::Rect> overlay;
  for (const auto& a : report.accesses) {
    if (a.row < 0 || a.col < 0 || a.row >= m_grid.rows || a.col >= m_grid.cols) continue;
    const viz::Rect* cell = by_cell[static_cast<std::size_t>(a.row) * m_grid.cols + a.col];
    if (!cell) continue;
    const int degree = report.bank_degree[static_cast<std::size_t>(a.first_bank % 32)];
    viz::Rect o = *cell;
    o.id = -1;
    o.fill = degree > 1 ? viz::Color{0.9f, 0.1f, 0.1f, 0.25f} : viz::Color{0.1f, 0.8f, 0.2f, 0.2f};
    o.stroke = degree > 1 ? viz::Color{0.85f, 0.0f, 0.0f, 1} : viz::Color{0.0f, 0.6f, 0.1f, 1};
    o.stroke_width = degree > 1 ? 1.5 + 0.5 * degree : 1.5;
    overlay.push_back(o);
  }
  m_scene.rects.insert(m_scene.rects.end(), overlay.begin(), overlay.end());
  m_bank_summary = pattern->name + ": " + std::to_string(report.wavefronts) + " wavefronts (ideal " +
                   std::to_string(report.ideal_wavefronts) + "), worst bank degree " +
                   std::to_string(report.max_conflict) + ", " + std::to_string(report.accesses.size()) + " accesses";
}

void LayoutPanel::draw() {
  ImGui::SetNextItemWidth(300);
  if (ImGui::BeginCombo("##atom", "layouts and atoms")) {
    if (!m_kernel_layouts.empty()) {
      ImGui::TextDisabled("the open kernel");
      for (const auto& l : m_kernel_layouts) {
        const std::string label = l.name + "  " + l.spec;
        if (ImGui::Selectable(label.c_str(), l.spec == m_spec)) set_spec(l.spec);
      }
      ImGui::Separator();
      ImGui::TextDisabled("atoms");
    }
    for (const auto& a : viz::list_layout_atoms()) {
      if (ImGui::Selectable(a.name.c_str(), a.name == m_spec)) set_spec(a.name);
      if (ImGui::IsItemHovered() && !a.description.empty()) ImGui::SetTooltip("%s", a.description.c_str());
    }
    ImGui::EndCombo();
  }
  ImGui::SameLine();
  ImGui::SetNextItemWidth(-1);
  m_dirty |= ImGui::InputTextWithHint("##spec", "SPEC: (8,(4,2)):(4,(1,32)), swizzle<3,3,3> o (8,64):(64,1), an atom",
                                      m_spec, sizeof(m_spec), ImGuiInputTextFlags_EnterReturnsTrue);
  if (!m_kernel_layouts.empty()) {
    ImGui::TextDisabled("kernel:");
    for (const auto& l : m_kernel_layouts) {
      ImGui::SameLine();
      if (ImGui::SmallButton(l.name.c_str())) set_spec(l.spec);
      if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", l.spec.c_str());
    }
  }
  ImGui::SetNextItemWidth(100);
  m_dirty |= ImGui::Combo("colour", &m_color, kColorModes, IM_ARRAYSIZE(kColorModes));
  ImGui::SameLine();
  ImGui::SetNextItemWidth(60);
  m_dirty |= ImGui::InputText("dtype", m_dtype, sizeof(m_dtype), ImGuiInputTextFlags_EnterReturnsTrue);
  ImGui::SameLine();
  m_dirty |= ImGui::Checkbox("thread -> coords", &m_inverse);
  ImGui::SameLine();
  ImGui::SetNextItemWidth(220);
  m_dirty |= ImGui::InputTextWithHint("access", "ldmatrix.x4, row.v128, col.scalar", m_access, sizeof(m_access),
                                      ImGuiInputTextFlags_EnterReturnsTrue);
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("bank-conflict overlay: an access pattern over the tile (%s, or v16:(0,0),(1,0),...)",
                      [] {
                        std::string s;
                        for (const auto& n : builtin_pattern_names()) s += (s.empty() ? "" : ", ") + n;
                        return s;
                      }()
                          .c_str());
  ImGui::SetNextItemWidth(260);
  ImGui::InputText("##export", m_export_path, sizeof(m_export_path));
  ImGui::SameLine();
  if (ImGui::Button("Export") && m_scene.width > 0) {
    std::filesystem::path p(m_export_path);
    std::error_code ec;
    if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path(), ec);
    Status st = viz::write_scene(m_scene, m_export_path);
    m_status = st.ok() ? std::string("wrote ") + m_export_path : st.message();
  }
  if (ImGui::IsItemHovered()) ImGui::SetTooltip(".png, .svg or .pdf (the cairo painter, as `tilelab layout`)");
  if (!m_status.empty()) {
    ImGui::SameLine();
    ImGui::TextDisabled("%s", m_status.c_str());
  }
  if (m_dirty) rebuild();

  if (!m_error.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(1.0f, 0.45f, 0.4f, 1.0f));
    ImGui::TextUnformatted(m_error.c_str());
    ImGui::PopStyleColor();
  } else {
    if (!m_bank_summary.empty()) ImGui::TextUnformatted(m_bank_summary.c_str());
    ImGui::TextDisabled("wheel: zoom, drag: pan, double-click: fit");
    std::int64_t hovered = viz::scene_canvas("##layout_canvas", m_scene, m_view, ImGui::GetContentRegionAvail());
    if (hovered >= 0) ImGui::SetTooltip("%s", viz::describe_cell(m_grid, hovered).c_str());
  }
}

}  // namespace tl::gui
