// Layout adapters: evaluate kernels/tile objects over their domain into LayoutGrids and BankMaps.
#include "viz/layout_adapter.hpp"

#include <algorithm>
#include <cctype>

#include "tile/atom_registry.hpp"
#include "tile/layout_spec.hpp"

namespace tl::viz {
namespace {

Status spec_error(const std::string& spec, int column, const std::string& what) {
  return make_error(ErrorCode::parse, "invalid SPEC at column " + std::to_string(column + 1) + ": " + what + "\n  " +
                                          spec + "\n  " + std::string(static_cast<size_t>(std::max(column, 0)), ' ') +
                                          "^");
}

// The element size of a SPEC: its own dtype (an atom or smem tile names one), else the one the user gave, else
// 4 bytes. A user's choice that contradicts the SPEC is an error rather than silently ignored.
Result<int> spec_element_bytes(const LayoutSpec& spec, int user_bytes, const std::string& user_label) {
  if (spec.elem_bytes > 0) {
    if (user_bytes > 0 && user_bytes != spec.elem_bytes) {
      return make_error(ErrorCode::invalid_argument, "'" + spec.text + "' has " + std::to_string(spec.elem_bytes) +
                                                         "-byte elements; " + user_label + " says " +
                                                         std::to_string(user_bytes));
    }
    return spec.elem_bytes;
  }
  return user_bytes > 0 ? user_bytes : 4;
}

}  // namespace

Result<LayoutSpec> parse_layout_spec(const std::string& text) {
  LayoutSpec spec = parse_spec(text);
  if (!spec.ok) return spec_error(text, spec.position, spec.message);
  return spec;
}

Result<LayoutGrid> grid_from_layout(const SwizzledLayout& layout, int elem_bytes, std::string title) {
  if (!layout.layout().ok()) {
    return make_error(ErrorCode::invalid_argument, layout_error_message(layout.layout().error()));
  }
  if (!layout.swizzle().valid()) {
    return make_error(ErrorCode::invalid_argument, "invalid swizzle: Swizzle<B,M,S> needs |S| >= B");
  }
  long long size = layout.size();
  if (size <= 0) return make_error(ErrorCode::invalid_argument, "layout of size " + std::to_string(size) + " has no cells");
  const long long grid_rows = layout.rank() >= 2 ? layout.layout().mode(0).size() : size;
  TL_RETURN_IF_ERROR(check_grid_size(grid_rows, size / grid_rows));  // before a cell is allocated
  const int rows = static_cast<int>(grid_rows), cols = static_cast<int>(size / grid_rows);
  LayoutGrid g = LayoutGrid::make(rows, cols, std::move(title));
  g.elem_bytes = elem_bytes;
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < cols; ++c) {
      Cell& cell = g.at(r, c);
      cell.offset = layout(r + rows * c);
      cell.bank = bank_of(cell.offset, elem_bytes);
    }
  }
  return g;
}

Result<LayoutGrid> grid_from_fragment(const Fragment& fragment, std::string title) {
  if (!fragment.ok()) {
    return make_error(ErrorCode::invalid_argument, std::string("invalid fragment: ") +
                                                       layout_error_message(fragment.tv().ok() ? fragment.inverse().error()
                                                                                               : fragment.tv().error()));
  }
  TL_RETURN_IF_ERROR(check_grid_size(fragment.rows(), fragment.cols()));
  LayoutGrid g = LayoutGrid::make(fragment.rows(), fragment.cols(), std::move(title));
  const int rep = fragment.replication();
  std::vector<int> held;  // per cell: holders seen so far (replicated fragments)
  if (rep > 1) {
    g.replication = rep;
    g.holders.assign(g.cells.size() * static_cast<size_t>(rep), -1);
    held.assign(g.cells.size(), 0);
  }
  for (int t = 0; t < fragment.num_threads(); ++t) {
    for (int v = 0; v < fragment.num_values(); ++v) {
      TileCoord rc = fragment(t, v);
      if (rc.row < 0 || rc.row >= g.rows || rc.col < 0 || rc.col >= g.cols) {
        return make_error(ErrorCode::internal, "fragment maps thread " + std::to_string(t) + ", value " +
                                                   std::to_string(v) + " outside its " + std::to_string(g.rows) + "x" +
                                                   std::to_string(g.cols) + " tile");
      }
      Cell& cell = g.at(rc.row, rc.col);
      if (cell.thread < 0) {  // threads and values ascend: the first writer is the lowest owner
        cell.thread = t;
        cell.value = v;
      }
      if (rep > 1) {
        const size_t i = static_cast<size_t>(rc.row) * g.cols + rc.col;
        if (held[i] < rep) g.holders[i * static_cast<size_t>(rep) + static_cast<size_t>(held[i])] = t;
        ++held[i];
      }
    }
  }
  if (rep > 1 && std::any_of(held.begin(), held.end(), [&](int n) { return n != rep; })) {
    g.replication = 1;  // not every element has the same number of holders: show the lowest owner only
    g.holders.clear();
  }
  return g;
}

Result<LayoutGrid> grid_from_spec(const std::string& text, const std::string& dtype) {
  int user_bytes = 0;
  if (!dtype.empty()) {
    user_bytes = tl::dtype_bytes(dtype);
    if (user_bytes == 0) {
      return make_error(ErrorCode::invalid_argument,
                        "unknown dtype '" + dtype + "' (expected f64, f32, tf32, s32, f16, bf16, s8, u8, e4m3 or e5m2)");
    }
  }
  auto spec = parse_layout_spec(text);
  if (!spec) return spec.status();
  if (spec->is_fragment()) {
    auto g = grid_from_fragment(spec->fragment, spec->atom_name.empty() ? text : spec->atom_name);
    if (g) g->elem_bytes = spec->elem_bytes;
    return g;
  }
  auto bytes = spec_element_bytes(*spec, user_bytes, "--dtype " + dtype);
  if (!bytes) return bytes.status();
  return grid_from_layout(spec->memory, *bytes, text);
}

