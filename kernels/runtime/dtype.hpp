// Element types of kernel tensors: names, sizes, the C++ type a name expression uses, host load/store as double.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tl {

enum class DType { f32, f16, bf16, f64, i32, i64 };

const char* dtype_name(DType t);              // "f32", "f16", "bf16", ...
std::size_t dtype_size(DType t);              // bytes per element
const char* dtype_cpp_name(DType t);          // "float", "tl::half_t", "tl::bfloat16_t", ... (for name expressions)
std::optional<DType> parse_dtype(std::string_view name);  // accepts the names above (and "float", "half", "fp16", ...)

// Element i of a buffer of type t, widened to double; and the inverse (rounded to nearest even).
double load_element(DType t, const void* data, std::size_t i);
void store_element(DType t, void* data, std::size_t i, double value);

}  // namespace tl
