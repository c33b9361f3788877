// Host-only: layouts to and from text (CuTe's print format), and the SPEC strings of `tilelab layout`.
#pragma once

#include "tile/config.hpp"

#if !TL_DEVICE_CODE

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tile/atom_registry.hpp"
#include "tile/fragment.hpp"
#include "tile/layout.hpp"
#include "tile/swizzle.hpp"

// API overview ---------------------------------------------------------------------------------------
//   to_string(IntTuple | Layout | BitSwizzle | SwizzledLayout | Fragment)
//   parse_spec(text) -> LayoutSpec {ok, message, position (0-based column), kind, memory | fragment, ...}
//     SPEC forms (whitespace allowed between tokens):
//       (8,(4,2)):(4,(1,32))             a layout; without ":stride" compact column-major, as CuTe
//       swizzle<3,3,3> o (8,64):(64,1)   a swizzle composed with a layout ('o', '*' or the UTF-8 '∘')
//       mma.m16n8k16.f16.A, ldmatrix.x4.trans, wgmma.m64n128k16.f32.C, ...   a named atom (atom_registry())
//       smem.swizzle128B.bf16.(64,64)    a TMA/wgmma shared-memory tile: smem.<none|swizzle32B|swizzle64B|
//                                        swizzle128B>.<dtype>.(rows,cols)[.mn] (.mn: MN-major)
//       ATOM.repeat(R,C[,thread|value][,rows|cols]).replicate(N)...   an atom's fragment grown as TileLang's
//                                        Fragment.repeat/replicate (tile/fragment.hpp), applied left to right:
//                                        repeat tiles R x C copies, on new threads or on new values of the same
//                                        threads (default value), copies numbered down the rows first (default
//                                        rows; TileLang's lower_dim_first=True is cols); replicate(N): N times
//                                        the threads, each element held by N of them
//   format_spec_error(spec) -> "SPEC\n    ^ message" (two lines, caret under the column)
//   repeat_suffix(R, C, on_thread, rows_first), replicate_suffix(N) -> ".repeat(2,1,thread,rows)", ".replicate(2)":
//                                    what to append to an atom's SPEC (the canonical spelling)
//   memory_spec(swizzled layout, dtype), fragment_spec(fragment, atom SPEC): the SPEC of a kernel plan's object
//   dtype_bytes("bf16") -> 2 (0 when unknown); spec_examples()
//   Size limit: a layout's size and cosize are at most 2^24 (these are tiles, and plots of them).