Result<SmemLayout> smem_from_spec(const std::string& text, int elem_bytes) {
  // 0: the SPEC's own. Shared-memory elements are 1, 2, 4, 8 or 16 bytes (a vector); others have no bank mapping.
  if (elem_bytes < 0 || elem_bytes > 16 || (elem_bytes & (elem_bytes - 1)) != 0) {
    return make_error(ErrorCode::invalid_argument,
                      "element size must be 1, 2, 4, 8 or 16 bytes, got " + std::to_string(elem_bytes));
  }
  auto spec = parse_layout_spec(text);
  if (!spec) return spec.status();
  if (spec->is_fragment()) {
    return make_error(ErrorCode::invalid_argument, "'" + text + "' is a register fragment, not a shared-memory layout "
                                                   "(give a layout, 'swizzle<B,M,S> o LAYOUT' or smem.<mode>.<dtype>.(rows,cols))");
  }
  auto bytes = spec_element_bytes(*spec, elem_bytes, "--elem-bytes " + std::to_string(elem_bytes));
  if (!bytes) return bytes.status();
  SmemLayout out;
  out.title = text;
  out.layout = spec->memory;
  out.elem_bytes = *bytes;
  out.rows = spec->rows;
  out.cols = spec->cols;
  return out;
}

Result<AccessPattern> access_from_spec(const std::string& access, const SmemLayout& smem) {
  AccessParse parsed = parse_access(access, smem.rows, smem.cols, smem.elem_bytes);
  if (!parsed.ok) {
    return make_error(ErrorCode::parse, "invalid --access at column " + std::to_string(parsed.position + 1) + ": " +
                                            parsed.message + "\n  " + access + "\n  " +
                                            std::string(static_cast<size_t>(std::max(parsed.position, 0)), ' ') + "^");
  }
  // The analysis evaluates the layout at each coordinate; outside the tile it would read past its codomain.
  for (const auto& a : parsed.pattern.accesses) {
    if (a.row < 0 || a.row >= smem.rows || a.col < 0 || a.col >= smem.cols) {
      return make_error(ErrorCode::invalid_argument, "--access: thread " + std::to_string(a.thread) + " reads (" +
                                                         std::to_string(a.row) + ", " + std::to_string(a.col) +
                                                         "), outside the " + std::to_string(smem.rows) + "x" +
                                                         std::to_string(smem.cols) + " tile");
    }
  }
  return parsed.pattern;
}

BankMap bank_map_from_report(const BankReport& report, std::string title) {
  BankMap map;
  map.title = std::move(title);
  map.elem_bytes = report.elem_bytes;
  for (size_t ph = 0; ph < report.phases.size(); ++ph) {
    const PhaseReport& p = report.phases[ph];
    BankRequest req;
    req.label = "warp " + std::to_string(p.warp) + " lanes " + std::to_string(p.first_lane) + "-" +
                std::to_string(p.last_lane);
    req.wavefronts = p.wavefronts;
    req.ideal_wavefronts = p.ideal_wavefronts;
    req.degree = p.distinct_words;
    for (const auto& a : report.accesses) {
      if (a.phase != static_cast<int>(ph)) continue;
      std::int64_t first_word = a.byte_address >> 2;
      for (int w = 0; w < a.num_words; ++w) {
        std::int64_t word = first_word + w;
        req.accesses.push_back({a.thread, static_cast<int>(((word % kNumBanks) + kNumBanks) % kNumBanks), word, -1});
      }
    }
    assign_wavefronts(req);
    map.requests.push_back(std::move(req));
  }
  return map;
}

std::vector<AtomEntry> list_layout_atoms() {
  std::vector<AtomEntry> out;
  for (const auto& a : atom_registry()) out.push_back({a.name, a.description});
  return out;
}

Result<BankAnalysis> analyze_bank_access(const std::string& spec, const std::string& access, int elem_bytes) {
  auto smem = smem_from_spec(spec, elem_bytes);
  if (!smem) return smem.status();
  auto pattern = access_from_spec(access, *smem);
  if (!pattern) return pattern.status();
  BankAnalysis a{spec, access, analyze_banks(smem->layout, smem->elem_bytes, *pattern), {}};
  if (!a.report.ok) return make_error(ErrorCode::invalid_argument, "banks: " + a.report.message);
  a.map = bank_map_from_report(a.report, access + " over " + spec + " (" + std::to_string(smem->elem_bytes) +
                                             "-byte elements)");
  return a;
}

nlohmann::json to_json(const BankAnalysis& a) {
  nlohmann::json j = to_json(a.map);
  // The analysis' own totals are authoritative (the per-request sums agree with them by construction).
  j["wavefronts"] = a.report.wavefronts;
  j["ideal_wavefronts"] = a.report.ideal_wavefronts;
  j["max_conflict"] = a.report.max_conflict;
  j["bank_degree"] = a.report.bank_degree;
  j["vector_bytes"] = a.report.vector_bytes;
  j["access"] = a.access;
  j["layout"] = a.spec;
  return j;
}

}  // namespace tl::viz
