// Scene builders for layouts: the layout grid, its inverse (thread -> coordinates) and the bank map.
#pragma once

#include <optional>
#include <string>

#include "runtime/core/status.hpp"
#include "viz/bank_map.hpp"
#include "viz/layout_grid.hpp"
#include "viz/palette.hpp"
#include "viz/scene.hpp"

namespace tl::viz {

enum class ColorBy { thread, warp, value, bank, index };

const char* color_by_name(ColorBy mode);
std::optional<ColorBy> parse_color_by(const std::string& name);  // "thread", "warp", ...

struct GridStyle {
  ColorBy color = ColorBy::thread;
  double cell_size = 0;        // scene units per cell; 0: fit the grid into max_extent
  double max_extent = 2048;    // auto cell size: the grid's longer side stays within this
  double max_cell_size = 40;   // auto cell size never grows beyond this (small atoms)
  bool legend = true;
  bool axes = true;
  std::string title;           // empty: the grid's title
  bool show_title = true;      // false: no title line (the app shows it above the plot)
  Theme theme = light_theme();
};

// Below these cell sizes (scene units) labels, then borders, give way; axis ticks thin out to stay legible.
inline constexpr double kMinLabelFont = 6.5;
inline constexpr double kMinBorderCell = 5.0;

// Rect ids of the layout grid (and of the inverse view): the index of the cell in grid.cells.
Result<Scene> build_layout_scene(const LayoutGrid& grid, const GridStyle& style = {});

// A row per thread, a column per value: each cell names the coordinate the thread holds as that value.
// Needs a fragment (cells with threads).
Result<Scene> build_inverse_scene(const LayoutGrid& grid, const GridStyle& style = {});

// The smallest cell size (scene units) at which every cell shows its whole label at a readable 9 units.
double readable_cell_size(const LayoutGrid& grid, ColorBy color, bool inverse = false);

// The legend of build_layout_scene (build_inverse_scene with `inverse`) on its own, its entries in columns of at
// most `max_height` (0: one column), as many columns as `max_width` holds (0: all; entries past them are counted in
// its note): the app keeps it beside the plot while the plot pans and zooms.
Scene build_legend_scene(const LayoutGrid& grid, ColorBy color, bool inverse, const Theme& theme, double max_height,
                         double max_width = 0);

// Per request a block of 32 bank columns x wavefront rows; each cell lists the threads served by that bank in
// that wavefront, coloured by how many times over its ideal the bank is loaded. Rect ids encode
// (request << 16) | (wavefront << 5) | bank.
Scene build_bank_scene(const BankMap& map);

// The colour a cell gets under `mode` (grey where the field is unset); exposed for tests and the GUI.
Color cell_color(const LayoutGrid& grid, const Cell& cell, ColorBy mode);

}  // namespace tl::viz
