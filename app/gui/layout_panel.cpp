// Layout viewer panel: the same scenes the CLI exports, drawn live through the ImGui painter, at a cell size where
// labels show.
#include "app/gui/layout_panel.hpp"
#include "app/gui/widgets.hpp"

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

constexpr std::size_t kMaxLabelledCells = 128 * 128;

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
  m_a.spec = m_spec;
  m_a.grid_dirty = true;
}

void LayoutPanel::set_access(const std::string& access) {
  std::snprintf(m_access, sizeof(m_access), "%s", access.c_str());
  ++m_settings;
}

void LayoutPanel::set_color(const std::string& mode) {
  for (int i = 0; i < IM_ARRAYSIZE(kColorModes); ++i)
    if (mode == kColorModes[i]) m_color = i;
  ++m_settings;
}

void LayoutPanel::set_kernel_layouts(std::vector<LayoutInfo> layouts) { m_kernel_layouts = std::move(layouts); }

void LayoutPanel::set_compare(const std::string& spec) {
  m_compare_on = !spec.empty();
  if (m_compare_on) std::snprintf(m_compare, sizeof(m_compare), "%s", spec.c_str());
  m_b.spec = m_compare;
  m_b.grid_dirty = true;
}

Status LayoutPanel::set_cells(const std::string& mode) {
  if (mode == "labels" || mode == "fit") {
    m_cells = mode == "labels" ? 0 : 1;
  } else {
    char* end = nullptr;
    const double v = std::strtod(mode.c_str(), &end);
    if (mode.empty() || *end != '\0' || !(v >= 1 && v <= 500))
      return make_error(ErrorCode::invalid_argument,
                        "cells: '" + mode + "' is not \"labels\", \"fit\" or a cell size from 1 to 500");
    m_cells = 2;
    m_cell_size = static_cast<float>(v);
  }
  ++m_settings;
  return {};
}

const viz::LayoutGrid& LayoutPanel::grid() {
  if (m_a.grid_dirty) regrid(m_a);
  return m_a.grid;
}

void LayoutPanel::regrid(Plot& p) {
  p.grid_dirty = false;
  p.built_key.clear();
  p.error.clear();
  auto grid = viz::grid_from_spec(p.spec, p.dtype);
  if (!grid) {
    p.error = grid.status().message();
    p.grid = {};
    p.scene = p.legend = {};
    return;
  }
  p.grid = std::move(*grid);
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
  if (!m_a.error.empty() || !m_a.grid.has_threads()) return;
  auto report = [&](const Status& st) { m_status = st.ok() ? std::string() : st.message(); };
  ImGui::AlignTextToFramePadding();
  ImGui::TextDisabled("fragment:");
  same_line_if_room(ui(90));
  ImGui::SetNextItemWidth(ui(90));
  ImGui::InputInt2("##repeat", m_repeat);
  for (int& r : m_repeat) r = std::clamp(r, 1, 1 << 12);
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("copies down the rows, across the columns");
  same_line_if_room(check_width("threads"));
  ImGui::RadioButton("threads", &m_repeat_on, 0);
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("the copies go to new threads (thread t of copy k is t + k*threads)");
  same_line_if_room(check_width("values"));
  ImGui::RadioButton("values", &m_repeat_on, 1);
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("the copies go to new values of the same threads (v + k*values)");
  same_line_if_room(ui(90));
  ImGui::SetNextItemWidth(ui(90));
  const char* orders[] = {"rows first", "cols first"};
  ImGui::Combo("##order", &m_repeat_order, orders, IM_ARRAYSIZE(orders));
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("how the copies are numbered (TileLang's lower_dim_first=True is cols first)");
  same_line_if_room(button_width("Repeat"));
  if (ImGui::Button("Repeat")) report(repeat(m_repeat[0], m_repeat[1], m_repeat_on == 0, m_repeat_order == 0));
  same_line_if_room(ui(24) + ui(80));
  ImGui::SetNextItemWidth(ui(80));
  ImGui::InputInt("##replicate", &m_replicate);
  m_replicate = std::clamp(m_replicate, 1, 1 << 12);
  same_line_if_room(button_width("Replicate"));
  if (ImGui::Button("Replicate")) report(replicate(m_replicate));
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("n times the threads, thread t + k*threads holding what t holds");
  same_line_if_room(ui(24) + button_width("Undo"));
  if (ImGui::Button("Undo")) report(undo_op());
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("drop the last .repeat(...) or .replicate(n) from the SPEC");
}

