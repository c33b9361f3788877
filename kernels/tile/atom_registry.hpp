// Host-only: the named hardware atoms (`mma.m16n8k16.f16.A`, `ldmatrix.x4.trans`, ...) for tools and plots.
#pragma once

#include "tile/config.hpp"

#if !TL_DEVICE_CODE

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tile/atoms.hpp"
#include "tile/fragment.hpp"

// API overview ---------------------------------------------------------------------------------------
//   atom_registry()          every named atom, in a stable order (what `tilelab layout --list` prints)
//   find_atom(name)          the atom, or nullopt. `wgmma.m64nNk16.{f16,bf16}.A` is accepted for any valid N
//                            as an alias of `wgmma.m64k16.{f16,bf16}.A`.
//   close_atom_names(name)   up to `max` registered names nearest to a misspelled one (edit distance)
// Naming: <instruction>.<shape>.<element type>.<operand>; C/D operands are named by the accumulator type.

namespace tl {

struct AtomInfo {
  std::string name;
  std::string description;
  Fragment fragment;
  int elem_bytes = 2;  // bytes of one element of the operand
};

namespace detail {
inline std::vector<AtomInfo> build_atom_registry() {
  std::vector<AtomInfo> r;
  auto add = [&](std::string name, std::string desc, const Fragment& f, int bytes) {
    r.push_back(AtomInfo{std::move(name), std::move(desc), f, bytes});
  };
  for (const char* t : {"f16", "bf16"}) {
    const std::string ty = t;
    add("mma.m16n8k8." + ty + ".A", "mma.sync m16n8k8 A (16x8, ." + ty + "), 32 lanes x 4 values", mma_m16n8k8_a_f16(), 2);
    add("mma.m16n8k8." + ty + ".B", "mma.sync m16n8k8 B (8x8, ." + ty + "), 32 lanes x 2 values", mma_m16n8k8_b_f16(), 2);
  }
  add("mma.m16n8k8.f32.C", "mma.sync m16n8k8 C/D (16x8, .f32), 32 lanes x 4 values", mma_m16n8k8_c(), 4);
  add("mma.m16n8k8.f16.C", "mma.sync m16n8k8 C/D (16x8, .f16), 32 lanes x 4 values", mma_m16n8k8_c(), 2);
  for (const char* t : {"f16", "bf16"}) {
    const std::string ty = t;
    add("mma.m16n8k16." + ty + ".A", "mma.sync m16n8k16 A (16x16, ." + ty + "), 32 lanes x 8 values",
        mma_m16n8k16_a_f16(), 2);
    add("mma.m16n8k16." + ty + ".B", "mma.sync m16n8k16 B (16x8, ." + ty + "), 32 lanes x 4 values",
        mma_m16n8k16_b_f16(), 2);
  }
  add("mma.m16n8k16.f32.C", "mma.sync m16n8k16 C/D (16x8, .f32), 32 lanes x 4 values", mma_m16n8k16_c(), 4);
  add("mma.m16n8k16.f16.C", "mma.sync m16n8k16 C/D (16x8, .f16), 32 lanes x 4 values", mma_m16n8k16_c(), 2);
  add("mma.m16n8k8.tf32.A", "mma.sync m16n8k8 A (16x8, .tf32), 32 lanes x 4 values", mma_m16n8k8_a_tf32(), 4);
  add("mma.m16n8k8.tf32.B", "mma.sync m16n8k8 B (8x8, .tf32), 32 lanes x 2 values", mma_m16n8k8_b_tf32(), 4);
  for (const char* t : {"s8", "u8", "e4m3", "e5m2"}) {
    const std::string ty = t;
    add("mma.m16n8k32." + ty + ".A", "mma.sync m16n8k32 A (16x32, ." + ty + "), 32 lanes x 16 values",
        mma_m16n8k32_a_8bit(), 1);
    add("mma.m16n8k32." + ty + ".B", "mma.sync m16n8k32 B (32x8, ." + ty + "), 32 lanes x 8 values",
        mma_m16n8k32_b_8bit(), 1);
  }
  add("mma.m16n8k32.s32.C", "mma.sync m16n8k32 C/D (16x8, .s32), 32 lanes x 4 values", mma_m16n8k32_c(), 4);
  add("mma.m16n8k32.f32.C", "mma.sync m16n8k32 C/D (16x8, .f32, fp8 inputs), 32 lanes x 4 values", mma_m16n8k32_c(),
      4);
  for (int num : {1, 2, 4}) {
    const std::string x = "ldmatrix.x" + std::to_string(num);
    const std::string tile = num == 1 ? "8x8" : (num == 2 ? "16x8" : "16x16");
    add(x, "ldmatrix .m8n8 .x" + std::to_string(num) + " .b16: lane -> received elements of the " + tile + " tile",
        ldmatrix(num, false), 2);
    add(x + ".trans", "ldmatrix .m8n8 .x" + std::to_string(num) + " .trans .b16: lane -> received elements (" + tile + ")",
        ldmatrix(num, true), 2);
    add(x + ".rows", "ldmatrix .x" + std::to_string(num) + ": lane -> row address it supplies (columns in 16-byte blocks)",
        ldmatrix_rows(num), 16);
  }
  for (int n = 8; n <= 256; n += 8) {
    const std::string shape = "m64n" + std::to_string(n) + "k16";
    add("wgmma." + shape + ".f32.C", "wgmma.mma_async " + shape + " accumulator (64x" + std::to_string(n) +
        ", .f32), 128 threads x " + std::to_string(n / 2) + " values", wgmma_m64nNk16_d(n), 4);
  }
  for (int n = 8; n <= 256; n += 8) {
    const std::string shape = "m64n" + std::to_string(n) + "k16";
    add("wgmma." + shape + ".f16.C", "wgmma.mma_async " + shape + " accumulator (64x" + std::to_string(n) +
        ", .f16), 128 threads x " + std::to_string(n / 2) + " values", wgmma_m64nNk16_d(n), 2);
  }
  for (int n = 8; n <= 256; n += 8) {
    const std::string shape = "m64n" + std::to_string(n) + "k32";
    add("wgmma." + shape + ".f32.C", "wgmma.mma_async " + shape + " accumulator (64x" + std::to_string(n) +
        ", .f32, 8-bit inputs), 128 threads x " + std::to_string(n / 2) + " values", wgmma_m64nNk32_d(n), 4);
  }
  for (const char* t : {"f16", "bf16"}) {
    const std::string ty = t;
    add("wgmma.m64k16." + ty + ".A", "wgmma.mma_async m64nNk16 A from registers (64x16, ." + ty +
        "), 128 threads x 8 values", wgmma_m64k16_a_f16(), 2);
  }
  return r;
}

inline int edit_distance(std::string_view a, std::string_view b) {
  std::vector<int> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = static_cast<int>(j);
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = static_cast<int>(i);
    for (size_t j = 1; j <= b.size(); ++j) {
      const int sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}
}  // namespace detail

inline const std::vector<AtomInfo>& atom_registry() {
  static const std::vector<AtomInfo> registry = detail::build_atom_registry();
  return registry;
}

inline std::optional<AtomInfo> find_atom(std::string_view name) {
  for (const AtomInfo& a : atom_registry())
    if (a.name == name) return a;
  // wgmma.m64n<N>k16.<t>.A -> wgmma.m64k16.<t>.A (the A fragment does not depend on N)
  constexpr std::string_view prefix = "wgmma.m64n";
  if (name.substr(0, prefix.size()) == prefix) {
    size_t p = prefix.size();
    int n = 0;
    while (p < name.size() && name[p] >= '0' && name[p] <= '9') n = n * 10 + (name[p++] - '0');
    const std::string_view rest = name.substr(p);
    if (n >= 8 && n <= 256 && n % 8 == 0 && (rest == "k16.f16.A" || rest == "k16.bf16.A")) {
      std::optional<AtomInfo> a = find_atom("wgmma.m64k16." + std::string(rest.substr(4)));
      if (a) a->name = std::string(name);
      return a;
    }
  }
  return std::nullopt;
}

inline std::vector<std::string> close_atom_names(std::string_view name, size_t max = 5) {
  std::vector<std::pair<int, std::string>> scored;
  for (const AtomInfo& a : atom_registry()) scored.emplace_back(detail::edit_distance(name, a.name), a.name);
  std::stable_sort(scored.begin(), scored.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  std::vector<std::string> out;
  for (const auto& [d, n] : scored) {
    if (out.size() >= max) break;
    out.push_back(n);
  }
  return out;
}

}  // namespace tl

#endif  // !TL_DEVICE_CODE
