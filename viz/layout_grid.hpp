// LayoutGrid: a neutral, plottable picture of a layout (who or what sits at each coordinate of a 2-D tile),
// with the JSON contract and the ASCII table it exports to.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/core/status.hpp"

namespace tl::viz {

// The most cells a grid (and so a plot, a JSON or text export) holds: 1024x1024. Kernel tiles are far smaller;
// a whole tensor's layout (4096x4096 is 16M cells) would take gigabytes to draw. What to do instead is in the
// message of check_grid_size.
inline constexpr long long kMaxGridCells = 1ll << 20;
// The refusal of a rows x cols grid over kMaxGridCells (invalid_argument), or success.
Status check_grid_size(long long rows, long long cols);

// One coordinate of the tile. A field that does not apply stays -1: fragments fill thread/value,
// memory layouts fill offset/bank, plain layouts fill index.
struct Cell {
  int row = 0, col = 0;
  int thread = -1, value = -1;  // fragment: the (thread, value) pair that holds this coordinate
  std::int64_t offset = -1;     // memory layout: element offset from the tile's start
  int bank = -1;                // memory layout: the shared-memory bank of the element's first byte
  std::int64_t index = -1;      // plain layout: the layout's value at this coordinate
};

struct LayoutGrid {
  int rows = 0, cols = 0;
  std::vector<Cell> cells;  // row-major: cells[row * cols + col]
  std::string title;        // what it is (the SPEC or atom name)
  int elem_bytes = 0;       // element size behind `bank` (0 when no banks)
  // A fragment whose elements several threads hold (TileLang's replicate): `replication` threads per cell, listed
  // ascending in holders[index * replication + k] (the first is cells[index].thread). Empty when replication is 1.
  int replication = 1;
  std::vector<int> holders;

  // rows*cols cells with their coordinates set and everything else unset.
  static LayoutGrid make(int rows, int cols, std::string title = {});

  Cell& at(int row, int col) { return cells[static_cast<size_t>(row) * cols + col]; }
  const Cell& at(int row, int col) const { return cells[static_cast<size_t>(row) * cols + col]; }

  bool has_threads() const;  // some cell has a thread: a fragment
  bool has_offsets() const;  // some cell has an offset: a memory layout
  int num_threads() const;   // highest thread + 1, replicas included (0 when none)
  std::vector<int> threads_of(std::int64_t index) const;  // every thread holding cell `index` (none: empty)
  int num_values() const;    // highest value + 1 (0 when none)

  // Shape, cell count and order, and ranges; a builder or importer calls this before trusting a grid.
  Status validate() const;
};

// The bank (of 32, each 4 bytes wide) holding the first byte of element `offset`.
int bank_of(std::int64_t offset, int elem_bytes);

// The JSON contract: {"title", "shape": [rows, cols], "elem_bytes"?, "replication"?, "cells": [{"row", "col",
// "thread"?, "threads"?, "value"?, "offset"?, "bank"?, "index"?}, ...]} with cells in row-major order; a field
// appears only when it applies to the cell ("replication" and each cell's "threads", every holder, only where
// several threads hold each element).
nlohmann::json to_json(const LayoutGrid& grid);
Result<LayoutGrid> layout_grid_from_json(const nlohmann::json& json);

// An ASCII table: one line per row, one column per coordinate; fragments print T<thread>V<value>,
// memory layouts the offset (and then a second table of banks), plain layouts the index.
std::string to_text(const LayoutGrid& grid);

// "T5", or every holder of a replicated element as TileLang's plots write it: "T5/69"; "T" when none.
std::string thread_label(const LayoutGrid& grid, std::int64_t index);

// A one-line description of cell `index` (hover text, CLI messages).
std::string describe_cell(const LayoutGrid& grid, std::int64_t index);

}  // namespace tl::viz
