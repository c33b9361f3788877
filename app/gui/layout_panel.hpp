// The GUI's layout viewer: the open kernel's layouts or any SPEC, pan/zoom/hover, colour modes, a bank-conflict
// overlay for an access pattern, repeat/replicate of a fragment, and export (PNG/SVG/PDF through the cairo painter).
#pragma once

#include <string>
#include <vector>

#include "runtime/core/status.hpp"
#include "runtime/spec/kernel_spec.hpp"
#include "viz/imgui_painter.hpp"
#include "viz/layout_grid.hpp"
#include "viz/layout_scene.hpp"

namespace tl::gui {

class LayoutPanel {
 public:
  LayoutPanel();
  void draw();

  void set_spec(const std::string& spec);
  std::string spec() const { return m_spec; }
  // The layouts the open kernel exposes for its current config (listed first in the picker).
  void set_kernel_layouts(std::vector<LayoutInfo> layouts);
  void set_access(const std::string& access);
  void set_color(const std::string& mode);  // "auto", "thread", "warp", "value", "bank", "index"
  // Grow the shown fragment as TileLang's Fragment.repeat / replicate (the SPEC gets .repeat(...) / .replicate(n));
  // undo_op drops the last of them. An error names why (not a fragment, a count out of range, ...).
  Status repeat(int rows, int cols, bool on_thread, bool rows_first);
  Status replicate(int n);
  Status undo_op();
  // The grid shown, rebuilt first when the SPEC changed (scripts read it before a frame is drawn).
  const viz::LayoutGrid& grid();
  const std::string& error() const { return m_error; }
  const viz::Scene& scene() const { return m_scene; }
  const std::string& bank_summary() const { return m_bank_summary; }

 private:
  void rebuild();
  void add_bank_overlay();
  void draw_fragment_controls();
  Status append_op(const std::string& op);

  char m_spec[256] = {};
  char m_dtype[16] = {};
  char m_access[128] = {};
  char m_export_path[256] = "out/layout.png";
  int m_color = 0;  // 0: auto (thread for fragments, bank for memory), else ColorBy + 1
  bool m_inverse = false;
  int m_repeat[2] = {2, 1};    // the fragment controls: copies down the rows, across the columns
  int m_repeat_on = 0;         // 0: new threads, 1: new values of the same threads
  int m_repeat_order = 0;      // 0: copies numbered down the rows first, 1: across the columns first
  int m_replicate = 2;
  bool m_dirty = true;
  std::vector<LayoutInfo> m_kernel_layouts;
  viz::LayoutGrid m_grid;
  viz::Scene m_scene;
  viz::View m_view;
  std::string m_error, m_status, m_bank_summary;
};

}  // namespace tl::gui
