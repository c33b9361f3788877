// The GUI's layout viewer: a SPEC or atom, its grid/inverse plot with pan, zoom and hover, and export.
#pragma once

#include <string>

#include "viz/imgui_painter.hpp"
#include "viz/layout_grid.hpp"
#include "viz/layout_scene.hpp"

namespace tl::gui {

class LayoutPanel {
 public:
  LayoutPanel();
  void draw();

 private:
  void rebuild();

  char m_spec[256] = {};
  char m_dtype[16] = {};
  char m_export_path[256] = "out/layout.svg";
  int m_color = 0;  // 0: auto (thread for fragments, bank for memory), else ColorBy + 1
  bool m_inverse = false;
  bool m_dirty = true;
  viz::LayoutGrid m_grid;
  viz::Scene m_scene;
  viz::View m_view;
  std::string m_error, m_status;
};

}  // namespace tl::gui