viz::GridStyle LayoutPanel::style_for(const Plot& p, const viz::Theme& theme) const {
  viz::GridStyle style;
  style.color = m_color == 0 ? (p.grid.has_threads() ? viz::ColorBy::thread : viz::ColorBy::bank)
                             : static_cast<viz::ColorBy>(m_color - 1);
  style.theme = theme;
  return style;
}

// The grid's scene at the cell size the panel asks for (labels, fit or a size) and its legend on its own, both at
// zoom = the UI scale: the legend stays put beside the plot while the plot pans and zooms.
void LayoutPanel::build_scenes(Plot& p, ImVec2 canvas, const viz::Theme& theme, float ui_scale) {
  const std::string key = strf("%.0fx%.0f %d %d %.2f %s", canvas.x, canvas.y, theme.dark, m_settings, ui_scale,
                               &p == &m_a ? m_access : "");
  if (key == p.built_key || !p.error.empty()) return;
  p.built_key = key;
  viz::GridStyle style = style_for(p, theme);
  style.show_title = false;
  style.legend = false;
  const bool inverse = m_inverse && p.grid.has_threads();
  // The legend takes at most 40% of the width: the plot keeps the rest.
  p.legend = viz::build_legend_scene(p.grid, style.color, inverse, theme, canvas.y / ui_scale, 0.4 * canvas.x / ui_scale);
  const double plot_w = std::max(1.0, canvas.x / ui_scale - p.legend.width - 8), plot_h = canvas.y / ui_scale;
  // The cell size at which the grid, its axes and margins fill the plot's room.
  const bool threads_as_rows = inverse;
  const double rows = threads_as_rows ? p.grid.num_threads() : p.grid.rows;
  const double cols = threads_as_rows ? std::max(p.grid.num_values(), 1) * 1.8 : p.grid.cols;
  const std::string widest_row = threads_as_rows ? viz::tagged("T", p.grid.num_threads() - 1)
                                                 : std::to_string(std::max(p.grid.rows - 1, 0));
  const double fit = std::min((plot_w - 32 - viz::estimate_text_width(widest_row, 11) - 8) / std::max(cols, 1.0),
                              (plot_h - 32 - 20) / std::max(rows, 1.0));
  const double readable = viz::readable_cell_size(p.grid, style.color, inverse);
  // Past 128 x 128 cells "labels" fits instead: a whole tensor is read by its pattern, and a label per cell would be
  // millions of texts (zoom in, or pick a size, to read cells).
  const bool labels = m_cells == 0 && p.grid.cells.size() <= kMaxLabelledCells;
  double cell = m_cells == 2 ? m_cell_size : labels ? std::max(fit, readable) : fit;
  if (m_cells != 2) cell = std::min(cell, 80.0);  // a tiny atom is not blown up to the whole panel
  p.cell = std::clamp(cell, 1.0, 500.0);
  style.cell_size = p.cell;
  auto scene = inverse ? viz::build_inverse_scene(p.grid, style) : viz::build_layout_scene(p.grid, style);
  if (!scene) {
    p.error = scene.status().message();
    p.scene = {};
    return;
  }
  p.scene = std::move(*scene);
  if (&p == &m_a && m_access[0]) add_bank_overlay(p.scene);
  // Zoom 1 (labels at their size); centred where the plot is smaller than its room, from the top-left where not.
  p.view.zoom = ui_scale;
  p.view.pan_x = std::min(0.0, (p.scene.width - plot_w) / 2);
  p.view.pan_y = std::min(0.0, (p.scene.height - plot_h) / 2);
  p.view.fitted = true;
  p.legend_view = viz::View{ui_scale, 0, 0, true};
}

