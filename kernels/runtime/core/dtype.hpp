// Element types of kernel buffers: names, sizes, the C++ type a name expression uses, host load/store as double.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "runtime/core/status.hpp"

namespace tl {

// The values are num::DTypeCode's (runtime/core/numeric.hpp), which the device fill kernel uses.
enum class DType : std::uint8_t { f32 = 0, f16, bf16, f64, i32, u32, i8, u8, e4m3, e5m2, i64, u64 };

const char* dtype_name(DType t);      // "f32", "bf16", ...
std::size_t dtype_size(DType t);      // bytes per element
bool dtype_is_float(DType t);
const char* dtype_cpp_name(DType t);  // "float", "tl::half_t", "tl::bfloat16_t", ... (for name expressions)
// Also accepts "float32", "float", "half", "fp16", "bfloat16", "fp8_e4m3", ...; the error lists the known names.
Result<DType> parse_dtype(std::string_view name);

// Element `index` of a buffer of type t, widened to double; and the inverse (rounded to nearest even for the
// narrow floats, through float first as a kernel storing a float result does).
double load_element(const void* data, DType t, std::uint64_t index);
void store_element(void* data, DType t, std::uint64_t index, double value);

}  // namespace tl