namespace tl {

inline std::string to_string(const IntTuple& t) {
  std::string out;
  int leaf = 0;
  signed char prev = -1;
  for (int p = 0; p < t.m_num_tokens; ++p) {
    const signed char tok = t.m_tok[p];
    // a comma goes between two siblings: after a leaf or ')' and before a leaf or '('
    if ((prev == IntTuple::kLeaf || prev == IntTuple::kClose) && tok != IntTuple::kClose) out += ',';
    if (tok == IntTuple::kOpen) out += '(';
    if (tok == IntTuple::kClose) out += ')';
    if (tok == IntTuple::kLeaf) out += std::to_string(t.m_leaf[leaf++]);
    prev = tok;
  }
  return out;
}

inline std::string to_string(const Layout& l) { return to_string(l.shape()) + ":" + to_string(l.stride()); }

inline std::string to_string(const BitSwizzle& s) {
  return "swizzle<" + std::to_string(s.bits()) + "," + std::to_string(s.base()) + "," + std::to_string(s.shift()) + ">";
}

inline std::string to_string(const SwizzledLayout& l) {
  if (l.swizzle().is_identity()) return to_string(l.layout());
  return to_string(l.swizzle()) + " o " + to_string(l.layout());
}

inline std::string to_string(const Fragment& f) {
  return to_string(f.tv()) + " over " + std::to_string(f.rows()) + "x" + std::to_string(f.cols());
}

// Bytes of one element of a dtype name, 0 when unknown.
inline int dtype_bytes(std::string_view d) {
  if (d == "f16" || d == "bf16" || d == "fp16" || d == "half" || d == "b16" || d == "s16" || d == "u16") return 2;
  if (d == "f32" || d == "tf32" || d == "fp32" || d == "float" || d == "s32" || d == "u32" || d == "b32") return 4;
  if (d == "s8" || d == "u8" || d == "e4m3" || d == "e5m2" || d == "fp8" || d == "b8") return 1;
  if (d == "f64" || d == "fp64" || d == "double" || d == "s64" || d == "b64") return 8;
  return 0;
}

enum class SpecKind : unsigned char { layout, swizzled, smem, atom };

struct LayoutSpec {
  bool ok = false;
  std::string message;  // when !ok: what was expected at `position`
  int position = 0;     // 0-based column in `text`
  std::string text;
  SpecKind kind = SpecKind::layout;
  SwizzledLayout memory;  // layout, swizzled, smem: (row, col) -> element offset
  Fragment fragment;      // atom: (thread, value) <-> (row, col)
  int elem_bytes = 0;     // from the atom or the smem dtype; 0 when the spec does not say
  std::string atom_name;
  std::string description;
  // The 2-D tile to draw: rank 2 -> (size of mode 0, size of mode 1); rank 1 -> (size, 1); rank >= 3 ->
  // (size of mode 0, the rest); atoms -> the fragment's tile.
  int rows = 1;
  int cols = 1;