// Outlines every cell the access pattern touches on the layout: green where its bank serves one word per
// wavefront, red (thicker with the degree) where the bank conflicts; the summary line says the wavefronts.
void LayoutPanel::add_bank_overlay(viz::Scene& scene) {
  m_bank_summary.clear();
  const viz::LayoutGrid& g = m_a.grid;
  if (m_inverse || !g.has_offsets()) {
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
  std::vector<const viz::Rect*> by_cell(g.cells.size(), nullptr);
  for (const auto& r : scene.rects)
    if (r.id >= 0 && static_cast<std::size_t>(r.id) < by_cell.size()) by_cell[static_cast<std::size_t>(r.id)] = &r;
  std::vector<viz::Rect> overlay;
  for (const auto& a : report.accesses) {
    if (a.row < 0 || a.col < 0 || a.row >= g.rows || a.col >= g.cols) continue;
    const viz::Rect* cell = by_cell[static_cast<std::size_t>(a.row) * g.cols + a.col];
    if (!cell) continue;
    const int degree = report.bank_degree[static_cast<std::size_t>(a.first_bank % 32)];
    viz::Rect o = *cell;
    o.id = -1;
    o.fill = degree > 1 ? viz::Color{0.9f, 0.1f, 0.1f, 0.25f} : viz::Color{0.1f, 0.8f, 0.2f, 0.2f};
    o.stroke = degree > 1 ? viz::Color{0.85f, 0.0f, 0.0f, 1} : viz::Color{0.0f, 0.6f, 0.1f, 1};
    o.stroke_width = degree > 1 ? 1.5 + 0.5 * degree : 1.5;
    overlay.push_back(o);
  }
  scene.rects.insert(scene.rects.end(), overlay.begin(), overlay.end());
  m_bank_summary = pattern->name + ": " + std::to_string(report.wavefronts) + " wavefronts (ideal " +
                   std::to_string(report.ideal_wavefronts) + "), worst bank degree " +
                   std::to_string(report.max_conflict) + ", " + std::to_string(report.accesses.size()) + " accesses";
}

// A plot's title line, then the grid (pan, zoom, hover) and its legend beside it.
void LayoutPanel::draw_plot(Plot& p, const char* id, ImVec2 size, const viz::Theme& theme, float ui_scale) {
  if (!p.error.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, error_color());
    ImGui::TextWrapped("%s", p.error.c_str());
    ImGui::PopStyleColor();
    return;
  }
  const viz::ColorBy color = style_for(p, theme).color;
  text_fit(strf("%s  (%d×%d, by %s)", p.grid.title.c_str(), p.grid.rows, p.grid.cols, viz::color_by_name(color)));
  const ImVec2 canvas(size.x, std::max(ui(60), size.y - ImGui::GetTextLineHeightWithSpacing()));
  build_scenes(p, canvas, theme, ui_scale);
  if (!p.error.empty()) return;
  const float legend_w = static_cast<float>(p.legend.width) * ui_scale;
  const ImVec2 plot(std::max(ui(60), canvas.x - legend_w - ImGui::GetStyle().ItemSpacing.x), canvas.y);
  const std::int64_t hovered = viz::scene_canvas(id, p.scene, p.view, plot);
  if (hovered >= 0) ImGui::SetTooltip("%s", viz::describe_cell(p.grid, hovered).c_str());
  ImGui::SameLine();
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  ImGui::Dummy(ImVec2(legend_w, canvas.y));
  const std::string legend_id = std::string(id) + " legend";
  viz::draw_scene(ImGui::GetWindowDrawList(), p.legend, p.legend_view, origin, ImVec2(legend_w, canvas.y),
                  ImVec2(-1e9f, -1e9f), legend_id.c_str());
}

