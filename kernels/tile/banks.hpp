// Host-only: shared-memory bank-conflict analysis of one instruction's accesses over a (swizzled) layout.
#pragma once

#include "tile/config.hpp"

#if !TL_DEVICE_CODE

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "tile/atoms.hpp"
#include "tile/swizzle.hpp"

// API overview ---------------------------------------------------------------------------------------
//   AccessPattern{name, vector_bytes, accesses}  one instruction: each ThreadAccess{thread, row, col} is the
//                      address one thread presents (the first element of a vector of vector_bytes bytes).
//   analyze_banks(smem, elem_bytes, pattern) -> BankReport: wavefronts vs ideal, the conflict degree of each
//                      bank, the per-phase breakdown and every access's byte address and banks.
//   Built-in patterns: ldmatrix_pattern(num, trans, elem_bytes), vector_row_copy / vector_col_copy (16 bytes
//                      per thread by default), scalar_row_read / scalar_col_read; builtin_pattern(name, ...)
//                      by name (builtin_pattern_names()), parse_access_list(text) for user-given lists,
//                      parse_access(text, rows, cols, elem_bytes) for either (a CLI's --access argument).
//
// The model (NVIDIA's documented shared-memory behaviour since Volta):
//   * 32 banks of 4 bytes; word w = byte_address / 4 lives in bank w % 32. One wavefront serves one
//     128-byte-wide row of the banks: at most one distinct word per bank.
//   * A warp's request is processed in phases: with 16-byte accesses 4 phases of 8 threads (lanes 0-7,
//     8-15, ...), with 8-byte accesses 2 phases of 16 threads, otherwise one phase of 32 threads.
//   * In a phase, threads reading the same word are served together (broadcast); distinct words in the same
//     bank serialize. Wavefronts of a phase = the largest number of distinct words in any one bank.
//   * Ideal wavefronts of a phase = ceil(distinct words / 32): what the bytes moved need at full width.
//   Threads of different warps (a warpgroup pattern) are separate requests; their wavefronts add up.