  bool is_fragment() const { return kind == SpecKind::atom; }
  // Element offset of (row, col) for the memory kinds: L(row, col) for rank 2, else the linear index
  // row + col*rows.
  int offset(int row, int col) const {
    const Layout& l = memory.layout();
    if (!l.is_leaf() && l.rank() == 2) return memory(row, col);
    return memory(row + col * rows);
  }
};

inline std::vector<std::string> spec_examples() {
  return {"(8,(4,2)):(4,(1,32))", "(8,64)",  "swizzle<3,3,3> o (8,64):(64,1)", "mma.m16n8k16.f16.A",
          "ldmatrix.x4.trans",    "wgmma.m64n128k16.f32.C", "smem.swizzle128B.bf16.(64,64)",
          "mma.m16n8k16.f16.A.repeat(2,1,thread).replicate(2).repeat(4,2,value,rows)"};
}

inline std::string repeat_suffix(int rep_rows, int rep_cols, bool on_thread, bool rows_first) {
  return ".repeat(" + std::to_string(rep_rows) + "," + std::to_string(rep_cols) + (on_thread ? ",thread" : ",value") +
         (rows_first ? ",rows)" : ",cols)");
}

inline std::string replicate_suffix(int n) { return ".replicate(" + std::to_string(n) + ")"; }

namespace detail {

inline bool spec_is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

inline LayoutSpec spec_fail(LayoutSpec s, int pos, std::string msg) {
  s.ok = false;
  s.position = pos;
  s.message = std::move(msg);
  return s;
}

// Rejects layouts too large to plot or to index with int, before anything multiplies their extents.
inline bool spec_layout_fits(const Layout& l, std::string& why) {
  constexpr int64_t kMax = int64_t{1} << 24;
  int64_t size = 1, cos = 0;
  for (int i = 0; i < l.num_leaves(); ++i) {
    const int64_t s = l.shape().leaf(i), d = l.stride().leaf(i);
    size *= s;
    if (size > kMax) break;
    cos += (s - 1) * (d < 0 ? -d : d);
    if (cos > kMax) break;
  }
  if (size > kMax || cos >= kMax) {
    why = "layout too large: size and cosize must be at most 2^24 (16777216)";
    return false;
  }
  return true;
}

inline void spec_set_tile(LayoutSpec& s) {
  const Layout& l = s.memory.layout();
  if (l.is_leaf() || l.rank() <= 1) {
    s.rows = l.size();
    s.cols = 1;
  } else {
    s.rows = l.mode(0).size();
    s.cols = l.size() / s.rows;
  }
}

// Parses a layout starting at `at`; fills s.memory.m_layout or returns the error with absolute positions.
inline bool spec_parse_layout(LayoutSpec& s, std::string_view text, size_t at) {
  const std::string_view rest = text.substr(at);
  const LayoutParse p = parse_layout(rest.data(), static_cast<int>(rest.size()));
  if (!p.ok) {
    s = spec_fail(s, static_cast<int>(at) + p.position, p.message ? p.message : "invalid layout");
    return false;
  }
  std::string why;
  if (!spec_layout_fits(p.layout, why)) {
    s = spec_fail(s, static_cast<int>(at), why);
    return false;
  }
  s.memory.m_layout = p.layout;
  return true;
}

inline bool spec_starts_with_ci(std::string_view text, size_t at, std::string_view word) {
  if (text.size() - at < word.size()) return false;
  for (size_t k = 0; k < word.size(); ++k) {
    char c = text[at + k];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c != word[k]) return false;
  }
  return true;
}

inline LayoutSpec parse_swizzle_spec(LayoutSpec s, std::string_view text, size_t i) {
  // swizzle<B,M,S> o LAYOUT
  i += spec_starts_with_ci(text, i, "swizzle") ? 7 : 2;  // "swizzle" or CuTe's "Sw"
  auto skip = [&] {
    while (i < text.size() && spec_is_space(text[i])) ++i;
  };
  skip();
  if (i >= text.size() || text[i] != '<') return spec_fail(s, static_cast<int>(i), "expected '<' after 'swizzle'");
  ++i;
  int v[3] = {0, 0, 0};
  for (int k = 0; k < 3; ++k) {
    skip();
    bool neg = false;
    if (k == 2 && i < text.size() && text[i] == '-') {
      neg = true;
      ++i;
    }
    if (i >= text.size() || text[i] < '0' || text[i] > '9')
      return spec_fail(s, static_cast<int>(i), k == 0 ? "expected the number of bits B in swizzle<B,M,S>"
                                                      : (k == 1 ? "expected the base M in swizzle<B,M,S>"
                                                                : "expected the shift S in swizzle<B,M,S>"));
    int x = 0;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
      x = x * 10 + (text[i++] - '0');
      if (x > 64) return spec_fail(s, static_cast<int>(i), "swizzle parameter too large");
    }
    v[k] = neg ? -x : x;
    skip();
    const char want = k < 2 ? ',' : '>';
    if (i >= text.size() || text[i] != want)
      return spec_fail(s, static_cast<int>(i), k < 2 ? "expected ',' in swizzle<B,M,S>" : "expected '>' closing swizzle<B,M,S>");
    ++i;
  }
  const BitSwizzle sw(v[0], v[1], v[2]);
  if (!sw.valid())
    return spec_fail(s, static_cast<int>(i) - 1, "invalid swizzle: need |S| >= B and B + M + |S| < 31");
  skip();
  if (i < text.size() && (text[i] == 'o' || text[i] == '*')) {
    ++i;
  } else if (text.substr(i, 3) == "\xe2\x88\x98") {
    i += 3;
  } else {
    return spec_fail(s, static_cast<int>(i), "expected 'o' (composition) and a layout after swizzle<B,M,S>");
  }
  skip();
  if (i >= text.size()) return spec_fail(s, static_cast<int>(i), "expected a layout after 'o'");
  if (!spec_parse_layout(s, text, i)) return s;
  s.memory.m_swizzle = sw;
  s.kind = SpecKind::swizzled;
  spec_set_tile(s);
  s.ok = true;
  return s;
}

