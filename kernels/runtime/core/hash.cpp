// Hasher128: each 8-byte word goes through both lanes with different odd constants and rotations; the lanes cross-mix.
#include "runtime/core/hash.hpp"

#include <cstring>

namespace tl {
namespace {

constexpr std::uint64_t k1 = 0x9e3779b185ebca87ull;
constexpr std::uint64_t k2 = 0xc2b2ae3d27d4eb4full;
constexpr std::uint64_t k3 = 0x165667b19e3779f9ull;
constexpr std::uint64_t k4 = 0x27d4eb2f165667c5ull;

std::uint64_t rotl(std::uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

std::uint64_t fmix(std::uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33;
  return x;
}

}  // namespace

Hasher128::Hasher128() : m_h1(0x243f6a8885a308d3ull), m_h2(0x13198a2e03707344ull) {}

void Hasher128::block(std::uint64_t w) {
  m_h1 ^= rotl(w * k1, 31) * k2;
  m_h1 = rotl(m_h1, 27) + m_h2;
  m_h1 = m_h1 * 5 + 0x52dce729;
  m_h2 ^= rotl(w * k3, 33) * k4;
  m_h2 = rotl(m_h2, 31) + m_h1;
  m_h2 = m_h2 * 5 + 0x38495ab5;
}

Hasher128& Hasher128::bytes(const void* data, std::size_t size) {
  const auto* p = static_cast<const unsigned char*>(data);
  m_total += size;
  while (size > 0) {
    if (m_tail_len == 0 && size >= 8) {
      std::uint64_t w;
      std::memcpy(&w, p, 8);
      block(w);
      p += 8;
      size -= 8;
      continue;
    }
    m_tail[m_tail_len++] = *p++;
    --size;
    if (m_tail_len == 8) {
      std::uint64_t w;
      std::memcpy(&w, m_tail, 8);
      block(w);
      m_tail_len = 0;
    }
  }
  return *this;
}

Hasher128& Hasher128::field(std::string_view text) {
  field(static_cast<std::uint64_t>(text.size()));
  return bytes(text.data(), text.size());
}

Hasher128& Hasher128::field(std::uint64_t value) { return bytes(&value, sizeof(value)); }

std::string Hasher128::hex() const {
  std::uint64_t h1 = m_h1, h2 = m_h2;
  std::uint64_t w = 0;
  std::memcpy(&w, m_tail, m_tail_len);
  // Fold in the tail and the length so trailing zero bytes change the result.
  h1 ^= rotl(w * k1, 29) * k2;
  h2 ^= m_total * k3;
  h1 += h2;
  h2 += h1;
  h1 = fmix(h1);
  h2 = fmix(h2);
  h1 += h2;
  h2 += h1;
  static const char* digits = "0123456789abcdef";
  std::string out(32, '0');
  for (int i = 0; i < 16; ++i) {
    out[15 - i] = digits[(h1 >> (4 * i)) & 15];
    out[31 - i] = digits[(h2 >> (4 * i)) & 15];
  }
  return out;
}

std::string hash128_hex(std::string_view data) { return Hasher128().bytes(data.data(), data.size()).hex(); }

}  // namespace tl