namespace tl {

struct ThreadAccess {
  int thread = 0;
  int row = 0;
  int col = 0;
};

struct AccessPattern {
  std::string name;
  int vector_bytes = 4;  // bytes each thread moves (1, 2, 4, 8 or 16)
  std::vector<ThreadAccess> accesses;
};

struct BankAccess {
  int thread = 0;
  int row = 0;
  int col = 0;
  int64_t offset = 0;        // element offset from the layout
  int64_t byte_address = 0;  // offset * elem_bytes
  int first_bank = 0;
  int num_words = 1;  // 4-byte words touched (banks first_bank, first_bank+1, ... mod 32)
  int phase = 0;      // index into BankReport::phases
};

struct PhaseReport {
  int warp = 0;
  int first_lane = 0;
  int last_lane = 0;
  int wavefronts = 0;
  int ideal_wavefronts = 0;
  std::array<int, 32> distinct_words{};  // per bank
};

struct BankReport {
  bool ok = false;
  std::string message;  // why not, when !ok
  int elem_bytes = 0;
  int vector_bytes = 0;
  int wavefronts = 0;
  int ideal_wavefronts = 0;
  int max_conflict = 0;                 // max over banks of bank_degree
  std::array<int, 32> bank_degree{};    // max over phases of distinct words in the bank (1 = no conflict)
  std::array<int, 32> bank_requests{};  // thread accesses touching the bank, all phases together
  std::vector<PhaseReport> phases;
  std::vector<BankAccess> accesses;
};

inline int64_t smem_offset(const SwizzledLayout& smem, int row, int col) {
  if (smem.layout().is_leaf() || smem.rank() == 1) return smem(row + col * smem.size());
  return smem(row, col);
}

inline BankReport analyze_banks(const SwizzledLayout& smem, int elem_bytes, const AccessPattern& p) {
  BankReport rep;
  rep.elem_bytes = elem_bytes;
  rep.vector_bytes = p.vector_bytes;
  if (!smem.ok()) {
    rep.message = std::string("shared-memory layout is invalid: ") + layout_error_message(smem.layout().error());
    return rep;
  }
  if (elem_bytes <= 0 || elem_bytes > 16) {
    rep.message = "element size must be 1..16 bytes";
    return rep;
  }
  const int vb = p.vector_bytes;
  if (vb != 1 && vb != 2 && vb != 4 && vb != 8 && vb != 16) {
    rep.message = "vector width must be 1, 2, 4, 8 or 16 bytes";
    return rep;
  }
  if (p.accesses.empty()) {
    rep.message = "the access pattern is empty";
    return rep;
  }
  const int lanes_per_phase = vb == 16 ? 8 : (vb == 8 ? 16 : 32);
  // phase key: (warp, lane / lanes_per_phase)
  std::vector<std::pair<int, int>> keys;
  for (const ThreadAccess& a : p.accesses) {
    if (a.thread < 0) {
      rep.message = "thread indices must be >= 0";
      return rep;
    }
    keys.emplace_back(a.thread / 32, (a.thread % 32) / lanes_per_phase);
  }
  std::vector<std::pair<int, int>> sorted = keys;
  std::sort(sorted.begin(), sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  std::vector<std::array<std::set<int64_t>, 32>> words(sorted.size());
  std::vector<std::set<int64_t>> all_words(sorted.size());
  for (size_t k = 0; k < p.accesses.size(); ++k) {
    const ThreadAccess& a = p.accesses[k];
    BankAccess b;
    b.thread = a.thread;
    b.row = a.row;
    b.col = a.col;
    b.offset = smem_offset(smem, a.row, a.col);
    b.byte_address = b.offset * elem_bytes;
    b.phase = static_cast<int>(std::lower_bound(sorted.begin(), sorted.end(), keys[k]) - sorted.begin());
    const int64_t first_word = b.byte_address >> 2;
    const int64_t last_word = (b.byte_address + vb - 1) >> 2;
    b.first_bank = static_cast<int>(((first_word % 32) + 32) % 32);
    b.num_words = static_cast<int>(last_word - first_word + 1);
    for (int64_t w = first_word; w <= last_word; ++w) {
      const int bank = static_cast<int>(((w % 32) + 32) % 32);
      words[b.phase][bank].insert(w);
      all_words[b.phase].insert(w);
      ++rep.bank_requests[bank];
    }
    rep.accesses.push_back(b);
  }
  for (size_t ph = 0; ph < sorted.size(); ++ph) {
    PhaseReport pr;
    pr.warp = sorted[ph].first;
    pr.first_lane = sorted[ph].second * lanes_per_phase;
    pr.last_lane = pr.first_lane + lanes_per_phase - 1;
    for (int bank = 0; bank < 32; ++bank) {
      pr.distinct_words[bank] = static_cast<int>(words[ph][bank].size());
      pr.wavefronts = std::max(pr.wavefronts, pr.distinct_words[bank]);
      rep.bank_degree[bank] = std::max(rep.bank_degree[bank], pr.distinct_words[bank]);
    }
    pr.ideal_wavefronts = static_cast<int>((all_words[ph].size() + 31) / 32);
    rep.wavefronts += pr.wavefronts;
    rep.ideal_wavefronts += pr.ideal_wavefronts;
    rep.phases.push_back(pr);
  }
  rep.max_conflict = *std::max_element(rep.bank_degree.begin(), rep.bank_degree.end());
  rep.ok = true;
  return rep;
}

// ---- built-in patterns ----------------------------------------------------------------------------

// ldmatrix .x{num}: lane l < 8*num presents the start of a 16-byte row (ldmatrix_rows); .trans reads the same
// addresses (it only changes which lane receives what). Rows/cols are in elements of elem_bytes.
inline AccessPattern ldmatrix_pattern(int num, bool trans, int elem_bytes = 2, int row0 = 0, int col0 = 0) {
  AccessPattern p;
  p.name = "ldmatrix.x" + std::to_string(num) + (trans ? ".trans" : "");
  p.vector_bytes = 16;
  const Fragment rows = ldmatrix_rows(num);
  const int per_block = 16 / elem_bytes;
  for (int l = 0; l < rows.num_threads(); ++l) {
    const TileCoord c = rows(l, 0);
    p.accesses.push_back({l, row0 + c.row, col0 + c.col * per_block});
  }
  return p;
}

// Threads sweep the (rows, cols) tile row by row, each taking vector_bytes contiguous bytes of a row.
inline AccessPattern vector_row_copy(int rows, int cols, int elem_bytes, int threads = 32, int vector_bytes = 16,
                                     int row0 = 0, int col0 = 0) {
  AccessPattern p;
  p.name = "row.v" + std::to_string(vector_bytes * 8);
  p.vector_bytes = vector_bytes;
  const int per = std::max(1, vector_bytes / elem_bytes);
  const int per_row = std::max(1, (cols - col0) / per);
  for (int t = 0; t < threads; ++t) p.accesses.push_back({t, (row0 + t / per_row) % rows, col0 + (t % per_row) * per});
  return p;
}

// Threads go down a column of vectors: thread t takes row t (wrapping into the next column of vectors).
inline AccessPattern vector_col_copy(int rows, int cols, int elem_bytes, int threads = 32, int vector_bytes = 16,
                                     int row0 = 0, int col0 = 0) {
  AccessPattern p;
  p.name = "col.v" + std::to_string(vector_bytes * 8);
  p.vector_bytes = vector_bytes;
  const int per = std::max(1, vector_bytes / elem_bytes);
  const int per_col = std::max(1, rows - row0);
  for (int t = 0; t < threads; ++t) p.accesses.push_back({t, row0 + t % per_col, (col0 + (t / per_col) * per) % cols});
  return p;
}

// Thread t reads element (row0, col0 + t) (wrapping into the next rows).
inline AccessPattern scalar_row_read(int rows, int cols, int elem_bytes, int threads = 32, int row0 = 0, int col0 = 0) {
  AccessPattern p = vector_row_copy(rows, cols, elem_bytes, threads, elem_bytes, row0, col0);
  p.name = "row.scalar";
  return p;
}

// Thread t reads element (row0 + t, col0) (wrapping into the next columns).
inline AccessPattern scalar_col_read(int rows, int cols, int elem_bytes, int threads = 32, int row0 = 0, int col0 = 0) {
  AccessPattern p = vector_col_copy(rows, cols, elem_bytes, threads, elem_bytes, row0, col0);
  p.name = "col.scalar";
  return p;
}

inline std::vector<std::string> builtin_pattern_names() {
  return {"ldmatrix.x1", "ldmatrix.x2",       "ldmatrix.x4", "ldmatrix.x1.trans", "ldmatrix.x2.trans",
          "ldmatrix.x4.trans", "row.v128", "col.v128",    "row.v64",           "col.v64",
          "row.scalar",  "col.scalar"};
}

// The most threads a row./col. pattern may name: a thread block's.
inline constexpr int kMaxPatternThreads = 1024;

// Splits "col.v128:8" into the name and its thread count (32 without a suffix). "" when it is fine, else what is
// wrong: a count that is not 1..kMaxPatternThreads, or a count on ldmatrix (a warp instruction: always 32 lanes).
inline std::string split_thread_suffix(std::string_view& name, int& threads) {
  threads = 32;
  const size_t colon = name.find(':');
  if (colon == std::string_view::npos) return {};
  const std::string_view base = name.substr(0, colon), digits = name.substr(colon + 1);
  if (base.substr(0, 8) == "ldmatrix")
    return std::string(base) + " is a warp instruction (always 32 lanes): drop ':" + std::string(digits) + "'";
  long long n = 0;
  for (char c : digits) {
    if (c < '0' || c > '9' || n > kMaxPatternThreads) { n = -1; break; }
    n = n * 10 + (c - '0');
  }
  if (digits.empty() || n < 1 || n > kMaxPatternThreads)
    return "thread count '" + std::string(digits) + "' after '" + std::string(base) + ":' must be 1.." +
           std::to_string(kMaxPatternThreads);
  threads = static_cast<int>(n);
  name = base;
  return {};
}

// A built-in pattern by name over a (rows, cols) tile of elem_bytes elements, starting at (row0, col0).
// Optional suffix ":N" sets the number of threads of a row./col. pattern (default 32), e.g. "col.v128:8".
inline std::optional<AccessPattern> builtin_pattern(std::string_view name, int rows, int cols, int elem_bytes,
                                                    int row0 = 0, int col0 = 0) {
  int threads = 32;
  if (!split_thread_suffix(name, threads).empty()) return std::nullopt;
  for (int num : {1, 2, 4}) {
    const std::string base = "ldmatrix.x" + std::to_string(num);
    if (name == base) return ldmatrix_pattern(num, false, elem_bytes, row0, col0);
    if (name == base + ".trans") return ldmatrix_pattern(num, true, elem_bytes, row0, col0);
  }
  if (name == "row.v128") return vector_row_copy(rows, cols, elem_bytes, threads, 16, row0, col0);
  if (name == "col.v128") return vector_col_copy(rows, cols, elem_bytes, threads, 16, row0, col0);
  if (name == "row.v64") return vector_row_copy(rows, cols, elem_bytes, threads, 8, row0, col0);
  if (name == "col.v64") return vector_col_copy(rows, cols, elem_bytes, threads, 8, row0, col0);
  if (name == "row.scalar") return scalar_row_read(rows, cols, elem_bytes, threads, row0, col0);
  if (name == "col.scalar") return scalar_col_read(rows, cols, elem_bytes, threads, row0, col0);
  return std::nullopt;
}

struct AccessParse {
  bool ok = false;
  AccessPattern pattern;
  int position = 0;
  std::string message;
};

// A user-given list: "v<BYTES>:(r,c),(r,c),..." where the k-th coordinate is presented by thread k, or
// "v<BYTES>:t=(r,c),t=(r,c),..." naming the threads. Example: "v16:(0,0),(1,0),(2,0)".
inline AccessParse parse_access_list(std::string_view s) {
  AccessParse out;
  size_t i = 0;
  auto fail = [&](const std::string& msg) {
    out.ok = false;
    out.position = static_cast<int>(i);
    out.message = msg;
    return out;
  };
  auto skip = [&] {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
  };
  auto number = [&](int& v) {
    skip();
    bool neg = false;
    if (i < s.size() && s[i] == '-') {
      neg = true;
      ++i;
    }
    if (i >= s.size() || s[i] < '0' || s[i] > '9') return false;
    int64_t x = 0;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
      x = x * 10 + (s[i++] - '0');
      if (x > 1000000) return false;
    }
    v = static_cast<int>(neg ? -x : x);
    return true;
  };
  skip();
  if (i >= s.size() || s[i] != 'v') return fail("expected 'v<bytes>:' (vector width in bytes), e.g. v16:(0,0),(1,0)");
  ++i;
  int vb = 0;
  if (!number(vb)) return fail("expected the vector width in bytes after 'v'");
  if (vb != 1 && vb != 2 && vb != 4 && vb != 8 && vb != 16) return fail("vector width must be 1, 2, 4, 8 or 16 bytes");
  skip();
  if (i >= s.size() || s[i] != ':') return fail("expected ':' after the vector width");
  ++i;
  out.pattern.name = "list";
  out.pattern.vector_bytes = vb;
  int next_thread = 0;
  for (;;) {
    skip();
    int thread = next_thread;
    if (i < s.size() && s[i] != '(') {
      if (!number(thread) || thread < 0) return fail("expected '(' or a thread index");
      skip();
      if (i >= s.size() || s[i] != '=') return fail("expected '=' after the thread index");
      ++i;
      skip();
    }
    if (i >= s.size() || s[i] != '(') return fail("expected '(' starting a (row,col) coordinate");
    ++i;
    int r = 0, c = 0;
    if (!number(r)) return fail("expected the row");
    skip();
    if (i >= s.size() || s[i] != ',') return fail("expected ','");
    ++i;
    if (!number(c)) return fail("expected the column");
    skip();
    if (i >= s.size() || s[i] != ')') return fail("expected ')' (unbalanced parentheses)");
    ++i;
    out.pattern.accesses.push_back({thread, r, c});
    next_thread = thread + 1;
    skip();
    if (i == s.size()) break;
    if (s[i] != ',') return fail("expected ',' between coordinates or the end");
    ++i;
  }
  out.ok = true;
  return out;
}

// An --access argument: a built-in name (builtin_pattern_names(), optional ":threads", optional
// "@row,col" start) or a user list "v<bytes>:(r,c),...". Unknown names list the built-in ones.
inline AccessParse parse_access(std::string_view text, int rows, int cols, int elem_bytes) {
  size_t b = 0, e = text.size();
  while (b < e && (text[b] == ' ' || text[b] == '\t')) ++b;
  while (e > b && (text[e - 1] == ' ' || text[e - 1] == '\t')) --e;
  const std::string_view t = text.substr(b, e - b);
  if (t.size() >= 2 && t[0] == 'v' && t[1] >= '0' && t[1] <= '9') {
    AccessParse a = parse_access_list(t);
    a.position += static_cast<int>(b);
    return a;
  }
  AccessParse out;
  std::string_view name = t;
  int row0 = 0, col0 = 0;
  if (const size_t at = t.find('@'); at != std::string_view::npos) {
    name = t.substr(0, at);
    const std::string_view where = t.substr(at + 1);
    const size_t comma = where.find(',');
    auto to_int = [](std::string_view s, int& v) {
      if (s.empty() || s.size() > 6) return false;
      v = 0;
      for (char c : s) {
        if (c < '0' || c > '9') return false;
        v = v * 10 + (c - '0');
      }
      return true;
    };
    if (comma == std::string_view::npos || !to_int(where.substr(0, comma), row0) || !to_int(where.substr(comma + 1), col0)) {
      out.position = static_cast<int>(b + at + 1);
      out.message = "expected @row,col after the pattern name";
      return out;
    }
  }
  std::string_view base = name;
  int threads = 32;
  if (std::string why = split_thread_suffix(base, threads); !why.empty()) {
    out.position = static_cast<int>(b + name.find(':') + 1);
    out.message = why;
    return out;
  }
  if (std::optional<AccessPattern> p = builtin_pattern(name, rows, cols, elem_bytes, row0, col0)) {
    out.ok = true;
    out.pattern = std::move(*p);
    return out;
  }
  out.position = static_cast<int>(b);
  out.message = "unknown access pattern '" + std::string(name) + "': expected one of";
  for (const std::string& n : builtin_pattern_names()) out.message += " " + n;
  out.message += " (optionally :THREADS and @ROW,COL), or a list v<bytes>:(r,c),(r,c),...";
  return out;
}

}  // namespace tl

#endif  // !TL_DEVICE_CODE
