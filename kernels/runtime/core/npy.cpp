// .npy v1.0 writer and a reader for the same subset (C order, little-endian, numeric types).
#include "runtime/core/npy.hpp"

#include <cstring>
#include <fstream>
#include <iterator>
#include <regex>

namespace tl {
namespace {

constexpr char kMagic[] = "\x93NUMPY";  // 6 bytes, then major and minor version

std::int64_t element_count(const std::vector<std::int64_t>& shape) {
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

std::size_t descr_size(const std::string& descr) {
  if (descr.size() < 3) return 0;
  return static_cast<std::size_t>(std::stoul(descr.substr(2)));
}

}  // namespace

std::string npy_descr(DType t) {
  switch (t) {
    case DType::f32: return "<f4";
    case DType::f16: return "<f2";
    case DType::f64: return "<f8";
    case DType::i32: return "<i4";
    case DType::u32: return "<u4";
    case DType::i8: return "|i1";
    case DType::u8: return "|u1";
    case DType::i64: return "<i8";
    case DType::u64: return "<u8";
    default: return "";
  }
}

NpyArray npy_from_elements(const void* data, DType t, std::vector<std::int64_t> shape) {
  NpyArray a;
  a.shape = std::move(shape);
  const auto n = static_cast<std::uint64_t>(element_count(a.shape));
  a.descr = npy_descr(t);
  if (!a.descr.empty()) {
    const auto* p = static_cast<const std::uint8_t*>(data);
    a.data.assign(p, p + n * dtype_size(t));
    return a;
  }
  a.descr = "<f4";
  a.data.resize(n * 4);
  for (std::uint64_t i = 0; i < n; ++i) {
    const float f = static_cast<float>(load_element(data, t, i));
    std::memcpy(a.data.data() + i * 4, &f, 4);
  }
  return a;
}

NpyArray npy_from_doubles(const std::vector<double>& values, std::vector<std::int64_t> shape) {
  NpyArray a{"<f8", std::move(shape), {}};
  a.data.resize(values.size() * 8);
  if (!values.empty()) std::memcpy(a.data.data(), values.data(), a.data.size());
  return a;
}

NpyArray npy_from_u64(const std::vector<std::uint64_t>& values) {
  NpyArray a{"<u8", {static_cast<std::int64_t>(values.size())}, {}};
  a.data.resize(values.size() * 8);
  if (!values.empty()) std::memcpy(a.data.data(), values.data(), a.data.size());
  return a;
}

Status write_npy(const std::string& path, const NpyArray& a) {
  const std::size_t elem = descr_size(a.descr);
  if (elem == 0 || a.data.size() != static_cast<std::size_t>(element_count(a.shape)) * elem)
    return make_error(ErrorCode::internal, "npy array '" + a.descr + "' has " + std::to_string(a.data.size()) +
                                               " bytes, which does not match its shape");
  std::string shape = "(";
  for (std::size_t i = 0; i < a.shape.size(); ++i) shape += std::to_string(a.shape[i]) + (a.shape.size() == 1 ? "," : (i + 1 < a.shape.size() ? ", " : ""));
  shape += ")";
  std::string header = "{'descr': '" + a.descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  const std::size_t prefix = 10;  // magic (6) + version (2) + header length (2)
  const std::size_t total = (prefix + header.size() + 1 + 63) / 64 * 64;
  header.append(total - prefix - header.size() - 1, ' ');
  header += '\n';
  if (header.size() > 0xffff) return make_error(ErrorCode::internal, "npy header too long for format 1.0");

  std::ofstream out(path, std::ios::binary);
  out.write(kMagic, 6);
  const char version[2] = {1, 0};
  out.write(version, 2);
  const unsigned char len[2] = {static_cast<unsigned char>(header.size() & 0xff),
                                static_cast<unsigned char>(header.size() >> 8)};
  out.write(reinterpret_cast<const char*>(len), 2);
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  out.write(reinterpret_cast<const char*>(a.data.data()), static_cast<std::streamsize>(a.data.size()));
  if (!out) return make_error(ErrorCode::io, "cannot write " + path);
  return Status::success();
}

Result<NpyArray> read_npy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(ErrorCode::not_found, "cannot open " + path);
  std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto bad = [&](const std::string& why) { return make_error(ErrorCode::parse, path + ": not a .npy file: " + why); };
  if (bytes.size() < 10 || std::memcmp(bytes.data(), kMagic, 6) != 0) return bad("no \\x93NUMPY magic");
  const int major = bytes[6];
  std::size_t len = 0, start = 0;
  if (major == 1) {
    len = bytes[8] | (std::size_t{bytes[9]} << 8);
    start = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) return bad("truncated header");
    len = bytes[8] | (std::size_t{bytes[9]} << 8) | (std::size_t{bytes[10]} << 16) | (std::size_t{bytes[11]} << 24);
    start = 12;
  } else {
    return bad("unknown version " + std::to_string(major));
  }
  if (start + len > bytes.size()) return bad("truncated header");
  const std::string header(bytes.begin() + static_cast<std::ptrdiff_t>(start),
                           bytes.begin() + static_cast<std::ptrdiff_t>(start + len));
  std::smatch m;
  NpyArray a;
  if (!std::regex_search(header, m, std::regex("'descr':\\s*'([^']+)'"))) return bad("no descr");
  a.descr = m[1];
  if (std::regex_search(header, m, std::regex("'fortran_order':\\s*True"))) return bad("Fortran order is not supported");
  if (!std::regex_search(header, m, std::regex("'shape':\\s*\\(([^)]*)\\)"))) return bad("no shape");
  const std::string dims = m[1];
  const std::regex number("[0-9]+");
  for (std::sregex_iterator it(dims.begin(), dims.end(), number), end; it != end; ++it)
    a.shape.push_back(std::stoll(it->str()));
  const std::size_t elem = descr_size(a.descr);
  if (elem == 0) return bad("unknown descr '" + a.descr + "'");
  const std::size_t want = static_cast<std::size_t>(element_count(a.shape)) * elem;
  if (bytes.size() - start - len != want)
    return bad("data is " + std::to_string(bytes.size() - start - len) + " bytes, the shape needs " + std::to_string(want));
  a.data.assign(bytes.begin() + static_cast<std::ptrdiff_t>(start + len), bytes.end());
  return a;
}

}  // namespace tl
