// The float64 reference of the attention forwards: one softmax row per sampled query row, over the keys it sees.
#include "attention/attn_reference.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "runtime/spec/baseline.hpp"
#include "runtime/spec/kernel_spec.hpp"

namespace tl {

std::pair<std::int64_t, std::int64_t> AttnRows::keys(std::int64_t i, std::int64_t s) const {
  const std::int64_t lk = len_k(i), diag = lk - len_q(i);
  const std::int64_t hi = causal ? std::max<std::int64_t>(0, std::min(lk, s + diag + 1)) : lk;
  const std::int64_t lo = window > 0 ? std::max<std::int64_t>(0, s + diag - window + 1) : 0;
  return {std::min(lo, hi), hi};
}

namespace {

// One query row: the unnormalized weights exp(s_j - max) of the keys lo + j it sees, their sum (with the sink's
// exp(sink - max)) and the max (over the sink too), with s_j = q·k_j / sqrt(dim).
struct RefRow {
  std::vector<double> w;
  std::int64_t lo = 0;
  double max = 0, sum = 0;
};

RefRow reference_row(const AttnRows& x, const HostTensor& Q, const HostTensor& K, const HostTensor* sinks,
                     std::int64_t b, std::int64_t h, std::int64_t s) {
  const std::int64_t hk = h / (x.h / x.hkv);
  const auto [lo, hi] = x.keys(b, s);
  const std::int64_t keys = hi - lo, k_row0 = x.k_start[static_cast<std::size_t>(b)];
  std::vector<double> q(static_cast<std::size_t>(x.dim));
  const std::int64_t q0 = ((x.cu_q[static_cast<std::size_t>(b)] + s) * x.h + h) * x.dim;
  for (std::int64_t c = 0; c < x.dim; ++c) q[static_cast<std::size_t>(c)] = Q.at(q0 + c);
  const double scale = 1.0 / std::sqrt(static_cast<double>(x.dim));
  RefRow r;
  r.lo = lo;
  r.w.resize(static_cast<std::size_t>(keys));
  r.max = -std::numeric_limits<double>::infinity();
  for (std::int64_t j = 0; j < keys; ++j) {
    const std::int64_t k0 = ((k_row0 + lo + j) * x.hkv + hk) * x.dim;
    double dot = 0;
    for (std::int64_t c = 0; c < x.dim; ++c) dot += q[static_cast<std::size_t>(c)] * K.at(k0 + c);
    r.w[static_cast<std::size_t>(j)] = dot * scale;
    r.max = std::max(r.max, dot * scale);
  }
  const double sink = sinks ? sinks->at(h) : -std::numeric_limits<double>::infinity();
  r.max = std::max(r.max, sink);
  for (double& w : r.w) r.sum += (w = std::exp(w - r.max));
  if (sinks) r.sum += std::exp(sink - r.max);
  return r;
}

}  // namespace

Result<std::vector<double>> attn_rows_reference(const AttnRows& x, const ReferenceInputs& in, const std::string& output,
                                                const std::vector<std::int64_t>& idx) {
  if (output != "O" && output != "LSE")
    return make_error(ErrorCode::invalid_argument, "attention has outputs O and LSE, not " + output);
  const HostTensor &Q = in.tensor("Q"), &K = in.tensor("K"), &V = in.tensor("V");
  const HostTensor* sinks = x.sinks ? &in.tensor("sinks") : nullptr;
  std::map<std::int64_t, RefRow> rows;  // by (token, h): sampled positions come in whole rows
  auto row = [&](std::int64_t b, std::int64_t h, std::int64_t s) -> const RefRow& {
    const std::int64_t key = (x.cu_q[static_cast<std::size_t>(b)] + s) * x.h + h;
    auto it = rows.find(key);
    if (it == rows.end()) it = rows.emplace(key, reference_row(x, Q, K, sinks, b, h, s)).first;
    return it->second;
  };
  // The sequence of a packed query row.
  auto sequence_of = [&](std::int64_t token) {
    return static_cast<std::int64_t>(std::upper_bound(x.cu_q.begin(), x.cu_q.end(), token) - x.cu_q.begin()) - 1;
  };
  std::vector<double> out;
  out.reserve(idx.size());
  for (std::int64_t i : idx) {
    if (output == "LSE") {  // dense [b, h, s]; varlen [h, total_q]
      std::int64_t b, h, s;
      if (x.varlen) {
        h = i / x.total_q();
        b = sequence_of(i % x.total_q());
        s = i % x.total_q() - x.cu_q[static_cast<std::size_t>(b)];
      } else {
        b = i / (x.h * x.sq), h = (i / x.sq) % x.h, s = i % x.sq;
      }
      const RefRow& r = row(b, h, s);
      out.push_back(r.max + std::log(r.sum));  // -inf for a row without keys (and no sink)
    } else {  // O: [token, h, dim_v]
      const std::int64_t c = i % x.dim_v, h = (i / x.dim_v) % x.h, token = i / (x.dim_v * x.h);
      const std::int64_t b = sequence_of(token);
      const RefRow& r = row(b, h, token - x.cu_q[static_cast<std::size_t>(b)]);
      const std::int64_t hk = h / (x.h / x.hkv), k_row0 = x.k_start[static_cast<std::size_t>(b)] + r.lo;
      double acc = 0;
      for (std::size_t j = 0; j < r.w.size(); ++j)
        acc += r.w[j] * V.at(((k_row0 + static_cast<std::int64_t>(j)) * x.hkv + hk) * x.dim_v + c);
      out.push_back(r.sum > 0 ? acc / r.sum : 0.0);  // a row without keys is 0, as FlashAttention writes it
    }
  }
  return out;
}

void sdpa_lengths(const AttnRows& x, SdpaBaseline& s) {
  for (std::int64_t i = 0; i < x.b; ++i) {
    s.len_q.push_back(x.len_q(i));
    s.start_q.push_back(x.cu_q[static_cast<std::size_t>(i)]);
    s.len_k.push_back(x.len_k(i));
    s.start_k.push_back(x.k_start[static_cast<std::size_t>(i)]);
  }
}

}  // namespace tl