void LayoutPanel::draw(const viz::Theme& theme, float ui_scale) {
  ImGui::SetNextItemWidth(ui(300));
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
  if (ImGui::InputTextWithHint("##spec", "SPEC: (8,(4,2)):(4,(1,32)), swizzle<3,3,3> o (8,64):(64,1), an atom", m_spec,
                               sizeof(m_spec), ImGuiInputTextFlags_EnterReturnsTrue))
    set_spec(m_spec);
  if (!m_kernel_layouts.empty()) {
    ImGui::TextDisabled("kernel:");
    for (const auto& l : m_kernel_layouts) {
      same_line_if_room(ImGui::CalcTextSize(l.name.c_str()).x + ui(12));
      if (ImGui::SmallButton(l.name.c_str())) set_spec(l.spec);
      if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", l.spec.c_str());
    }
  }
  draw_fragment_controls();
  ImGui::SetNextItemWidth(ui(100));
  if (ImGui::Combo("colour", &m_color, kColorModes, IM_ARRAYSIZE(kColorModes))) ++m_settings;
  same_line_if_room(ui(60) + label_width("dtype"));
  ImGui::SetNextItemWidth(ui(60));
  if (ImGui::InputText("dtype", m_dtype, sizeof(m_dtype), ImGuiInputTextFlags_EnterReturnsTrue)) {
    m_a.dtype = m_b.dtype = m_dtype;
    m_a.grid_dirty = m_b.grid_dirty = true;
  }
  same_line_if_room(check_width("thread → coords"));
  if (ImGui::Checkbox("thread → coords", &m_inverse)) ++m_settings;
  same_line_if_room(ui(200) + label_width("access"));
  ImGui::SetNextItemWidth(ui(200));
  if (ImGui::InputTextWithHint("access", "ldmatrix.x4, row.v128, col.scalar", m_access, sizeof(m_access),
                               ImGuiInputTextFlags_EnterReturnsTrue))
    ++m_settings;
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("bank-conflict overlay: an access pattern over the tile (%s, or v16:(0,0),(1,0),...)",
                      [] {
                        std::string s;
                        for (const auto& n : builtin_pattern_names()) s += (s.empty() ? "" : ", ") + n;
                        return s;
                      }()
                          .c_str());
  // Cell size: large enough for the labels (scrolling when the grid is larger than the panel), the whole grid, or
  // a size of one's own.
  ImGui::AlignTextToFramePadding();
  ImGui::TextUnformatted("cells:");
  same_line_if_room(check_width("labels"));
  if (ImGui::RadioButton("labels", &m_cells, 0)) ++m_settings;
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("cells large enough for every T/V (offset, bank) label; drag to pan");
  same_line_if_room(check_width("fit"));
  if (ImGui::RadioButton("fit", &m_cells, 1)) ++m_settings;
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("the whole grid in the panel (labels show when the cells are large enough)");
  same_line_if_room(check_width("size") + ImGui::GetStyle().ItemSpacing.x + ui(90));
  if (ImGui::RadioButton("size", &m_cells, 2)) ++m_settings;
  ImGui::SameLine();
  ImGui::SetNextItemWidth(ui(90));
  if (ImGui::SliderFloat("##cell", &m_cell_size, 2, 80, "%.0f") && m_cells == 2) ++m_settings;
  same_line_if_room(ui(18) + check_width("compare with"));
  if (ImGui::Checkbox("compare with", &m_compare_on) && m_compare_on) set_compare(m_compare[0] ? m_compare : m_spec);
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("a second layout beside this one, in the same colours and cell size");
  if (m_compare_on) {
    same_line_if_room(ui(160));
    ImGui::SetNextItemWidth(-1);
    if (ImGui::InputTextWithHint("##compare", "second SPEC", m_compare, sizeof(m_compare),
                                 ImGuiInputTextFlags_EnterReturnsTrue))
      set_compare(m_compare);
  }
  ImGui::SetNextItemWidth(ui(240));
  ImGui::InputText("##export", m_export_path, sizeof(m_export_path));
  ImGui::SameLine();
  if (ImGui::Button("Export")) {
    // A page: the whole grid with its title and legend, on white (the cairo painter, as `tilelab layout`).
    (void)grid();
    std::filesystem::path path(m_export_path);
    std::error_code ec;
    if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path(), ec);
    viz::GridStyle style = style_for(m_a, viz::light_theme());
    auto scene = m_inverse && m_a.grid.has_threads() ? viz::build_inverse_scene(m_a.grid, style)
                                                     : viz::build_layout_scene(m_a.grid, style);
    Status st = scene.status();
    if (scene) {
      if (m_access[0] && !m_inverse) add_bank_overlay(*scene);
      st = viz::write_scene(*scene, m_export_path);
    }
    m_status = st.ok() ? std::string("wrote ") + m_export_path : st.message();
  }
  if (ImGui::IsItemHovered()) ImGui::SetTooltip(".png, .svg or .pdf (the cairo painter, as `tilelab layout`)");
  if (!m_status.empty()) {
    ImGui::SameLine();
    text_fit_dim(m_status);
  }

  (void)grid();
  if (m_compare_on && m_b.grid_dirty) regrid(m_b);
  if (!m_bank_summary.empty() && m_access[0]) text_fit(m_bank_summary);
  text_fit_dim("wheel: zoom, drag: pan, double-click: fit the whole grid; hover a cell for its thread, value, offset, bank");
  const ImVec2 room = ImGui::GetContentRegionAvail();
  const ImGuiWindowFlags still = ImGuiWindowFlags_NoScrollbar | ImGuiWindowFlags_NoScrollWithMouse;
  if (!m_compare_on) {
    ImGui::BeginChild("##layout_a", room, false, still);
    draw_plot(m_a, "##layout_canvas", ImGui::GetContentRegionAvail(), theme, ui_scale);
    ImGui::EndChild();
    return;
  }
  const ImVec2 half((room.x - ImGui::GetStyle().ItemSpacing.x) / 2, room.y);
  ImGui::BeginChild("##layout_a", half, false, still);
  draw_plot(m_a, "##layout_canvas", ImGui::GetContentRegionAvail(), theme, ui_scale);
  ImGui::EndChild();
  ImGui::SameLine();
  ImGui::BeginChild("##layout_b", half, false, still);
  draw_plot(m_b, "##layout_canvas_b", ImGui::GetContentRegionAvail(), theme, ui_scale);
  ImGui::EndChild();
}

}  // namespace tl::gui
