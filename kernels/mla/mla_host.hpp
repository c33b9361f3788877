// Host pieces the MLA specs share (defined in mla_host.cpp; this header names the runtime's types without including
// them, as a family header must): the consumers' layouts (all three specs), and for the sparse ones
// (mla.sparse_decode, mla.sparse_prefill) the problem's invalid indices and sinks, the sm_90a and shared-memory
// refusal, output sampling, and the float64 reference (one query row against the keys its query token gathered,
// sampled rows computed once).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "mla/mla_decode_plan.hpp"

namespace tl {
struct ArgSpec;
struct DeviceLimits;
struct HostTensor;
struct LayoutInfo;
struct OutputSampling;
class Status;
class Values;
}  // namespace tl

namespace tl::mla {

// Invalid index kind h % 6 (FlashMLA's test mixes them): negatives, and values at or past the `capacity` valid rows.
std::int32_t invalid_index(std::uint64_t h, std::int64_t capacity);

// attn_sink per head: uniform in [0, 12], a quarter -inf (no effect), a quarter +inf (out 0); all -inf without `on`.
std::vector<float> sparse_sinks(std::int64_t heads, bool on);

// The sink as the kernels' f32 argument [heads].
ArgSpec sink_arg(const std::vector<float>& sink);

// Both sparse kernels use TMA, wgmma and setmaxnreg, and need their plan's shared memory.
Status hopper_refusal(const std::string& kernel, unsigned smem_bytes, const DeviceLimits& limits);

// A problem whose tensors (`bytes`: `what` they are) no Hopper GPU can hold (more than 144 GB, a GH200's; an H100
// has 80 GB), refused before anything is built: its host data alone (block tables, index lists) took minutes and
// gigabytes before the allocation failed. `fix` names the parameters to make smaller.
Status memory_refusal(double bytes, const std::string& what, const std::string& fix);

// The host data a problem determines (index lists, block tables, lengths), built once per problem and shared: a
// spec's launch, args, flops, min_bytes, probe_capacity and each thread of its reference all ask for it, and a bench
// instantiates twice; at 88 GB problems each build took a minute on one thread. `kind` keeps the specs' apart; the
// last few problems' stay (the newest always, older ones while they total under 1 GiB, `bytes` each); concurrent
// askers of one problem wait for one build. A build that throws is not kept.
std::shared_ptr<const void> shared_problem_data(const std::string& kind, const Values& problem,
                                                const std::function<std::shared_ptr<const void>()>& build,
                                                const std::function<std::size_t(const void*)>& bytes);

template <class Data>
std::shared_ptr<const Data> problem_data(const std::string& kind, const Values& problem) {
  return std::static_pointer_cast<const Data>(shared_problem_data(
      kind, problem, [&] { return std::shared_ptr<const void>(std::make_shared<const Data>(problem)); },
      [](const void* d) { return static_cast<const Data*>(d)->host_bytes(); }));
}

// The consumers' tiles and accumulators (mla.decode's plan), as the Layouts panel shows them.
std::vector<LayoutInfo> consumer_layouts(const MlaDecodePlan& plan, const std::string& dtype = "bf16");

// Each sampled O row (512 values) and LSE-like entry costs the reference a query token's gather and a softmax row.
OutputSampling sparse_sampling(std::int64_t topk, const std::string& output);

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
RefRow reference_row(const RefToken& t, const HostTensor& Q, double sink, std::int64_t q0);

// The reference at sampled positions idx: row_of(i) is position i's query row (token * heads + head); each row is
// computed once, the rows of a token after one gather(token); pick(row, i) reads position i's value from it.
template <class Tensor, class RowOf, class Gather, class Pick>
std::vector<double> reference_at(const std::vector<std::int64_t>& idx, std::int64_t heads, const Tensor& Q,
                                 const Tensor& sink, RowOf row_of, Gather gather, Pick pick) {
  std::map<std::int64_t, RefRow> rows;
  for (std::int64_t i : idx) rows.emplace(row_of(i), RefRow{});
  std::int64_t gathered = -1;
  RefToken token;
  for (auto& [key, row] : rows) {  // in key order: each token's rows one after another, gathered once
    const std::int64_t r = key / heads;
    if (r != gathered) token = gather(gathered = r);
    row = reference_row(token, Q, sink.at(key % heads), key * kMlaDimQK);
  }
  std::vector<double> out;
  out.reserve(idx.size());
  for (std::int64_t i : idx) out.push_back(pick(rows.at(row_of(i)), i));
  return out;
}

}  // namespace tl::mla
