// The GUI's layout viewer: the open kernel's layouts or any SPEC, pan/zoom/hover, colour modes, a bank-conflict
// overlay for an access pattern, repeat/replicate of a fragment, two layouts side by side, and export (PNG/SVG/PDF
// through the cairo painter).
#pragma once

#include <string>
#include <vector>

#include <imgui.h>

#include "runtime/core/status.hpp"
#include "runtime/spec/kernel_spec.hpp"
#include "viz/imgui_painter.hpp"
#include "viz/layout_grid.hpp"
#include "viz/layout_scene.hpp"

namespace tl::gui {

class LayoutPanel {
 public:
  LayoutPanel();
  // Draws the panel; plots are built in `theme`'s colours at `ui_scale` (scene units are pixels / ui_scale).
  void draw(const viz::Theme& theme, float ui_scale);

  void set_spec(const std::string& spec);
  std::string spec() const { return m_spec; }
  // The layouts the open kernel exposes for its current config (listed first in the picker).
  void set_kernel_layouts(std::vector<LayoutInfo> layouts);
  void set_access(const std::string& access);
  void set_color(const std::string& mode);  // "auto", "thread", "warp", "value", "bank", "index"
  // A second layout drawn beside the first, in the same colours and cell size ("" ends the comparison).
  void set_compare(const std::string& spec);
  std::string compare_spec() const { return m_compare_on ? m_compare : ""; }
  // Cell sizing: "labels" (the default: cells large enough for every label, the plot scrolls when it must), "fit"
  // (the whole grid in the panel), or a size in scene units.
  Status set_cells(const std::string& mode);
  // Grow the shown fragment as TileLang's Fragment.repeat / replicate (the SPEC gets .repeat(...) / .replicate(n));
  // undo_op drops the last of them. An error names why (not a fragment, a count out of range, ...).
  Status repeat(int rows, int cols, bool on_thread, bool rows_first);
  Status replicate(int n);
  Status undo_op();
  // The grid shown, rebuilt first when the SPEC changed (scripts read it before a frame is drawn).
  const viz::LayoutGrid& grid();
  const std::string& error() const { return m_a.error; }
  const viz::Scene& scene() const { return m_a.scene; }
  double cell_size() const { return m_a.cell; }  // of the last plot built (scene units)
  const std::string& bank_summary() const { return m_bank_summary; }

 private:
  // One plotted layout: its grid (from the SPEC), and the scenes built for the canvas (the grid, its legend).
  struct Plot {
    std::string spec, dtype, error;
    viz::LayoutGrid grid;
    bool grid_dirty = true;
    viz::Scene scene, legend;
    viz::View view, legend_view;
    std::string built_key;  // what the scenes were built for: rebuilt when it changes
    double cell = 0;
  };
  void regrid(Plot& p);
  void build_scenes(Plot& p, ImVec2 canvas, const viz::Theme& theme, float ui_scale);
  void draw_plot(Plot& p, const char* id, ImVec2 size, const viz::Theme& theme, float ui_scale);
  void add_bank_overlay(viz::Scene& scene);
  void draw_fragment_controls();
  Status append_op(const std::string& op);
  viz::GridStyle style_for(const Plot& p, const viz::Theme& theme) const;

  char m_spec[256] = {};
  char m_compare[256] = {};
  bool m_compare_on = false;
  char m_dtype[16] = {};
  char m_access[128] = {};
  char m_export_path[256] = "out/layout.png";
  int m_color = 0;  // 0: auto (thread for fragments, bank for memory), else ColorBy + 1
  bool m_inverse = false;
  int m_cells = 0;             // 0: labels, 1: fit, 2: m_cell_size
  float m_cell_size = 24;
  int m_repeat[2] = {2, 1};    // the fragment controls: copies down the rows, across the columns
  int m_repeat_on = 0;         // 0: new threads, 1: new values of the same threads
  int m_repeat_order = 0;      // 0: copies numbered down the rows first, 1: across the columns first
  int m_replicate = 2;
  int m_settings = 0;          // bumped when colour, inverse, access or cells change: the scenes rebuild
  std::vector<LayoutInfo> m_kernel_layouts;
  Plot m_a, m_b;
  std::string m_status, m_bank_summary;
};

}  // namespace tl::gui