inline LayoutSpec parse_smem_spec(LayoutSpec s, std::string_view text, size_t i, size_t end) {
  // smem.<mode>.<dtype>.(rows,cols)[.mn]
  i += 5;
  const size_t mode_end = text.find('.', i);
  if (mode_end == std::string_view::npos || mode_end >= end)
    return spec_fail(s, static_cast<int>(i), "expected smem.<none|swizzle32B|swizzle64B|swizzle128B>.<dtype>.(rows,cols)");
  const std::string_view mode = text.substr(i, mode_end - i);
  SmemSwizzle m = SmemSwizzle::none;
  if (mode == "none" || mode == "swizzleNone") {
    m = SmemSwizzle::none;
  } else if (mode == "swizzle32B" || mode == "32B") {
    m = SmemSwizzle::b32;
  } else if (mode == "swizzle64B" || mode == "64B") {
    m = SmemSwizzle::b64;
  } else if (mode == "swizzle128B" || mode == "128B") {
    m = SmemSwizzle::b128;
  } else {
    return spec_fail(s, static_cast<int>(i), "unknown swizzle mode '" + std::string(mode) +
                                                 "': expected none, swizzle32B, swizzle64B or swizzle128B");
  }
  i = mode_end + 1;
  const size_t dt_end = text.find('.', i);
  if (dt_end == std::string_view::npos || dt_end >= end)
    return spec_fail(s, static_cast<int>(i), "expected .<dtype>.(rows,cols) after the swizzle mode");
  const std::string_view dt = text.substr(i, dt_end - i);
  const int eb = dtype_bytes(dt);
  if (eb == 0) return spec_fail(s, static_cast<int>(i), "unknown dtype '" + std::string(dt) + "': expected f16, bf16, f32, tf32, s8, e4m3, ...");
  i = dt_end + 1;
  Major major = Major::K;
  std::string_view shape = text.substr(i, end - i);
  if (shape.size() >= 3 && shape.substr(shape.size() - 3) == ".mn") {
    major = Major::MN;
    shape = shape.substr(0, shape.size() - 3);
  }
  const LayoutParse p = parse_layout(shape.data(), static_cast<int>(shape.size()));
  if (!p.ok) return spec_fail(s, static_cast<int>(i) + p.position, p.message ? p.message : "expected (rows,cols)");
  const Layout& sh = p.layout;
  if (sh.is_leaf() || sh.rank() != 2 || sh.depth() != 1 || shape.find(':') != std::string_view::npos)
    return spec_fail(s, static_cast<int>(i), "expected the tile shape as (rows,cols)");
  const int rows = sh.shape().leaf(0), cols = sh.shape().leaf(1);
  if (static_cast<int64_t>(rows) * cols > (int64_t{1} << 24))
    return spec_fail(s, static_cast<int>(i), "tile too large: rows*cols must be at most 2^24");
  const SwizzledLayout l = smem_layout(m, eb, rows, cols, major);
  if (!l.ok()) {
    const int w = swizzle_bytes(m) / eb;
    return spec_fail(s, static_cast<int>(i),
                     major == Major::K
                         ? "the " + std::string(mode) + " tile needs rows a multiple of 8 and cols a multiple of " +
                               std::to_string(w) + " (" + std::to_string(swizzle_bytes(m)) + " bytes of " + std::string(dt) + ")"
                         : "the MN-major " + std::string(mode) + " tile needs rows a multiple of " + std::to_string(w) +
                               " and cols a multiple of 8");
  }
  s.memory = l;
  s.kind = SpecKind::smem;
  s.elem_bytes = eb;
  s.rows = rows;
  s.cols = cols;
  s.description = "shared-memory tile " + std::to_string(rows) + "x" + std::to_string(cols) + " " + std::string(dt) +
                  ", " + std::string(mode) + (major == Major::MN ? ", MN-major" : ", K-major");
  s.ok = true;
  return s;
}

