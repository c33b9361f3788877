// Adapters from kernels/tile (layouts, swizzles, fragments, bank analysis) to viz's neutral LayoutGrid/BankMap.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "runtime/core/status.hpp"
#include "tile/banks.hpp"
#include "tile/fragment.hpp"
#include "tile/layout_spec.hpp"
#include "tile/layout.hpp"
#include "tile/swizzle.hpp"
#include "viz/bank_map.hpp"
#include "viz/layout_grid.hpp"

namespace tl::viz {

// A (swizzled) layout as a memory layout: cell (r, c) holds offset L(r + rows * c) (rank >= 2: rows = size of
// mode 0, the other modes flattened into columns; rank 1: one column) and its bank for `elem_bytes`-byte elements.
Result<LayoutGrid> grid_from_layout(const SwizzledLayout& layout, int elem_bytes, std::string title = {});

// A fragment over its (rows, cols) tile: each coordinate gets the (thread, value) that holds it (the lowest
// thread where the fragment replicates; none where it does not cover the tile).
Result<LayoutGrid> grid_from_fragment(const Fragment& fragment, std::string title = {});

// A SPEC parsed (kernels/tile's parse_spec), or ErrorCode::parse with the message `tilelab layout` prints: the
// column and what was expected, then the SPEC and a caret under the column.
Result<LayoutSpec> parse_layout_spec(const std::string& text);

// A SPEC of `tilelab layout` as a grid: a CuTe layout "(8,(4,2)):(4,(1,32))", a swizzled one
// "swizzle<3,3,3> o (8,64):(64,1)", or a named atom ("mma.m16n8k16.f16.A", "smem.swizzle128B.bf16.(64,64)").
// `dtype` (may be empty) sets the element size for banks where the SPEC does not name one (default f32); one that
// contradicts the SPEC's own dtype is an error. Parsing is kernels/tile's parse_spec.
// A malformed SPEC fails with ErrorCode::parse and a message naming the column and what was expected,
// followed by the SPEC and a caret under the column.
Result<LayoutGrid> grid_from_spec(const std::string& spec, const std::string& dtype = {});

// A shared-memory layout named by a SMEM_SPEC (a layout, a swizzled layout or an smem.* atom) with its element
// size (the SPEC's dtype, else `elem_bytes` when > 0, else 4) and its (rows, cols) extent as plotted.
struct SmemLayout {
  SwizzledLayout layout;
  int elem_bytes = 4;
  int rows = 0, cols = 0;
  std::string title;
};
Result<SmemLayout> smem_from_spec(const std::string& spec, int elem_bytes = 0);

// An access pattern (kernels/tile parse_access): a built-in over the tile (ldmatrix.x4, row.v128, col.scalar:16,
// ...@row,col) or a user-given list "v16:(0,0),(1,0),..."; coordinates must lie inside the tile.
Result<AccessPattern> access_from_spec(const std::string& access, const SmemLayout& smem);

// The neutral bank map of an analysis: one request per phase of the instruction.
BankMap bank_map_from_report(const BankReport& report, std::string title);

// One instruction's bank conflicts over a SMEM_SPEC, as `tilelab banks` analyses them: the report and its map,
// titled "ACCESS over SPEC (N-byte elements)". Errors: the SPEC's, the access pattern's, or the analysis' refusal.
struct BankAnalysis {
  std::string spec, access;
  BankReport report;
  BankMap map;
};
Result<BankAnalysis> analyze_bank_access(const std::string& spec, const std::string& access, int elem_bytes = 0);
// The JSON of `tilelab banks --json`: the map, with the analysis' own totals, the access and the SPEC.
nlohmann::json to_json(const BankAnalysis& analysis);

struct AtomEntry {
  std::string name;
  std::string description;
};
// Every named atom grid_from_spec accepts.
std::vector<AtomEntry> list_layout_atoms();

}  // namespace tl::viz
