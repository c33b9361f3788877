// Element type names and host-side conversions (f16/bf16/fp8 through the bit-exact code of runtime/core/numeric.hpp).
#include "runtime/core/dtype.hpp"

#include <cstring>
#include <string>

#include "runtime/core/numeric.hpp"

namespace tl {

namespace {

struct DTypeInfo {
  DType type;
  const char* name;
  std::size_t size;
  bool is_float;
};

constexpr DTypeInfo kDTypes[] = {
    {DType::f32, "f32", 4, true},   {DType::f16, "f16", 2, true},   {DType::bf16, "bf16", 2, true},
    {DType::f64, "f64", 8, true},   {DType::i32, "i32", 4, false},  {DType::u32, "u32", 4, false},
    {DType::i8, "i8", 1, false},    {DType::u8, "u8", 1, false},    {DType::e4m3, "e4m3", 1, true},
    {DType::e5m2, "e5m2", 1, true}, {DType::i64, "i64", 8, false},  {DType::u64, "u64", 8, false},
};

const DTypeInfo& info(DType t) { return kDTypes[static_cast<int>(t)]; }

template <class T>
T read_as(const void* data, std::uint64_t index) {
  T v;
  std::memcpy(&v, static_cast<const unsigned char*>(data) + index * sizeof(T), sizeof(T));
  return v;
}

template <class T>
void write_as(void* data, std::uint64_t index, T v) {
  std::memcpy(static_cast<unsigned char*>(data) + index * sizeof(T), &v, sizeof(T));
}

}  // namespace

const char* dtype_name(DType t) { return info(t).name; }
std::size_t dtype_size(DType t) { return info(t).size; }
bool dtype_is_float(DType t) { return info(t).is_float; }

const char* dtype_cpp_name(DType t) {
  switch (t) {
    case DType::f32: return "float";
    case DType::f16: return "tl::half_t";
    case DType::bf16: return "tl::bfloat16_t";
    case DType::f64: return "double";
    case DType::i32: return "int";
    case DType::u32: return "unsigned";
    case DType::i8: return "signed char";
    case DType::u8:
    case DType::e4m3:  // fp8: raw storage bytes, kernels convert explicitly
    case DType::e5m2: return "unsigned char";
    case DType::i64: return "long long";
    case DType::u64: return "unsigned long long";
  }
  return "?";
}

Result<DType> parse_dtype(std::string_view name) {
  for (const auto& d : kDTypes)
    if (name == d.name) return d.type;
  struct Alias {
    const char* name;
    DType type;
  };
  static constexpr Alias aliases[] = {
      {"float32", DType::f32},  {"fp32", DType::f32},       {"float", DType::f32},        {"float16", DType::f16},
      {"fp16", DType::f16},     {"half", DType::f16},       {"bfloat16", DType::bf16},    {"float64", DType::f64},
      {"fp64", DType::f64},     {"double", DType::f64},     {"int32", DType::i32},        {"uint32", DType::u32},
      {"int8", DType::i8},      {"uint8", DType::u8},       {"fp8_e4m3", DType::e4m3},    {"float8_e4m3", DType::e4m3},
      {"fp8_e5m2", DType::e5m2}, {"float8_e5m2", DType::e5m2}, {"int64", DType::i64},     {"uint64", DType::u64},
  };
  for (const auto& a : aliases)
    if (name == a.name) return a.type;
  return make_error(ErrorCode::invalid_argument,
                    "unknown dtype '" + std::string(name) + "' (known: f32 f16 bf16 f64 i32 u32 i8 u8 e4m3 e5m2 i64 u64)");
}

double load_element(const void* data, DType t, std::uint64_t i) {
  switch (t) {
    case DType::f32: return read_as<float>(data, i);
    case DType::f16: return num::f16_to_float(read_as<std::uint16_t>(data, i));
    case DType::bf16: return num::bf16_to_float(read_as<std::uint16_t>(data, i));
    case DType::f64: return read_as<double>(data, i);
    case DType::i32: return read_as<std::int32_t>(data, i);
    case DType::u32: return read_as<std::uint32_t>(data, i);
    case DType::i8: return read_as<std::int8_t>(data, i);
    case DType::u8: return read_as<std::uint8_t>(data, i);
    case DType::e4m3: return num::e4m3_to_float(read_as<std::uint8_t>(data, i));
    case DType::e5m2: return num::e5m2_to_float(read_as<std::uint8_t>(data, i));
    case DType::i64: return static_cast<double>(read_as<std::int64_t>(data, i));
    case DType::u64: return static_cast<double>(read_as<std::uint64_t>(data, i));
  }
  return 0.0;
}

void store_element(void* data, DType t, std::uint64_t i, double v) {
  float f = static_cast<float>(v);
  switch (t) {
    case DType::f32: write_as<float>(data, i, f); return;
    case DType::f16: write_as<std::uint16_t>(data, i, num::float_to_f16(f)); return;
    case DType::bf16: write_as<std::uint16_t>(data, i, num::float_to_bf16(f)); return;
    case DType::f64: write_as<double>(data, i, v); return;
    case DType::i32: write_as<std::int32_t>(data, i, static_cast<std::int32_t>(v)); return;
    case DType::u32: write_as<std::uint32_t>(data, i, static_cast<std::uint32_t>(v)); return;
    case DType::i8: write_as<std::int8_t>(data, i, static_cast<std::int8_t>(v)); return;
    case DType::u8: write_as<std::uint8_t>(data, i, static_cast<std::uint8_t>(v)); return;
    case DType::e4m3: write_as<std::uint8_t>(data, i, num::float_to_e4m3(f)); return;
    case DType::e5m2: write_as<std::uint8_t>(data, i, num::float_to_e5m2(f)); return;
    case DType::i64: write_as<std::int64_t>(data, i, static_cast<std::int64_t>(v)); return;
    case DType::u64: write_as<std::uint64_t>(data, i, static_cast<std::uint64_t>(v)); return;
  }
}

}  // namespace tl
