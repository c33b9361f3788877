// NumPy .npy files (format version 1.0): little-endian arrays with a tiny text header, for --dump.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/core/dtype.hpp"
#include "runtime/core/status.hpp"

namespace tl {

// An array as it is stored: the numpy type string ("<f4", "<f2", "<u8", ...), the shape and the raw bytes.
struct NpyArray {
  std::string descr;
  std::vector<std::int64_t> shape;
  std::vector<std::uint8_t> data;
};

// The numpy type string of a dtype, or "" when numpy has none (bf16, fp8: write those widened with
// npy_from_elements).
std::string npy_descr(DType t);

// Raw elements of `t` as an array; types numpy lacks (bf16, fp8) are widened to float32.
NpyArray npy_from_elements(const void* data, DType t, std::vector<std::int64_t> shape);
NpyArray npy_from_doubles(const std::vector<double>& values, std::vector<std::int64_t> shape);
NpyArray npy_from_u64(const std::vector<std::uint64_t>& values);

// The header is padded with spaces so the data starts at a multiple of 64 bytes, as the format asks.
Status write_npy(const std::string& path, const NpyArray& a);
// Reads what write_npy writes (v1.0/2.0, C order); errors (parse) name what was wrong.
Result<NpyArray> read_npy(const std::string& path);

}  // namespace tl
