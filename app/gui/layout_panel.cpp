// Layout viewer panel: the same scenes the CLI exports, drawn live through the ImGui painter.
#include "app/gui/layout_panel.hpp"

#include <cstring>
#include <filesystem>

#include <imgui.h>

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
  std::snprintf(m_spec, sizeof(m_spec), "%s", first.c_str());
}

void LayoutPanel::rebuild() {
  m_dirty = false;
  m_error.clear();
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
  m_view.fitted = false;
}

void LayoutPanel::draw() {
  ImGui::SetNextWindowPos(ImVec2(660, 40), ImGuiCond_FirstUseEver);
  ImGui::SetNextWindowSize(ImVec2(720, 820), ImGuiCond_FirstUseEver);
  if (!ImGui::Begin("Layouts")) {
    ImGui::End();
    return;
  }
  ImGui::SetNextItemWidth(260);
  if (ImGui::BeginCombo("##atom", "atoms")) {
    for (const auto& a : viz::list_layout_atoms()) {
      if (ImGui::Selectable(a.name.c_str(), a.name == m_spec)) {
        std::snprintf(m_spec, sizeof(m_spec), "%s", a.name.c_str());
        m_dirty = true;
      }
      if (ImGui::IsItemHovered() && !a.description.empty()) ImGui::SetTooltip("%s", a.description.c_str());
    }
    ImGui::EndCombo();
  }
  ImGui::SameLine();
  ImGui::SetNextItemWidth(-1);
  m_dirty |= ImGui::InputText("##spec", m_spec, sizeof(m_spec), ImGuiInputTextFlags_EnterReturnsTrue);
  ImGui::SetNextItemWidth(120);
  m_dirty |= ImGui::Combo("colour", &m_color, kColorModes, IM_ARRAYSIZE(kColorModes));
  ImGui::SameLine();
  ImGui::SetNextItemWidth(80);
  m_dirty |= ImGui::InputText("dtype", m_dtype, sizeof(m_dtype), ImGuiInputTextFlags_EnterReturnsTrue);
  ImGui::SameLine();
  m_dirty |= ImGui::Checkbox("thread -> coordinates", &m_inverse);
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
    ImGui::TextDisabled("wheel: zoom, drag: pan, double-click: fit");
    std::int64_t hovered = viz::scene_canvas("##layout_canvas", m_scene, m_view, ImGui::GetContentRegionAvail());
    if (hovered >= 0) ImGui::SetTooltip("%s", viz::describe_cell(m_grid, hovered).c_str());
  }
  ImGui::End();
}

}  // namespace tl::gui
