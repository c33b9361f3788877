// Layout viewer panel: the same scenes the CLI exports, drawn live through the ImGui painter.
#include "app/gui/layout_panel.hpp"

#include <algorithm>
#include <cstring>
#include <filesystem>

#include <imgui.h>

#include "tile/banks.hpp"
#include "tile/layout_spec.hpp"
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

const viz::LayoutGrid& LayoutPanel::grid() {
  if (m_dirty) rebuild();
  return m_grid;
}

Status LayoutPanel::append_op(const std::string& op) {
  const LayoutSpec now = parse_spec(m_spec);
  if (!now.ok) return make_error(ErrorCode::invalid_argument, "the SPEC does not parse: " + now.message);
  if (!now.is_fragment())
    return make_error(ErrorCode::invalid_argument, "'" + now.text + "' is a memory layout; repeat and replicate grow "
                                                   "register fragments (atoms such as mma.m16n8k16.f16.A)");
  const std::string next = m_spec + op;
  if (next.size() >= sizeof(m_spec)) return make_error(ErrorCode::invalid_argument, "the SPEC would be too long");
  const LayoutSpec grown = parse_spec(next);
  if (!grown.ok) return make_error(ErrorCode::invalid_argument, op.substr(1) + ": " + grown.message);
  set_spec(next);
  return {};
}

Status LayoutPanel::repeat(int rows, int cols, bool on_thread, bool rows_first) {
  return append_op(repeat_suffix(rows, cols, on_thread, rows_first));
}

Status LayoutPanel::replicate(int n) { return append_op(replicate_suffix(n)); }

Status LayoutPanel::undo_op() {
  std::string s = m_spec;
  while (!s.empty() && s.back() == ' ') s.pop_back();
  const std::size_t paren = s.empty() || s.back() != ')' ? std::string::npos : s.rfind('(');
  const std::size_t dot = paren == std::string::npos ? std::string::npos : s.rfind('.', paren);
  const std::string word = dot == std::string::npos ? std::string() : s.substr(dot + 1, paren - dot - 1);
  if (word != "repeat" && word != "replicate")
    return make_error(ErrorCode::invalid_argument, "the SPEC ends in no .repeat(...) or .replicate(n) to undo");
  set_spec(s.substr(0, dot));
  return {};
}

// One row under the SPEC while a fragment is shown: repeat R x C on threads or values, replicate n, undo.
void LayoutPanel::draw_fragment_controls() {
  if (!m_error.empty() || !m_grid.has_threads()) return;
  auto report = [&](const Status& st) { m_status = st.ok() ? std::string() : st.message(); };
  ImGui::AlignTextToFramePadding();
  ImGui::TextDisabled("fragment:");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(90);
  ImGui::InputInt2("##repeat", m_repeat);
  for (int& r : m_repeat) r = std::clamp(r, 1, 1 << 12);
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("copies down the rows, across the columns");
  ImGui::SameLine();
  ImGui::RadioButton("threads", &m_repeat_on, 0);
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("the copies go to new threads (thread t of copy k is t + k*threads)");
  ImGui::SameLine();
  ImGui::RadioButton("values", &m_repeat_on, 1);
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("the copies go to new values of the same threads (v + k*values)");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(90);
  const char* orders[] = {"rows first", "cols first"};
  ImGui::Combo("##order", &m_repeat_order, orders, IM_ARRAYSIZE(orders));
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("how the copies are numbered (TileLang's lower_dim_first=True is cols first)");
  ImGui::SameLine();
  if (ImGui::Button("Repeat")) report(repeat(m_repeat[0], m_repeat[1], m_repeat_on == 0, m_repeat_order == 0));
  ImGui::SameLine(0, 24);
  ImGui::SetNextItemWidth(80);
  ImGui::InputInt("##replicate", &m_replicate);
  m_replicate = std::clamp(m_replicate, 1, 1 << 12);
  ImGui::SameLine();
  if (ImGui::Button("Replicate")) report(replicate(m_replicate));
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("n times the threads, thread t + k*threads holding what t holds");
  ImGui::SameLine(0, 24);
  if (ImGui::Button("Undo")) report(undo_op());
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("drop the last .repeat(...) or .replicate(n) from the SPEC");
}

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
  draw_fragment_controls();
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
