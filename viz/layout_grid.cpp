// LayoutGrid queries, validation and its JSON / ASCII exports.
#include "viz/layout_grid.hpp"

#include <algorithm>
#include <sstream>

namespace tl::viz {

LayoutGrid LayoutGrid::make(int rows, int cols, std::string title) {
  LayoutGrid g;
  g.rows = std::max(rows, 0);
  g.cols = std::max(cols, 0);
  g.title = std::move(title);
  g.cells.resize(static_cast<size_t>(g.rows) * g.cols);
  for (int r = 0; r < g.rows; ++r) {
    for (int c = 0; c < g.cols; ++c) {
      g.at(r, c).row = r;
      g.at(r, c).col = c;
    }
  }
  return g;
}

bool LayoutGrid::has_threads() const {
  return std::any_of(cells.begin(), cells.end(), [](const Cell& c) { return c.thread >= 0; });
}

bool LayoutGrid::has_offsets() const {
  return std::any_of(cells.begin(), cells.end(), [](const Cell& c) { return c.offset >= 0; });
}

int LayoutGrid::num_threads() const {
  int n = 0;
  for (const auto& c : cells) n = std::max(n, c.thread + 1);
  for (int t : holders) n = std::max(n, t + 1);
  return n;
}

std::vector<int> LayoutGrid::threads_of(std::int64_t index) const {
  if (index < 0 || static_cast<size_t>(index) >= cells.size() || cells[static_cast<size_t>(index)].thread < 0) return {};
  if (replication <= 1) return {cells[static_cast<size_t>(index)].thread};
  const auto first = holders.begin() + index * replication;
  return {first, first + replication};
}

int LayoutGrid::num_values() const {
  int n = 0;
  for (const auto& c : cells) n = std::max(n, c.value + 1);
  return n;
}

Status LayoutGrid::validate() const {
  if (rows <= 0 || cols <= 0) {
    return make_error(ErrorCode::invalid_argument,
                      "layout grid shape (" + std::to_string(rows) + ", " + std::to_string(cols) + ") is empty");
  }
  size_t expected = static_cast<size_t>(rows) * cols;
  if (replication < 1 || (replication > 1 && holders.size() != expected * static_cast<size_t>(replication))) {
    return make_error(ErrorCode::invalid_argument, "layout grid with replication " + std::to_string(replication) +
                                                       " needs that many holders per cell (" +
                                                       std::to_string(expected * static_cast<size_t>(std::max(replication, 1))) +
                                                       "), has " + std::to_string(holders.size()));
  }
  if (cells.size() != expected) {
    return make_error(ErrorCode::invalid_argument, "layout grid of shape (" + std::to_string(rows) + ", " +
                                                       std::to_string(cols) + ") needs " + std::to_string(expected) +
                                                       " cells, has " + std::to_string(cells.size()));
  }
  for (size_t i = 0; i < cells.size(); ++i) {
    const Cell& c = cells[i];
    if (static_cast<size_t>(c.row) * cols + c.col != i || c.col < 0 || c.col >= cols) {
      return make_error(ErrorCode::invalid_argument, "layout grid cell " + std::to_string(i) + " is at (" +
                                                         std::to_string(c.row) + ", " + std::to_string(c.col) +
                                                         "); cells must be in row-major order");
    }
    if (replication > 1 && c.thread >= 0 && holders[i * static_cast<size_t>(replication)] != c.thread) {
      return make_error(ErrorCode::invalid_argument, "layout grid cell (" + std::to_string(c.row) + ", " +
                                                         std::to_string(c.col) + ") lists thread " +
                                                         std::to_string(c.thread) + " but its first holder is " +
                                                         std::to_string(holders[i * static_cast<size_t>(replication)]));
    }
    if (c.bank >= 32) {
      return make_error(ErrorCode::invalid_argument,
                        "layout grid cell (" + std::to_string(c.row) + ", " + std::to_string(c.col) + ") has bank " +
                            std::to_string(c.bank) + "; banks are 0..31");
    }
  }
  return {};
}

int bank_of(std::int64_t offset, int elem_bytes) {
  if (offset < 0 || elem_bytes <= 0) return -1;
  return static_cast<int>((offset * elem_bytes / 4) % 32);
}

nlohmann::json to_json(const LayoutGrid& grid) {
  nlohmann::json cells = nlohmann::json::array();
  for (size_t i = 0; i < grid.cells.size(); ++i) {
    const Cell& c = grid.cells[i];
    nlohmann::json j = {{"row", c.row}, {"col", c.col}};
    if (c.thread >= 0) j["thread"] = c.thread;
    if (c.thread >= 0 && grid.replication > 1) j["threads"] = grid.threads_of(static_cast<std::int64_t>(i));
    if (c.value >= 0) j["value"] = c.value;
    if (c.offset >= 0) j["offset"] = c.offset;
    if (c.bank >= 0) j["bank"] = c.bank;
    if (c.index >= 0) j["index"] = c.index;
    cells.push_back(std::move(j));
  }
  nlohmann::json out = {{"title", grid.title}, {"shape", {grid.rows, grid.cols}}};
  if (grid.elem_bytes > 0) out["elem_bytes"] = grid.elem_bytes;
  if (grid.replication > 1) out["replication"] = grid.replication;
  if (grid.has_threads()) {
    out["num_threads"] = grid.num_threads();
    out["num_values"] = grid.num_values();
  }
  out["cells"] = std::move(cells);
  return out;
}

Result<LayoutGrid> layout_grid_from_json(const nlohmann::json& json) {
  try {
    const auto& shape = json.at("shape");
    if (!shape.is_array() || shape.size() != 2) {
      return make_error(ErrorCode::parse, "layout JSON: \"shape\" must be [rows, cols]");
    }
    LayoutGrid g = LayoutGrid::make(shape[0].get<int>(), shape[1].get<int>(), json.value("title", std::string{}));
    g.elem_bytes = json.value("elem_bytes", 0);
    g.replication = json.value("replication", 1);
    if (g.replication < 1 || g.replication > (1 << 16))
      return make_error(ErrorCode::parse, "layout JSON: \"replication\" must be 1..65536");
    if (g.replication > 1) g.holders.assign(g.cells.size() * static_cast<size_t>(g.replication), -1);
    const auto& cells = json.at("cells");
    if (!cells.is_array() || cells.size() != g.cells.size()) {
      return make_error(ErrorCode::parse, "layout JSON: \"cells\" must list one object per coordinate (" +
                                              std::to_string(g.cells.size()) + ")");
    }
    for (const auto& j : cells) {
      int r = j.at("row").get<int>(), c = j.at("col").get<int>();
      if (r < 0 || r >= g.rows || c < 0 || c >= g.cols) {
        return make_error(ErrorCode::parse, "layout JSON: cell (" + std::to_string(r) + ", " + std::to_string(c) +
                                                ") is outside the shape");
      }
      Cell& cell = g.at(r, c);
      cell.thread = j.value("thread", -1);
      cell.value = j.value("value", -1);
      cell.offset = j.value("offset", std::int64_t{-1});
      cell.bank = j.value("bank", -1);
      cell.index = j.value("index", std::int64_t{-1});
      if (g.replication > 1 && cell.thread >= 0) {
        const auto threads = j.at("threads").get<std::vector<int>>();
        if (threads.size() != static_cast<size_t>(g.replication))
          return make_error(ErrorCode::parse, "layout JSON: cell (" + std::to_string(r) + ", " + std::to_string(c) +
                                                  ") lists " + std::to_string(threads.size()) + " threads, not " +
                                                  std::to_string(g.replication) + " (\"replication\")");
        std::copy(threads.begin(), threads.end(), g.holders.begin() + (static_cast<std::ptrdiff_t>(r) * g.cols + c) * g.replication);
      }
    }
    TL_RETURN_IF_ERROR(g.validate());
    return g;
  } catch (const nlohmann::json::exception& e) {
    return make_error(ErrorCode::parse, std::string("layout JSON: ") + e.what());
  }
}

std::string thread_label(const LayoutGrid& grid, std::int64_t index) {
  std::string s = "T";  // appended, not concatenated: GCC 12 warns falsely (-Wrestrict) on "T" + to_string
  for (int t : grid.threads_of(index)) {
    if (s.size() > 1) s += '/';
    s += std::to_string(t);
  }
  return s;
}

namespace {

std::string cell_label(const LayoutGrid& g, size_t i, bool banks) {
  const Cell& c = g.cells[i];
  if (banks) return c.bank >= 0 ? std::to_string(c.bank) : ".";
  if (c.thread >= 0) {
    std::string s = thread_label(g, static_cast<std::int64_t>(i));
    s += 'V';
    s += std::to_string(std::max(c.value, 0));
    return s;
  }
  if (c.offset >= 0) return std::to_string(c.offset);
  if (c.index >= 0) return std::to_string(c.index);
  return ".";
}

void print_table(std::ostringstream& out, const LayoutGrid& g, bool banks) {
  std::vector<std::string> labels(g.cells.size());
  size_t width = std::to_string(g.cols - 1).size();
  for (size_t i = 0; i < g.cells.size(); ++i) {
    labels[i] = cell_label(g, i, banks);
    width = std::max(width, labels[i].size());
  }
  size_t row_width = std::to_string(g.rows - 1).size();
  auto pad = [&](const std::string& s, size_t w) { out << std::string(w - std::min(w, s.size()), ' ') << s; };
  pad("", row_width);
  out << " |";
  for (int c = 0; c < g.cols; ++c) {
    out << ' ';
    pad(std::to_string(c), width);
  }
  out << '\n' << std::string(row_width + 1, '-') << '+' << std::string((width + 1) * g.cols, '-') << '\n';
  for (int r = 0; r < g.rows; ++r) {
    pad(std::to_string(r), row_width);
    out << " |";
    for (int c = 0; c < g.cols; ++c) {
      out << ' ';
      pad(labels[static_cast<size_t>(r) * g.cols + c], width);
    }
    out << '\n';
  }
}

}  // namespace

std::string to_text(const LayoutGrid& grid) {
  std::ostringstream out;
  if (!grid.title.empty()) out << grid.title << '\n';
  out << "shape (" << grid.rows << ", " << grid.cols << ")";
  if (grid.has_threads()) out << ", " << grid.num_threads() << " threads x " << grid.num_values() << " values";
  if (grid.replication > 1) out << ", each element held by " << grid.replication << " threads";
  out << '\n';
  if (grid.rows <= 0 || grid.cols <= 0) return out.str();
  print_table(out, grid, false);
  bool any_bank = std::any_of(grid.cells.begin(), grid.cells.end(), [](const Cell& c) { return c.bank >= 0; });
  if (any_bank && !grid.has_threads()) {
    out << "\nbanks (" << grid.elem_bytes << "-byte elements)\n";
    print_table(out, grid, true);
  }
  return out.str();
}

std::string describe_cell(const LayoutGrid& grid, std::int64_t index) {
  if (index < 0 || static_cast<size_t>(index) >= grid.cells.size()) return {};
  const Cell& c = grid.cells[static_cast<size_t>(index)];
  std::string s = "(" + std::to_string(c.row) + ", " + std::to_string(c.col) + ")";
  if (c.thread >= 0) {
    s += "  thread " + std::to_string(c.thread) + " (warp " + std::to_string(c.thread / 32) + ", lane " +
         std::to_string(c.thread % 32) + ")";
    if (grid.replication > 1) s += ", held by threads " + thread_label(grid, index).substr(1);
  }
  if (c.value >= 0) s += "  value " + std::to_string(c.value);
  if (c.offset >= 0) s += "  offset " + std::to_string(c.offset);
  if (c.bank >= 0) s += "  bank " + std::to_string(c.bank);
  if (c.index >= 0) s += "  index " + std::to_string(c.index);
  return s;
}

}  // namespace tl::viz
