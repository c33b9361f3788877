// Layout adapters: evaluate kernels/tile objects over their domain into LayoutGrids and BankMaps.
#include "viz/layout_adapter.hpp"

#include <algorithm>
#include <cctype>
#include <map>

#include "tile/atom_registry.hpp"

namespace tl::viz {
namespace {

// A grid this large is a mistake (or a whole tensor, not a tile): it would not plot and would exhaust memory.
constexpr long long kMaxCells = 1ll << 24;

Status spec_error(const std::string& spec, int column, const std::string& what) {
  return make_error(ErrorCode::parse, "invalid SPEC at column " + std::to_string(column + 1) + ": " + what + "\n  " +
                                          spec + "\n  " + std::string(static_cast<size_t>(std::max(column, 0)), ' ') +
                                          "^");
}

Result<int> element_bytes(const std::string& dtype, const std::string& fallback) {
  const std::string& name = dtype.empty() ? fallback : dtype;
  if (auto b = dtype_bytes(name)) return *b;
  return make_error(ErrorCode::invalid_argument,
                    "unknown dtype '" + name + "' (expected f64, f32, tf32, s32, f16, bf16, s8, u8, e4m3 or e5m2)");
}

}  // namespace

std::optional<int> dtype_bytes(const std::string& dtype) {
  static const std::map<std::string, int> kBytes = {
      {"f64", 8}, {"f32", 4}, {"tf32", 4}, {"s32", 4}, {"u32", 4}, {"f16", 2}, {"bf16", 2},
      {"s16", 2}, {"u16", 2}, {"s8", 1},   {"u8", 1},  {"e4m3", 1}, {"e5m2", 1}, {"f8", 1}};
  auto it = kBytes.find(dtype);
  if (it == kBytes.end()) return std::nullopt;
  return it->second;
}

Result<LayoutGrid> grid_from_layout(const SwizzledLayout& layout, int elem_bytes, std::string title) {
  if (!layout.layout().ok()) {
    return make_error(ErrorCode::invalid_argument, layout_error_message(layout.layout().error()));
  }
  if (!layout.swizzle().valid()) {
    return make_error(ErrorCode::invalid_argument, "invalid swizzle: Swizzle<B,M,S> needs |S| >= B");
  }
  long long size = layout.size();
  if (size <= 0 || size > kMaxCells) {
    return make_error(ErrorCode::invalid_argument,
                      "layout of size " + std::to_string(size) + " is too large to plot (at most 2^24 cells)");
  }
  int rows = layout.rank() >= 2 ? layout.layout().mode(0).size() : 1;
  int cols = static_cast<int>(size / rows);
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
  long long cells = static_cast<long long>(fragment.rows()) * fragment.cols();
  if (cells > kMaxCells) return make_error(ErrorCode::invalid_argument, "fragment tile is too large to plot");
  LayoutGrid g = LayoutGrid::make(fragment.rows(), fragment.cols(), std::move(title));
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
    }
  }
  return g;
}

Result<LayoutGrid> grid_from_spec(const std::string& spec, const std::string& dtype) {
  if (auto atom = find_atom(spec)) {
    auto g = grid_from_fragment(atom->fragment, atom->name);
    if (g) g->elem_bytes = atom->elem_bytes;
    return g;
  }
  auto bytes = element_bytes(dtype, "f32");
  if (!bytes) return bytes.status();
  if (!spec.empty() && std::isalpha(static_cast<unsigned char>(spec[0]))) {
    std::string names;
    for (const auto& n : close_atom_names(spec, 3)) names += (names.empty() ? "" : ", ") + n;
    return spec_error(spec, 0, "unknown atom '" + spec + "' (did you mean " + names + "? `tilelab layout --list` names them all)");
  }
  LayoutParse parsed = parse_layout(spec.c_str(), static_cast<int>(spec.size()));
  if (!parsed.ok) return spec_error(spec, parsed.position, parsed.message ? parsed.message : "malformed layout");
  return grid_from_layout(parsed.layout, *bytes, spec);
}

Result<SmemLayout> smem_from_spec(const std::string& spec, int elem_bytes) {
  if (elem_bytes < 0 || elem_bytes > 16) {
    return make_error(ErrorCode::invalid_argument, "element size must be 1..16 bytes, got " + std::to_string(elem_bytes));
  }
  SmemLayout out;
  out.title = spec;
  out.elem_bytes = elem_bytes > 0 ? elem_bytes : 4;
  LayoutParse parsed = parse_layout(spec.c_str(), static_cast<int>(spec.size()));
  if (!parsed.ok) return spec_error(spec, parsed.position, parsed.message ? parsed.message : "malformed layout");
  out.layout = parsed.layout;
  if (!parsed.layout.ok()) return make_error(ErrorCode::invalid_argument, layout_error_message(parsed.layout.error()));
  out.rows = parsed.layout.rank() >= 2 ? parsed.layout.mode(0).size() : 1;
  out.cols = parsed.layout.size() / out.rows;
  return out;
}

Result<AccessPattern> access_from_spec(const std::string& access, const SmemLayout& smem) {
  if (auto p = builtin_pattern(access, smem.rows, smem.cols, smem.elem_bytes)) return *p;
  if (!access.empty() && access[0] == 'v' && access.size() > 1 && std::isdigit(static_cast<unsigned char>(access[1]))) {
    AccessParse parsed = parse_access_list(access);
    if (!parsed.ok) {
      return make_error(ErrorCode::parse, "invalid --access at column " + std::to_string(parsed.position + 1) + ": " +
                                              parsed.message + "\n  " + access + "\n  " +
                                              std::string(static_cast<size_t>(parsed.position), ' ') + "^");
    }
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
  std::string names;
  for (const auto& n : builtin_pattern_names()) names += (names.empty() ? "" : ", ") + n;
  return make_error(ErrorCode::invalid_argument, "unknown access pattern '" + access + "': use one of " + names +
                                                     " (optionally ':THREADS'), or a list 'v16:(0,0),(1,0),...'");
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

}  // namespace tl::viz