// Where an atom's operations (".repeat(", ".replicate(", ...) start in `name`: the '.' before the word that
// precedes the first '('; npos when there is no '(' (a plain atom name).
inline size_t spec_ops_start(std::string_view name) {
  const size_t paren = name.find('(');
  if (paren == std::string_view::npos) return std::string_view::npos;
  const size_t dot = name.rfind('.', paren);
  return dot == std::string_view::npos ? std::string_view::npos : dot;
}

// The atom's fragment with `.repeat(...)` / `.replicate(...)` applied, left to right, from `at` to `end`.
inline LayoutSpec parse_fragment_ops(LayoutSpec s, std::string_view text, size_t at, size_t end) {
  constexpr int64_t kMax = int64_t{1} << 24;  // as layouts: these are tiles, and plots of them
  constexpr const char* kForms = "expected .repeat(rows,cols[,thread|value][,rows|cols]) or .replicate(n)";
  size_t i = at;
  auto fail = [&](size_t pos, std::string msg) { return spec_fail(s, static_cast<int>(pos), std::move(msg)); };
  auto skip = [&] {
    while (i < end && spec_is_space(text[i])) ++i;
  };
  auto word = [&] {
    const size_t from = i;
    while (i < end && ((text[i] >= 'a' && text[i] <= 'z') || (text[i] >= 'A' && text[i] <= 'Z') || text[i] == '_')) ++i;
    return text.substr(from, i - from);
  };
  // a count 1..2^24
  auto count = [&](int& out, const char* what) -> bool {
    skip();
    if (i >= end || text[i] < '0' || text[i] > '9') {
      s = fail(i, std::string("expected ") + what + " (a positive integer)");
      return false;
    }
    const size_t from = i;
    int64_t v = 0;
    while (i < end && text[i] >= '0' && text[i] <= '9') {
      v = v * 10 + (text[i++] - '0');
      if (v > kMax) {
        s = fail(from, std::string(what) + " is too large: at most 16777216");
        return false;
      }
    }
    if (v < 1) {
      s = fail(from, std::string(what) + " must be at least 1");
      return false;
    }
    out = static_cast<int>(v);
    skip();
    return true;
  };
  auto expect = [&](char c, const char* msg) -> bool {
    skip();
    if (i < end && text[i] == c) {
      ++i;
      return true;
    }
    s = fail(i, msg);
    return false;
  };
  Fragment f = s.fragment;
  std::string ops;
  while (true) {
    skip();
    if (i >= end) break;
    const size_t op_at = i;
    if (text[i] != '.') return fail(i, std::string("unexpected text after the fragment: ") + kForms);
    ++i;
    const std::string_view op = word();
    skip();
    if (op != "repeat" && op != "replicate")
      return fail(op_at + 1, "unknown fragment operation '" + std::string(op) + "': " + kForms);
    if (i >= end || text[i] != '(') return fail(i, "expected '(' after '" + std::string(op) + "'");
    ++i;
    Fragment next;
    if (op == "replicate") {
      int n = 0;
      if (!count(n, "the replication count n in replicate(n)")) return s;
      if (!expect(')', "expected ')' closing replicate(n)")) return s;
      if (int64_t{f.num_threads()} * n * f.num_values() > kMax)
        return fail(op_at, "replicate(" + std::to_string(n) + ") makes more than 2^24 thread-value pairs");
      next = replicate(f, n);
      ops += replicate_suffix(n);
    } else {
      int rr = 0, rc = 0;
      if (!count(rr, "the row copies R in repeat(R,C)")) return s;
      if (!expect(',', "expected ',' and the column copies C in repeat(R,C)")) return s;
      if (!count(rc, "the column copies C in repeat(R,C)")) return s;
      bool on_thread = false, rows_first = true, said_on = false, said_order = false;
      while (i < end && text[i] == ',') {
        ++i;
        skip();
        const size_t w_at = i;
        const std::string_view w = word();
        skip();
        if ((w == "thread" || w == "threads" || w == "value" || w == "values") && !said_on) {
          on_thread = w[0] == 't';
          said_on = true;
        } else if ((w == "rows" || w == "cols") && !said_order) {
          rows_first = w == "rows";
          said_order = true;
        } else {
          return fail(w_at, w.empty() ? "expected thread, value, rows or cols in repeat(R,C,...)"
                                      : "'" + std::string(w) + "' is not an option of repeat here: thread or value "
                                        "(where the copies go, once), rows or cols (which copies are numbered first, once)");
        }
      }
      if (!expect(')', "expected ',' and thread|value|rows|cols, or ')' closing repeat(R,C,...)")) return s;
      const int64_t copies = int64_t{rr} * rc;  // each count <= 2^24: no overflow below
      if (copies > kMax || copies * f.num_threads() * f.num_values() > kMax)
        return fail(op_at, "repeat(" + std::to_string(rr) + "," + std::to_string(rc) +
                               ") makes more than 2^24 thread-value pairs");
      next = repeat(f, rr, rc, on_thread, rows_first);
      ops += repeat_suffix(rr, rc, on_thread, rows_first);
    }
    if (next.ok()) {
      // one leaf per run of equal strides: chains of operations stay within the layout's fixed capacity
      next = Fragment(make_layout(coalesce(next.tv().mode(0)), coalesce(next.tv().mode(1))), next.rows(), next.cols());
    }
    if (!next.ok())
      return fail(op_at, std::string("the fragment cannot grow further: ") +
                             layout_error_message(next.tv().ok() ? next.inverse().error() : next.tv().error()));
    f = next;
  }
  s.fragment = f;
  s.rows = f.rows();
  s.cols = f.cols();
  s.atom_name += ops;
  s.description += "; " + ops.substr(1) + ": " + std::to_string(f.rows()) + "x" + std::to_string(f.cols()) + ", " +
                   std::to_string(f.num_threads()) + " threads x " + std::to_string(f.num_values()) + " values";
  s.ok = true;
  return s;
}

}  // namespace detail

