// Honest measurement, host side: seeded fills, output poisoning, error against a float64 reference, timing stats.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "runtime/core/dtype.hpp"
#include "runtime/core/status.hpp"

namespace tl {

// How a buffer is filled before a run. `uniform` is the default for inputs: never zeros, seeded, reproducible.
// kv_fp8: the bytes of a u8 tensor of 656-byte rows in DeepSeek V3.2's FP8 KV cache format, values from [lo, hi)
// quantized as FlashMLA does (runtime/core/numeric.hpp, kv_fp8_byte).
struct Fill {
  enum class Kind { uniform, constant, zeros, data, kv_fp8 } kind = Kind::uniform;
  double lo = -1.0, hi = 1.0;  // uniform, kv_fp8: [lo, hi); integers: floor into [lo, hi - 1]
  double value = 0.0;          // constant
  // uniform: the tensor stores a [rows, cols] matrix in tiles (num::tiled_source), element i holding the matrix's
  // element tiled_source(i) of the plain fill (zero for padding); tile_rows 0: plain.
  struct Tiles {
    std::int64_t rows = 0, cols = 0, tile_rows = 0, tile_cols = 0;
  } tiles = {};
  std::uint64_t seed = 1;
};
const char* fill_kind_name(Fill::Kind k);

// Fill elements [0, count) exactly as the worker's device fill does (same bits), so the parent can
// rebuild a kernel's inputs for the reference without moving them through the pipe. Large fills run on `threads`
// threads (0: std::thread::hardware_concurrency()); the bytes do not depend on how many.
void fill_host(void* data, DType t, std::uint64_t count, const Fill& fill, unsigned threads = 0);
std::vector<std::uint8_t> make_filled(DType t, std::uint64_t count, const Fill& fill);

// Poison: a NaN bit pattern per float dtype (0xA5 bytes for integers), written over outputs before a run.
// An element still equal to it afterwards was never written. For 1-byte integer outputs a written value can
// equal the pattern by chance (1 in 256), so there the count is only an upper bound.
std::uint64_t poison_bits(DType t);
void poison_host(void* data, DType t, std::uint64_t count);
struct UnwrittenCount {
  std::uint64_t count = 0;
  std::uint64_t first = 0;  // index of the first unwritten element (valid when count > 0)
};
UnwrittenCount count_unwritten(const void* data, DType t, std::uint64_t count);

// Positions to check: all of [0, count) when count <= max_samples (or max_samples is 0), else max_samples distinct
// sorted positions drawn with `seed`, one in each of max_samples equal strata of [0, count) (even coverage, O(n),
// no rejection of repeats), always including the first and the last element (edges are where tiles go wrong).
// With unit > 1 whole units are drawn: the elements [u*unit, (u+1)*unit) of max_samples / unit (at least 2) units,
// for outputs whose reference is computed a row at a time (attention: softmax needs the whole row).
std::vector<std::uint64_t> sample_positions(std::uint64_t count, std::uint64_t max_samples, std::uint64_t seed,
                                            std::uint64_t unit = 1);

// Tolerance on ‖out − ref‖₂ / ‖ref‖₂ over the checked positions, and on max |out − ref| (0 = not checked).
struct Tolerance {
  double rel = 1e-5;
  double max_abs = 0.0;
};
// By the precision of the math: "f32", "tf32", "f16", "bf16", "e4m3", "e5m2", "f64", integer dtypes (exact).
Result<Tolerance> tolerance_for(std::string_view precision);
Tolerance tolerance_for(DType t);

struct Comparison {
  std::uint64_t checked = 0;
  std::uint64_t nonfinite = 0;  // out is NaN/inf where the reference is finite (poison left in place counts here)
  std::uint64_t unwritten = 0;  // from the worker's poison check over the whole output
  double rel_error = 0.0;       // ‖out − ref‖₂ / ‖ref‖₂ over the finite checked positions
  double max_abs_error = 0.0;
  std::uint64_t worst_index = 0;  // output position of the max abs error (or of the first non-finite value)
  double worst_out = 0.0, worst_ref = 0.0;
  Tolerance tolerance;
  bool passed = false;
  std::string reason;  // why it failed, in words; empty when passed
};

// Compare `out` (values read from the kernel's output) with `reference` at the same positions.
Comparison compare_values(std::span<const double> out, std::span<const double> reference,
                          std::span<const std::uint64_t> positions, Tolerance tol, std::uint64_t unwritten = 0);
// The same, with `out` as raw samples of dtype `t` (what the worker sends back).
Comparison compare_samples(const void* samples, DType t, std::span<const double> reference,
                           std::span<const std::uint64_t> positions, Tolerance tol, std::uint64_t unwritten = 0);

// Timing statistics of repeated runs.
struct Stats {
  std::size_t count = 0;
  double median = 0, min = 0, max = 0, mean = 0, stddev = 0;
  // (max − min) / median: how much the runs disagree.
  double spread() const { return median > 0 ? (max - min) / median : 0.0; }
};
Stats compute_stats(std::vector<double> samples);

void to_json(nlohmann::json& j, const Fill& v);
Status fill_from_json(const nlohmann::json& j, Fill& out);
void to_json(nlohmann::json& j, const Tolerance& v);
void to_json(nlohmann::json& j, const Comparison& v);
void to_json(nlohmann::json& j, const Stats& v);
void from_json(const nlohmann::json& j, Stats& v);

}  // namespace tl
