// Layout scene builders: one table drawer (cells, labels that give way as cells shrink, borders, axes) shared by
// the layout grid, the inverse view and the bank map, plus legends.
#include "viz/layout_scene.hpp"

#include <algorithm>
#include <cstdio>
#include <cmath>
#include <functional>
#include <map>

#include "viz/palette.hpp"

namespace tl::viz {
namespace {

// [SECTION] colours ------------------------------------------------------------------------------------------

struct ColorContext {
  ColorBy mode;
  Color unset;
  int num_threads = 0;
  std::int64_t max_index = 0;  // largest index (or offset) for the sequential ramp

  ColorContext(const LayoutGrid& g, ColorBy m, const Theme& theme = light_theme()) : mode(m), unset(theme.unset) {
    num_threads = g.num_threads();
    for (const auto& c : g.cells) max_index = std::max({max_index, c.index, c.offset});
  }

  Color operator()(const Cell& c) const {
    switch (mode) {
      case ColorBy::thread:
        if (c.thread < 0) break;
        return num_threads <= 32 ? categorical(c.thread) : warp_family(c.thread);
      case ColorBy::warp:
        if (c.thread < 0) break;
        return categorical(c.thread / 32);
      case ColorBy::value:
        if (c.value < 0) break;
        return categorical(c.value);
      case ColorBy::bank:
        if (c.bank < 0) break;
        return categorical(c.bank);
      case ColorBy::index: {
        std::int64_t v = c.index >= 0 ? c.index : c.offset;
        if (v < 0) break;
        return sequential(max_index > 0 ? static_cast<double>(v) / max_index : 0.0);
      }
    }
    return unset;
  }
};

int digits(std::int64_t v) { return v <= 0 ? 1 : static_cast<int>(std::floor(std::log10(static_cast<double>(v)))) + 1; }

// [SECTION] the table drawer -------------------------------------------------------------------------------------

struct TableSpec {
  const Theme* theme = &light_theme();
  int rows = 0, cols = 0;
  double cw = 0, ch = 0;      // cell width and height
  int label_lines = 0;        // lines of label text per cell (0: none)
  double max_line_em = 0;     // widest label line, in em (from estimate_text_width at size 1)
  std::function<Color(int r, int c)> fill;
  std::function<std::int64_t(int r, int c)> id;
  std::function<void(int r, int c, int lines, std::vector<std::string>& out)> label;  // out has `lines` slots
  std::function<std::string(int r)> row_label;
  std::function<std::string(int c)> col_label;
  std::string row_axis_max, col_axis_max;  // widest axis labels, for sizing
  int block = 8;                            // heavier rule every `block` cells (0: none)
};

struct TableGeometry {
  double left = 0, top = 0;      // where the cells start
  double width = 0, height = 0;  // the whole table including axes
};

// Font size for `lines` lines of `em`-wide text in a cw x ch cell.
double fit_font(double cw, double ch, int lines, double em) {
  if (lines <= 0 || em <= 0) return 0;
  double by_height = ch * 0.80 / (lines * 1.12);
  double by_width = cw * 0.88 / em;
  return std::min({by_height, by_width, 13.0});
}

double axis_font_for(double cell) { return std::clamp(cell * 0.55, 8.0, 11.0); }

// Smallest power-of-two step that keeps axis labels of `label_w` apart on cells `cell` wide.
int tick_step(double cell, double label_w) {
  int k = 1;
  while (k * cell < label_w + 4 && k < (1 << 20)) k *= 2;
  return k;
}

TableGeometry measure_table(const TableSpec& t, bool axes) {
  TableGeometry g;
  double row_font = axis_font_for(t.ch), col_font = axis_font_for(t.cw);
  double row_axis_w = axes ? estimate_text_width(t.row_axis_max, row_font) + 8 : 0;
  double col_axis_h = axes ? col_font * 1.8 : 0;
  g.left = row_axis_w;
  g.top = col_axis_h;
  g.width = row_axis_w + t.cols * t.cw;
  g.height = col_axis_h + t.rows * t.ch;
  return g;
}

// Draws the table with its top-left corner (axes included) at (x0, y0); returns its geometry.
TableGeometry draw_table(Scene& s, double x0, double y0, const TableSpec& t, bool axes) {
  TableGeometry g = measure_table(t, axes);
  double gx = x0 + g.left, gy = y0 + g.top;
  double gw = t.cols * t.cw, gh = t.rows * t.ch;

  s.rects.reserve(s.rects.size() + static_cast<size_t>(t.rows) * t.cols);
  for (int r = 0; r < t.rows; ++r) {
    for (int c = 0; c < t.cols; ++c) {
      Rect rect;
      rect.x = gx + c * t.cw;
      rect.y = gy + r * t.ch;
      rect.w = t.cw;
      rect.h = t.ch;
      rect.fill = t.fill(r, c);
      rect.id = t.id ? t.id(r, c) : -1;
      s.rects.push_back(rect);
    }
  }

  // Labels give way first: two lines, then the first line alone, then nothing.
  int lines = t.label_lines;
  double font = 0;
  while (lines > 0) {
    font = fit_font(t.cw, t.ch, lines, t.max_line_em);
    if (font >= kMinLabelFont) break;
    --lines;
  }
  if (lines > 0 && t.label) {
    std::vector<std::string> text(static_cast<size_t>(t.label_lines));
    double line_h = font * 1.12;
    for (int r = 0; r < t.rows; ++r) {
      for (int c = 0; c < t.cols; ++c) {
        std::fill(text.begin(), text.end(), std::string{});
        t.label(r, c, lines, text);
        Color ink = text_color_on(t.fill(r, c));
        double cy = gy + (r + 0.5) * t.ch - (lines - 1) * line_h / 2;
        for (int i = 0; i < lines; ++i) {
          if (text[static_cast<size_t>(i)].empty()) continue;
          Text label;
          label.x = gx + (c + 0.5) * t.cw;
          label.y = cy + i * line_h;
          label.text = std::move(text[static_cast<size_t>(i)]);
          label.size = font;
          label.color = ink;
          label.align = Align::center;
          s.texts.push_back(std::move(label));
        }
      }
    }
  }

  // Borders next: thin rules between cells, heavier ones every `block` cells (the 8x8 core matrices of the
  // tensor-core atoms), and always the frame.
  double cell_min = std::min(t.cw, t.ch);
  if (cell_min >= kMinBorderCell) {
    Color thin = t.theme->rule;
    thin.a = cell_min >= 16 ? 0.35f : 0.22f;
    double w = cell_min >= 16 ? 1.0 : 0.5;
    for (int r = 1; r < t.rows; ++r) s.lines.push_back({gx, gy + r * t.ch, gx + gw, gy + r * t.ch, thin, w});
    for (int c = 1; c < t.cols; ++c) s.lines.push_back({gx + c * t.cw, gy, gx + c * t.cw, gy + gh, thin, w});
  }
  if (t.block > 0 && cell_min * t.block >= 24) {
    Color heavy = t.theme->rule;
    heavy.a = 0.75f;
    double w = cell_min >= 8 ? 1.5 : 1.0;
    for (int r = t.block; r < t.rows; r += t.block) s.lines.push_back({gx, gy + r * t.ch, gx + gw, gy + r * t.ch, heavy, w});
    for (int c = t.block; c < t.cols; c += t.block) s.lines.push_back({gx + c * t.cw, gy, gx + c * t.cw, gy + gh, heavy, w});
  }
  Color frame = t.theme->ink;
  s.lines.push_back({gx, gy, gx + gw, gy, frame, 1.5});
  s.lines.push_back({gx, gy + gh, gx + gw, gy + gh, frame, 1.5});
  s.lines.push_back({gx, gy, gx, gy + gh, frame, 1.5});
  s.lines.push_back({gx + gw, gy, gx + gw, gy + gh, frame, 1.5});

  // Axes last: tick labels thin out to powers of two so they never overlap.
  if (axes) {
    double row_font = axis_font_for(t.ch), col_font = axis_font_for(t.cw);
    int row_step = tick_step(t.ch, row_font * 1.1);
    int col_step = tick_step(t.cw, estimate_text_width(t.col_axis_max, col_font));
    for (int r = 0; r < t.rows; r += row_step) {
      double y = gy + (r + 0.5) * t.ch;
      s.texts.push_back({gx - 6, y, t.row_label(r), row_font, t.theme->muted, Align::right});
      if (row_step > 1) s.lines.push_back({gx - 3, y, gx, y, t.theme->muted, 0.75});
    }
    for (int c = 0; c < t.cols; c += col_step) {
      double x = gx + (c + 0.5) * t.cw;
      s.texts.push_back({x, gy - col_font * 0.9, t.col_label(c), col_font, t.theme->muted, Align::center});
      if (col_step > 1) s.lines.push_back({x, gy - 3, x, gy, t.theme->muted, 0.75});
    }
  }
  return g;
}

// [SECTION] legends ------------------------------------------------------------------------------------------

struct Legend {
  std::string heading;
  std::vector<std::pair<Color, std::string>> entries;
  std::string note;   // a line under the entries ("... 96 more")
  bool ramp = false;  // a sequential ramp from entries[0].second (low) to entries[1].second (high)
};

constexpr double kLegendRow = 16, kLegendGap = 24, kLegendColumnGap = 14, kLegendHeading = 22;

// Entries per column when the legend may be at most `max_height` tall (0: one column).
std::size_t legend_rows(const Legend& l, double max_height) {
  const std::size_t n = std::max<std::size_t>(l.entries.size(), 1);
  if (l.ramp || max_height <= 0) return n;
  const double room = max_height - kLegendHeading - (l.note.empty() ? 0 : kLegendRow);
  return std::clamp<std::size_t>(static_cast<std::size_t>(room / kLegendRow), 1, n);
}

double legend_column_width(const Legend& l) {
  double w = 0;
  for (const auto& e : l.entries) w = std::max(w, 18 + estimate_text_width(e.second, 11));
  return l.ramp ? 22 + w : w;
}

double legend_width(const Legend& l, double max_height) {
  const std::size_t rows = legend_rows(l, max_height);
  const std::size_t cols = l.ramp ? 1 : (l.entries.size() + rows - 1) / std::max<std::size_t>(rows, 1);
  const double entries = static_cast<double>(std::max<std::size_t>(cols, 1)) * (legend_column_width(l) + kLegendColumnGap) -
                         kLegendColumnGap;
  // Bold headings run ~10% wider than the regular-weight estimate.
  return std::max({entries, estimate_text_width(l.heading, 12) * 1.1, estimate_text_width(l.note, 10)});
}

double legend_height(const Legend& l, double max_height) {
  double h = kLegendHeading;
  h += l.ramp ? 140 : kLegendRow * static_cast<double>(legend_rows(l, max_height));
  if (!l.note.empty()) h += kLegendRow;
  return h;
}

void draw_legend(Scene& s, double x, double y, const Legend& l, const Theme& theme, double max_height) {
  s.texts.push_back({x, y + 8, l.heading, 12, theme.ink, Align::left, true});
  y += kLegendHeading;
  if (l.ramp) {
    const int steps = 64;
    double h = 128.0 / steps;
    for (int i = 0; i < steps; ++i) {
      s.rects.push_back({x, y + i * h, 16, h + 0.5, sequential(i / double(steps - 1)), {0, 0, 0, 0}, 1, -1});
    }
    s.lines.push_back({x, y, x + 16, y, theme.ink, 0.5});
    s.lines.push_back({x, y + 128, x + 16, y + 128, theme.ink, 0.5});
    s.texts.push_back({x + 22, y + 4, l.entries.size() > 0 ? l.entries[0].second : "0", 11, theme.ink, Align::left});
    s.texts.push_back({x + 22, y + 124, l.entries.size() > 1 ? l.entries[1].second : "", 11, theme.ink, Align::left});
    y += 140;
  } else {
    const std::size_t rows = legend_rows(l, max_height);
    const double column = legend_column_width(l) + kLegendColumnGap;
    for (std::size_t i = 0; i < l.entries.size(); ++i) {
      const double ex = x + static_cast<double>(i / rows) * column, ey = y + static_cast<double>(i % rows) * kLegendRow;
      Color edge = theme.rule;
      edge.a = 0.6f;
      s.rects.push_back({ex, ey + 2, 12, 12, l.entries[i].first, edge, 0.5, -1});
      s.texts.push_back({ex + 18, ey + 8, l.entries[i].second, 11, theme.ink, Align::left});
    }
    y += kLegendRow * static_cast<double>(rows);
  }
  if (!l.note.empty()) s.texts.push_back({x, y + 8, l.note, 10, theme.muted, Align::left});
}

Legend make_legend(const LayoutGrid& g, const ColorContext& ctx) {
  Legend l;
  constexpr int kMaxEntries = 32;
  auto list = [&](int n, const std::string& prefix, auto color_of) {
    for (int i = 0; i < std::min(n, kMaxEntries); ++i) l.entries.emplace_back(color_of(i), prefix + std::to_string(i));
    if (n > kMaxEntries) l.note = "... " + std::to_string(n - kMaxEntries) + " more (colours repeat)";
  };
  switch (ctx.mode) {
    case ColorBy::thread: {
      int n = ctx.num_threads;
      l.heading = "thread";
      if (n <= 32) {
        list(n, "T", [](int i) { return categorical(i); });
      } else {
        // A swatch per lane (warp 0's shade): thread t is lane t % 32, its warp turning the hue a little.
        const int warps = (n + 31) / 32;
        l.heading = "thread (colour by lane)";
        for (int lane = 0; lane < 32; ++lane) l.entries.emplace_back(warp_family(lane), tagged("T", lane) + " + 32k");
        l.note = "k: warp 0 to " + std::to_string(warps - 1) + " (shifts the hue)";
      }
      break;
    }
    case ColorBy::warp:
      l.heading = "warp";
      list((ctx.num_threads + 31) / 32, "W", [](int i) { return categorical(i); });
      break;
    case ColorBy::value:
      l.heading = "value";
      list(g.num_values(), "V", [](int i) { return categorical(i); });
      break;
    case ColorBy::bank:
      l.heading = g.elem_bytes > 0 ? "bank (" + std::to_string(g.elem_bytes) + "-byte elements)" : "bank";
      list(kNumBanks, "B", [](int i) { return categorical(i); });
      break;
    case ColorBy::index:
      l.heading = g.has_offsets() ? "offset" : "index";
      l.ramp = true;
      l.entries = {{sequential(0), "0"}, {sequential(1), std::to_string(ctx.max_index)}};
      break;
  }
  return l;
}

// [SECTION] page assembly ------------------------------------------------------------------------------------

constexpr double kMargin = 16, kTitleHeight = 28;

double auto_cell(const GridStyle& style, int rows, int cols, double aspect) {
  if (style.cell_size > 0) return style.cell_size;
  double longest = std::max(rows, static_cast<int>(std::ceil(cols * aspect)));
  return std::clamp(style.max_extent / std::max(longest, 1.0), 0.25, style.max_cell_size);
}

Scene assemble(const TableSpec& t, const GridStyle& style, const std::string& title, const Legend* legend) {
  Scene s;
  s.background = style.theme.background;
  TableGeometry g = measure_table(t, style.axes);
  double top = kMargin + (title.empty() ? 0 : kTitleHeight);
  double legend_h = legend ? legend_height(*legend, 0) : 0;
  s.width = kMargin + g.width + (legend ? kLegendGap + legend_width(*legend, 0) : 0) + kMargin;
  s.height = top + std::max(g.height, legend_h + g.top) + kMargin;
  if (!title.empty()) {
    s.width = std::max(s.width, 2 * kMargin + estimate_text_width(title, 14) * 1.15);
    s.texts.push_back({kMargin, kMargin + 10, title, 14, style.theme.ink, Align::left, true});
  }
  draw_table(s, kMargin, top, t, style.axes);
  if (legend) draw_legend(s, kMargin + g.width + kLegendGap, top + g.top, *legend, style.theme, 0);
  return s;
}

}  // namespace

// [SECTION] public builders ----------------------------------------------------------------------------------

const char* color_by_name(ColorBy mode) {
  switch (mode) {
    case ColorBy::thread: return "thread";
    case ColorBy::warp: return "warp";
    case ColorBy::value: return "value";
    case ColorBy::bank: return "bank";
    case ColorBy::index: return "index";
  }
  return "?";
}

std::optional<ColorBy> parse_color_by(const std::string& name) {
  for (ColorBy m : {ColorBy::thread, ColorBy::warp, ColorBy::value, ColorBy::bank, ColorBy::index}) {
    if (name == color_by_name(m)) return m;
  }
  return std::nullopt;
}

Color cell_color(const LayoutGrid& grid, const Cell& cell, ColorBy mode) { return ColorContext(grid, mode)(cell); }

namespace {
// What a cell's label holds: lines of text and the widest line in em, and the cell's width over its height.
struct LabelMetrics {
  int lines = 1;
  double em = 1;
  double aspect = 1;
};

// The inverse view colours by thread unless asked for value or warp (a row is one thread).
ColorBy inverse_mode(ColorBy mode) { return mode == ColorBy::value || mode == ColorBy::warp ? mode : ColorBy::thread; }

LabelMetrics label_metrics(const LayoutGrid& grid, ColorBy color, bool inverse) {
  LabelMetrics m;
  if (inverse) {
    m.em = 0.636 * (digits(grid.rows - 1) + digits(grid.cols - 1)) + 0.35 * 3;
    m.aspect = 1.8;  // coordinates "(r,c)" are wider than they are tall
    return m;
  }
  std::int64_t max_offset = 0, max_index = 0;
  for (const auto& c : grid.cells) {
    max_offset = std::max(max_offset, c.offset);
    max_index = std::max(max_index, c.index);
  }
  if (grid.has_threads()) {
    m.lines = 2;
    // a replicated element lists every holder, "T5/69"
    const int thread_em = grid.replication * digits(grid.num_threads() - 1);
    m.em = 0.70 + 0.636 * std::max(thread_em, digits(grid.num_values() - 1)) + 0.3 * (grid.replication - 1);
  } else if (grid.has_offsets()) {
    m.lines = color == ColorBy::bank ? 2 : 1;
    m.em = 0.636 * std::max(digits(max_offset), 2);
  } else {
    m.em = 0.636 * digits(max_index);
  }
  return m;
}

// A cell size the user gave (0: fit): within what a painter can draw, so a scene never explodes in extent.
Status check_cell_size(double cell_size) {
  if (cell_size == 0 || (cell_size >= 1 && cell_size <= 500)) return {};
  char text[32];
  std::snprintf(text, sizeof text, "%g", cell_size);
  return make_error(ErrorCode::invalid_argument,
                    std::string("cell size ") + text + " is out of range: 1 to 500 points, or 0 to fit the plot");
}
}  // namespace

Result<Scene> build_layout_scene(const LayoutGrid& grid, const GridStyle& style) {
  TL_RETURN_IF_ERROR(grid.validate());
  TL_RETURN_IF_ERROR(check_cell_size(style.cell_size));
  ColorContext ctx(grid, style.color, style.theme);
  bool fragment = grid.has_threads();
  bool offsets = grid.has_offsets();

  TableSpec t;
  t.theme = &style.theme;
  t.rows = grid.rows;
  t.cols = grid.cols;
  t.cw = t.ch = auto_cell(style, grid.rows, grid.cols, 1.0);

  // Label content: T/V for fragments, the offset (and bank when coloured by bank) for memory, else the index.
  const LabelMetrics metrics = label_metrics(grid, style.color, false);
  t.label_lines = metrics.lines;
  t.max_line_em = metrics.em;
  t.fill = [&](int r, int c) { return ctx(grid.at(r, c)); };
  t.id = [&](int r, int c) { return static_cast<std::int64_t>(r) * grid.cols + c; };
  t.label = [&](int r, int c, int lines, std::vector<std::string>& out) {
    const Cell& cell = grid.at(r, c);
    if (fragment) {
      if (cell.thread >= 0)
        out[0] = grid.replication > 1 ? thread_label(grid, static_cast<std::int64_t>(r) * grid.cols + c) : tagged("T", cell.thread);
      if (lines > 1 && cell.value >= 0) out[1] = tagged("V", cell.value);
    } else if (offsets) {
      if (cell.offset >= 0) out[0] = std::to_string(cell.offset);
      if (lines > 1 && cell.bank >= 0) out[1] = tagged("B", cell.bank);
    } else if (cell.index >= 0) {
      out[0] = std::to_string(cell.index);
    }
  };
  t.row_label = [](int r) { return std::to_string(r); };
  t.col_label = [](int c) { return std::to_string(c); };
  t.row_axis_max = std::to_string(std::max(grid.rows - 1, 0));
  t.col_axis_max = std::to_string(std::max(grid.cols - 1, 0));

  std::string title = style.title.empty() ? grid.title : style.title;
  if (!title.empty()) {
    title += tagged("  (", grid.rows) + tagged("x", grid.cols) + ", by " +
             color_by_name(style.color) + ")";
  }
  if (!style.show_title) title.clear();
  Legend legend = make_legend(grid, ctx);
  bool show_legend = style.legend && (legend.ramp || !legend.entries.empty());  // nothing to explain: no legend
  return assemble(t, style, title, show_legend ? &legend : nullptr);
}

Result<Scene> build_inverse_scene(const LayoutGrid& grid, const GridStyle& style) {
  TL_RETURN_IF_ERROR(grid.validate());
  TL_RETURN_IF_ERROR(check_cell_size(style.cell_size));
  if (!grid.has_threads()) {
    return make_error(ErrorCode::invalid_argument,
                      "the inverse view needs a fragment (cells with threads); '" + grid.title + "' has none");
  }
  int threads = grid.num_threads(), values = std::max(grid.num_values(), 1);
  TL_RETURN_IF_ERROR(check_grid_size(threads, values));
  // inverse[t * values + v] = index of the cell thread t holds as value v (-1: none). Every holder of a replicated
  // element holds it as the same value (TileLang's replicate keeps the value index).
  std::vector<std::int64_t> inverse(static_cast<size_t>(threads) * values, -1);
  for (size_t i = 0; i < grid.cells.size(); ++i) {
    const Cell& c = grid.cells[i];
    for (int th : grid.threads_of(static_cast<std::int64_t>(i)))
      inverse[static_cast<size_t>(th) * values + std::max(c.value, 0)] = static_cast<std::int64_t>(i);
  }
  ColorContext ctx(grid, inverse_mode(style.color), style.theme);
  const LabelMetrics metrics = label_metrics(grid, style.color, true);

  TableSpec t;
  t.theme = &style.theme;
  t.rows = threads;
  t.cols = values;
  t.ch = auto_cell(style, threads, values, metrics.aspect);
  t.cw = t.ch * metrics.aspect;
  t.label_lines = metrics.lines;
  t.max_line_em = metrics.em;
  auto cell_of = [&](int r, int c) { return inverse[static_cast<size_t>(r) * values + c]; };
  t.fill = [&](int r, int c) {
    std::int64_t i = cell_of(r, c);
    return i < 0 ? style.theme.unset : ctx(grid.cells[static_cast<size_t>(i)]);
  };
  t.id = cell_of;
  t.label = [&](int r, int c, int, std::vector<std::string>& out) {
    std::int64_t i = cell_of(r, c);
    if (i < 0) return;
    const Cell& cell = grid.cells[static_cast<size_t>(i)];
    out[0] = tagged("(", cell.row) + "," + std::to_string(cell.col) + ")";
  };
  t.row_label = [](int r) { return tagged("T", r); };
  t.col_label = [](int c) { return tagged("V", c); };
  t.row_axis_max = tagged("T", threads - 1);
  t.col_axis_max = tagged("V", values - 1);

  std::string title = style.title.empty() ? grid.title : style.title;
  title += (title.empty() ? "" : "  ") + std::string("thread -> coordinates (") + std::to_string(threads) +
           " threads x " + std::to_string(grid.num_values()) + " values)";
  if (!style.show_title) title.clear();
  Legend legend = make_legend(grid, ctx);
  return assemble(t, style, title, style.legend ? &legend : nullptr);
}

double readable_cell_size(const LayoutGrid& grid, ColorBy color, bool inverse) {
  const LabelMetrics m = label_metrics(grid, color, inverse);
  constexpr double kFont = 9;  // fit_font's share of the cell, solved for this font size
  const double by_height = kFont * m.lines * 1.12 / 0.80, by_width = kFont * m.em / 0.88 / m.aspect;
  return std::ceil(std::max(by_height, by_width));
}

Scene build_legend_scene(const LayoutGrid& grid, ColorBy color, bool inverse, const Theme& theme, double max_height,
                         double max_width) {
  Scene s;
  s.background = theme.background;
  const ColorContext ctx(grid, inverse ? inverse_mode(color) : color, theme);
  Legend legend = make_legend(grid, ctx);
  if (max_width > 0 && !legend.ramp) {
    // The columns that fit the width; the entries past them counted in the note (hovering a cell still tells).
    const std::string base_note = legend.note;
    legend.note = base_note.empty() ? "…" : base_note;  // the note's row, for the count of rows per column
    const std::size_t rows = legend_rows(legend, max_height);
    const double column = legend_column_width(legend) + kLegendColumnGap;
    const std::size_t cols = std::max<std::size_t>(1, static_cast<std::size_t>((max_width + kLegendColumnGap) / column));
    legend.note = base_note;
    if (legend.entries.size() > rows * cols) {
      const std::size_t more = legend.entries.size() - (rows * cols - 1);
      legend.entries.resize(rows * cols - 1);
      const std::string count = "… " + std::to_string(more) + " more (hover a cell)";
      legend.note = elide_text(base_note.empty() ? count : base_note + "; " + count, 10, max_width);
    } else {
      legend.note = elide_text(base_note, 10, max_width);
    }
  }
  s.width = legend_width(legend, max_height) + 2 * 8;
  s.height = legend_height(legend, max_height) + 2 * 8;
  draw_legend(s, 8, 8, legend, theme, max_height);
  return s;
}

Scene build_bank_scene(const BankMap& map) {
  Scene s;
  const Color ink = light_theme().ink;
  constexpr double cw = 40, ch = 24;
  double y = kMargin;
  s.width = 2 * kMargin + 70 + kNumBanks * cw;
  if (!map.title.empty()) {
    s.texts.push_back({kMargin, y + 10, map.title, 14, ink, Align::left, true});
    s.width = std::max(s.width, 2 * kMargin + estimate_text_width(map.title, 14) * 1.15);
    y += kTitleHeight;
  }
  int total = map.total_wavefronts(), ideal = map.total_ideal_wavefronts();
  char summary[160];
  std::snprintf(summary, sizeof(summary), "%d wavefronts, ideal %d (%.2fx)%s", total, ideal,
                ideal > 0 ? double(total) / ideal : 0.0, total > ideal ? ": bank conflicts" : ": conflict-free");
  s.texts.push_back({kMargin, y + 8, summary, 12, total > ideal ? Color{0.75f, 0.1f, 0.1f, 1} : ink, Align::left});
  y += 24;

  for (size_t ri = 0; ri < map.requests.size(); ++ri) {
    BankRequest req = map.requests[ri];
    assign_wavefronts(req);
    int ideal_per_bank = std::max(req.ideal_wavefronts, 1);
    // threads[wf * 32 + bank]: who that bank serves in that wavefront.
    int rows = std::max(req.wavefronts, 1);
    std::vector<std::vector<int>> threads(static_cast<size_t>(rows) * kNumBanks);
    for (const auto& a : req.accesses) {
      if (a.bank < 0 || a.bank >= kNumBanks || a.wavefront < 0 || a.wavefront >= rows) continue;
      auto& v = threads[static_cast<size_t>(a.wavefront) * kNumBanks + a.bank];
      if (std::find(v.begin(), v.end(), a.thread) == v.end()) v.push_back(a.thread);
    }
    char head[200];
    std::snprintf(head, sizeof(head), "%s: %d wavefronts (ideal %d)", req.label.c_str(), req.wavefronts,
                  req.ideal_wavefronts);
    s.texts.push_back({kMargin, y + 8, head, 12, ink, Align::left, true});
    y += 20;

    // Load relative to the ideal: a bank serving 8 words where 4 is ideal is 2x over, and coloured as such.
    auto over = [&](int bank) { return (req.degree[bank] + ideal_per_bank - 1) / ideal_per_bank; };
    TableSpec t;
    t.rows = rows + 1;  // the last row holds each bank's degree
    t.cols = kNumBanks;
    t.cw = cw;
    t.ch = ch;
    t.label_lines = 1;
    t.max_line_em = 3.2;
    t.block = 0;
    t.fill = [&](int r, int c) {
      if (r == rows) return conflict_color(req.degree[c] == 0 ? 0 : over(c));
      const auto& v = threads[static_cast<size_t>(r) * kNumBanks + c];
      if (v.empty()) return Color{0.97f, 0.97f, 0.97f, 1};
      return conflict_color(over(c));
    };
    t.id = [&](int r, int c) -> std::int64_t {
      return r == rows ? -1 : (static_cast<std::int64_t>(ri) << 16) | (r << 5) | c;
    };
    t.label = [&](int r, int c, int, std::vector<std::string>& out) {
      if (r == rows) {
        out[0] = req.degree[c] > 0 ? tagged("x", req.degree[c]) : "";
        return;
      }
      const auto& v = threads[static_cast<size_t>(r) * kNumBanks + c];
      if (v.empty()) return;
      std::string text = tagged("T", v[0]);
      if (v.size() > 1) text += tagged("+", v.size() - 1);
      out[0] = text;
    };
    t.row_label = [&](int r) { return r == rows ? std::string("degree") : tagged("wf ", r); };
    t.col_label = [](int c) { return std::to_string(c); };
    t.row_axis_max = "degree";
    t.col_axis_max = "31";
    TableGeometry g = draw_table(s, kMargin, y, t, true);
    // Conflicted banks get a red outline over their whole column.
    for (int b = 0; b < kNumBanks; ++b) {
      if (req.degree[b] <= ideal_per_bank) continue;
      s.rects.push_back({kMargin + g.left + b * cw + 1, y + g.top + 1, cw - 2, rows * ch - 2, {0, 0, 0, 0},
                         {0.85f, 0.1f, 0.1f, 1}, 2, -1});
    }
    s.width = std::max(s.width, 2 * kMargin + g.width);
    y += g.height + 18;
  }
  s.height = y + kMargin;
  return s;
}

}  // namespace tl::viz
