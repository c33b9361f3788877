// Element type names and host-side conversions (fp16/bf16 through the same code the kernels use).
#include "runtime/dtype.hpp"

#include <cstring>

#include "tile/float16.hpp"

namespace tl {

const char* dtype_name(DType t) {
  switch (t) {
    case DType::f32: return "f32";
    case DType::f16: return "f16";
    case DType::bf16: return "bf16";
    case DType::f64: return "f64";
    case DType::i32: return "i32";
    case DType::i64: return "i64";
  }
  return "?";
}

std::size_t dtype_size(DType t) {
  switch (t) {
    case DType::f16:
    case DType::bf16: return 2;
    case DType::f32:
    case DType::i32: return 4;
    case DType::f64:
    case DType::i64: return 8;
  }
  return 0;
}

const char* dtype_cpp_name(DType t) {
  switch (t) {
    case DType::f32: return "float";
    case DType::f16: return "tl::half_t";
    case DType::bf16: return "tl::bfloat16_t";
    case DType::f64: return "double";
    case DType::i32: return "int";
    case DType::i64: return "long long";
  }
  return "?";
}

std::optional<DType> parse_dtype(std::string_view n) {
  if (n == "f32" || n == "float" || n == "fp32" || n == "float32") return DType::f32;
  if (n == "f16" || n == "half" || n == "fp16" || n == "float16") return DType::f16;
  if (n == "bf16" || n == "bfloat16") return DType::bf16;
  if (n == "f64" || n == "double" || n == "fp64" || n == "float64") return DType::f64;
  if (n == "i32" || n == "int" || n == "int32") return DType::i32;
  if (n == "i64" || n == "int64") return DType::i64;
  return std::nullopt;
}

double load_element(DType t, const void* data, std::size_t i) {
  const auto* p = static_cast<const unsigned char*>(data) + i * dtype_size(t);
  switch (t) {
    case DType::f32: { float v; std::memcpy(&v, p, 4); return v; }
    case DType::f16: { half_t v; std::memcpy(&v, p, 2); return to_float(v); }
    case DType::bf16: { bfloat16_t v; std::memcpy(&v, p, 2); return to_float(v); }
    case DType::f64: { double v; std::memcpy(&v, p, 8); return v; }
    case DType::i32: { std::int32_t v; std::memcpy(&v, p, 4); return v; }
    case DType::i64: { std::int64_t v; std::memcpy(&v, p, 8); return static_cast<double>(v); }
  }
  return 0;
}

void store_element(DType t, void* data, std::size_t i, double value) {
  auto* p = static_cast<unsigned char*>(data) + i * dtype_size(t);
  switch (t) {
    case DType::f32: { float v = static_cast<float>(value); std::memcpy(p, &v, 4); return; }
    // Through float first: double -> f16 via float can double-round, but only in the last bit of ties we never hit
    // for random fills, and it matches what a kernel storing a float result does.
    case DType::f16: { half_t v = from_float<half_t>(static_cast<float>(value)); std::memcpy(p, &v, 2); return; }
    case DType::bf16: { bfloat16_t v = from_float<bfloat16_t>(static_cast<float>(value)); std::memcpy(p, &v, 2); return; }
    case DType::f64: std::memcpy(p, &value, 8); return;
    case DType::i32: { auto v = static_cast<std::int32_t>(value); std::memcpy(p, &v, 4); return; }
    case DType::i64: { auto v = static_cast<std::int64_t>(value); std::memcpy(p, &v, 8); return; }
  }
}

}  // namespace tl
