// parallel_chunks: a loop over [0, count) cut into contiguous chunks run on threads (host fills, references).
#pragma once

#include <algorithm>
#include <cstdint>
#include <exception>
#include <thread>
#include <vector>

namespace tl {

// Calls fn(begin, end) over [0, count) cut into at most `threads` (0: the machine's cores) contiguous chunks of at
// least `min_chunk` elements, chunk bounds multiples of `align`; the calling thread takes the first chunk. Returns
// after every chunk; the first exception a chunk threw is rethrown.
template <typename Fn>
void parallel_chunks(std::uint64_t count, std::uint64_t min_chunk, Fn&& fn, unsigned threads = 0, std::uint64_t align = 1) {
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  align = std::max<std::uint64_t>(align, 1);
  const std::uint64_t n = std::min<std::uint64_t>(threads, std::max<std::uint64_t>(1, count / std::max<std::uint64_t>(min_chunk, 1)));
  const std::uint64_t chunk = ((count + n - 1) / n + align - 1) / align * align;
  if (n <= 1 || chunk >= count) {
    if (count > 0) fn(std::uint64_t{0}, count);
    return;
  }
  std::vector<std::exception_ptr> thrown(n);
  std::vector<std::thread> pool;
  auto run = [&](std::uint64_t k) {
    const std::uint64_t begin = std::min(count, k * chunk), end = std::min(count, begin + chunk);
    if (begin == end) return;
    try {
      fn(begin, end);
    } catch (...) {
      thrown[k] = std::current_exception();
    }
  };
  for (std::uint64_t k = 1; k < n; ++k) pool.emplace_back(run, k);
  run(0);
  for (std::thread& th : pool) th.join();
  for (const auto& e : thrown)
    if (e) std::rethrow_exception(e);
}

}  // namespace tl