inline LayoutSpec parse_spec(std::string_view text) {
  LayoutSpec s;
  s.text = std::string(text);
  size_t i = 0;
  while (i < text.size() && detail::spec_is_space(text[i])) ++i;
  size_t end = text.size();
  while (end > i && detail::spec_is_space(text[end - 1])) --end;
  if (i == end) return detail::spec_fail(s, static_cast<int>(i), "empty SPEC: expected a layout such as (8,64):(64,1), a swizzle, or an atom name");
  if (text.size() > 4096) return detail::spec_fail(s, 4096, "SPEC too long");
  const char c = text[i];
  if (c == '(' || (c >= '0' && c <= '9') || c == '-') {
    if (!detail::spec_parse_layout(s, text.substr(0, end), i)) {
      const size_t at = static_cast<size_t>(s.position);
      if (text.substr(at, 7) == ".repeat" || text.substr(at, 10) == ".replicate")
        s.message = "repeat and replicate apply to register fragments (atoms such as mma.m16n8k16.f16.A), not to layouts";
      return s;
    }
    s.kind = SpecKind::layout;
    detail::spec_set_tile(s);
    s.ok = true;
    return s;
  }
  if (detail::spec_starts_with_ci(text, i, "swizzle") ||
      (text.substr(i, 2) == "Sw" && end - i > 2 && (text[i + 2] == '<' || detail::spec_is_space(text[i + 2]))))
    return detail::parse_swizzle_spec(s, text.substr(0, end), i);
  if (text.substr(i, 5) == "smem.") return detail::parse_smem_spec(s, text, i, end);
  const size_t ops = detail::spec_ops_start(text.substr(i, end - i));
  std::string_view name = text.substr(i, ops == std::string_view::npos ? end - i : ops);
  while (!name.empty() && detail::spec_is_space(name.back())) name.remove_suffix(1);
  if (const std::optional<AtomInfo> a = find_atom(name)) {
    s.kind = SpecKind::atom;
    s.fragment = a->fragment;
    s.elem_bytes = a->elem_bytes;
    s.atom_name = a->name;
    s.description = a->description;
    s.rows = a->fragment.rows();
    s.cols = a->fragment.cols();
    if (ops != std::string_view::npos) return detail::parse_fragment_ops(s, text, i + ops, end);
    s.ok = true;
    return s;
  }
  std::string msg = "unknown atom '" + std::string(name) + "'";
  const std::vector<std::string> close = close_atom_names(name, 4);
  if (!close.empty()) {
    msg += "; close names: ";
    for (size_t k = 0; k < close.size(); ++k) msg += (k ? ", " : "") + close[k];
  }
  msg += " (`tilelab layout --list` names them all; a layout starts with '(' or a digit; an atom may be followed by "
         ".repeat(R,C[,thread|value][,rows|cols]) and .replicate(N))";
  return detail::spec_fail(s, static_cast<int>(i), msg);
}

