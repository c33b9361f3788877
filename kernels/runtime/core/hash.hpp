// A streaming 128-bit non-cryptographic hash for cache keys (two 64-bit multiply-rotate lanes, murmur-style finish).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace tl {

class Hasher128 {
 public:
  Hasher128();
  // Raw bytes; the stream is the concatenation of everything added.
  Hasher128& bytes(const void* data, std::size_t size);
  // A length-prefixed field, so ("ab","c") and ("a","bc") hash differently.
  Hasher128& field(std::string_view text);
  Hasher128& field(std::uint64_t value);
  // 32 lowercase hex digits. Does not change the state.
  std::string hex() const;

 private:
  void block(std::uint64_t w);
  std::uint64_t m_h1, m_h2;
  std::uint64_t m_total = 0;
  unsigned char m_tail[8] = {};
  std::size_t m_tail_len = 0;
};

// One-shot helper: hex of the 128-bit hash of a byte string.
std::string hash128_hex(std::string_view data);

}  // namespace tl
