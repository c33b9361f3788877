// Host pieces both sparse MLA specs (mla.sparse_decode, mla.sparse_prefill) use: the problem's invalid indices and
// sinks, and the float64 reference row (one query row against the keys its query token gathered).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "mla/mla_decode_plan.hpp"
#include "runtime/core/numeric.hpp"
#include "runtime/spec/kernel_spec.hpp"

namespace tl::mla {

// Invalid index kind h % 6 (FlashMLA's test mixes them): negatives, and values at or past the `capacity` valid rows.
inline std::int32_t invalid_index(std::uint64_t h, std::int64_t capacity) {
  const auto clamp = [](std::int64_t v) { return static_cast<std::int32_t>(std::min<std::int64_t>(v, 2147483647)); };
  const std::int32_t bad[] = {-1, std::numeric_limits<std::int32_t>::min(), -123456, clamp(capacity),
                              clamp(capacity + 1000), 2147483647};
  return bad[h % 6];
}

// attn_sink per head: uniform in [0, 12], a quarter -inf (no effect), a quarter +inf (out 0); all -inf without `on`.
inline std::vector<float> sparse_sinks(std::int64_t heads, bool on) {
  std::vector<float> sink(static_cast<std::size_t>(heads), -std::numeric_limits<float>::infinity());
  if (on)
    for (std::int64_t j = 0; j < heads; ++j) {
      const std::uint64_t k = num::hash64(0x5D07, static_cast<std::uint64_t>(j)) % 4;
      sink[static_cast<std::size_t>(j)] = k == 0 ? -std::numeric_limits<float>::infinity()
                                          : k == 1 ? std::numeric_limits<float>::infinity()
                                                   : static_cast<float>(num::uniform_value(0x5D08, static_cast<std::uint64_t>(j), 0.0, 12.0));
    }
  return sink;
}

// A query token's valid keys in float64, each a 576-value row (the first 512 are V).
struct RefToken {
  std::vector<double> k;  // [n, 576]
  std::int64_t n = 0;
};

struct RefRow {
  double lse = 0, max_logit = 0;
  std::vector<double> o;
};

// Query row Q[q0 .. q0 + 576) against the token's keys: scores q.k / 24, the softmax, LSE (+inf without a key), the
// largest score (-inf without a key) and O over the first 512 columns, scaled by exp(lse) / (exp(lse) + exp(sink))
// (sink -inf: 1; +inf: 0); O = 0 without a key.
inline RefRow reference_row(const RefToken& t, const HostTensor& Q, double sink, std::int64_t q0) {
  constexpr std::int64_t dqk = kMlaDimQK, dv = kMlaDimV;
  const auto u = [](std::int64_t v) { return static_cast<std::size_t>(v); };
  std::vector<double> w(u(t.n));
  double mx = -std::numeric_limits<double>::infinity(), sum = 0;
  for (std::int64_t j = 0; j < t.n; ++j) {
    double dot = 0;
    for (std::int64_t c = 0; c < dqk; ++c) dot += Q.at(q0 + c) * t.k[u(j * dqk + c)];
    w[u(j)] = dot / 24.0;
    mx = std::max(mx, dot / 24.0);
  }
  for (double& v : w) sum += (v = std::exp(v - mx));
  RefRow row;
  row.o.assign(u(dv), 0.0);
  row.max_logit = mx;
  if (t.n == 0) {
    row.lse = std::numeric_limits<double>::infinity();
    return row;
  }
  row.lse = mx + std::log(sum);
  const double out_scale = 1.0 / sum / (1.0 + std::exp(sink - row.lse));
  for (std::int64_t j = 0; j < t.n; ++j)
    for (std::int64_t c = 0; c < dv; ++c) row.o[u(c)] += w[u(j)] * t.k[u(j * dqk + c)];
  for (double& v : row.o) v *= out_scale;
  return row;
}

}  // namespace tl::mla