// Two lines: the SPEC, then a caret under the offending column followed by the message.
inline std::string format_spec_error(const LayoutSpec& s) {
  return s.text + "\n" + std::string(static_cast<size_t>(s.position), ' ') + "^ " + s.message;
}


// [SECTION] SPECs of plan objects

// The SPEC a kernel plan's shared-memory layout is shown as: the smem.<mode>.<dtype>.(rows,cols)[.mn] form when the
// layout is that tile (the form `tilelab layout` users know, and the one that carries the element size the bank view
// needs), else its `swizzle<B,M,S> o layout` text. Parses back to a layout equal to `l`.
inline std::string memory_spec(const SwizzledLayout& l, std::string_view dtype) {
  const Layout& lay = l.layout();
  const int eb = dtype_bytes(dtype);
  if (eb > 0 && !lay.is_leaf() && lay.rank() == 2) {
    const int rows = lay.mode(0).size(), cols = lay.mode(1).size();
    for (SmemSwizzle m : {SmemSwizzle::b128, SmemSwizzle::b64, SmemSwizzle::b32, SmemSwizzle::none})
      for (Major major : {Major::K, Major::MN}) {
        const SwizzledLayout t = smem_layout(m, eb, rows, cols, major);
        if (t.ok() && t.swizzle() == l.swizzle() && t.layout() == lay) {
          static constexpr const char* kMode[] = {"none", "swizzle32B", "swizzle64B", "swizzle128B"};
          return "smem." + std::string(kMode[static_cast<int>(m)]) + "." + std::string(dtype) + ".(" +
                 std::to_string(rows) + "," + std::to_string(cols) + ")" + (major == Major::MN ? ".mn" : "");
        }
      }
  }
  return to_string(l);
}

// The SPEC of a plan's fragment: `spec` (an atom, possibly with .repeat/.replicate suffixes) when it describes this
// very fragment (several instructions share a fragment, e.g. the m16n8k8 and m16n8k16 accumulators, so the plan names
// which one it issues), nothing when it does not: a plot can never show another fragment than the kernel's.
inline std::optional<std::string> fragment_spec(const Fragment& f, std::string_view spec) {
  const LayoutSpec s = parse_spec(spec);
  const Fragment& g = s.fragment;
  if (!s.ok || !s.is_fragment() || g.rows() != f.rows() || g.cols() != f.cols() || g.num_threads() != f.num_threads() ||
      g.num_values() != f.num_values())
    return std::nullopt;
  // as functions: the same (thread, value) -> (row, col) everywhere, however the layouts nest their modes
  for (int t = 0; t < f.num_threads(); ++t)
    for (int v = 0; v < f.num_values(); ++v)
      if (!(f(t, v) == g(t, v))) return std::nullopt;
  return std::string(spec);
}

}  // namespace tl

#endif  // !TL_DEVICE_CODE
