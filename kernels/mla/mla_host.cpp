// Host pieces the MLA specs share (mla_host.hpp says what each is).
#include "mla/mla_host.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <future>
#include <limits>
#include <list>
#include <mutex>

#include "runtime/core/numeric.hpp"
#include "runtime/spec/kernel_spec.hpp"
#include "tile/layout_spec.hpp"

namespace tl::mla {

std::int32_t invalid_index(std::uint64_t h, std::int64_t capacity) {
  const auto clamp = [](std::int64_t v) { return static_cast<std::int32_t>(std::min<std::int64_t>(v, 2147483647)); };
  const std::int32_t bad[] = {-1, std::numeric_limits<std::int32_t>::min(), -123456, clamp(capacity),
                              clamp(capacity + 1000), 2147483647};
  return bad[h % 6];
}

std::vector<float> sparse_sinks(std::int64_t heads, bool on) {
  std::vector<float> sink(static_cast<std::size_t>(heads), -std::numeric_limits<float>::infinity());
  const float inf = std::numeric_limits<float>::infinity();
  if (on)
    for (std::int64_t j = 0; j < heads; ++j) {
      const auto h = static_cast<std::uint64_t>(j);
      const std::uint64_t k = num::hash64(0x5D07, h) % 4;
      sink[static_cast<std::size_t>(j)] =
          k == 0 ? -inf : k == 1 ? inf : static_cast<float>(num::uniform_value(0x5D08, h, 0.0, 12.0));
    }
  return sink;
}

ArgSpec sink_arg(const std::vector<float>& sink) {
  ArgSpec a = ArgSpec::tensor("sink", DType::f32, {static_cast<std::int64_t>(sink.size())}, ArgRole::in,
                              {.kind = Fill::Kind::data});
  a.data.resize(sink.size() * sizeof(float));
  std::memcpy(a.data.data(), sink.data(), a.data.size());
  return a;
}

Status hopper_refusal(const std::string& kernel, unsigned smem_bytes, const DeviceLimits& limits) {
  if (limits.cc < 90 || limits.arch.find('a') == std::string::npos)
    return make_error(ErrorCode::unsupported,
                      kernel + " uses TMA, wgmma and setmaxnreg: it needs sm_90a (a Hopper GPU), not " + limits.arch);
  if (static_cast<std::int64_t>(smem_bytes) > limits.smem_per_block_optin)
    return make_error(ErrorCode::unsupported, kernel + " needs " + std::to_string(smem_bytes) +
                                                  " bytes of shared memory per block, over " + limits.arch + "'s " +
                                                  std::to_string(limits.smem_per_block_optin));
  return Status::success();
}

Status memory_refusal(double bytes, const std::string& what, const std::string& fix) {
  constexpr double kLargestHopper = 144e9;
  if (bytes <= kLargestHopper) return Status::success();
  char gb[32];
  std::snprintf(gb, sizeof gb, "%.1f", bytes / 1e9);
  return make_error(ErrorCode::unsupported, what + " of this problem take " + gb +
                                                " GB, more than any Hopper GPU holds (144 GB; an H100 has 80 GB): use a "
                                                "smaller " + fix);
}

std::shared_ptr<const void> shared_problem_data(const std::string& kind, const Values& problem,
                                                const std::function<std::shared_ptr<const void>()>& build,
                                                const std::function<std::size_t(const void*)>& bytes) {
  struct Entry {
    std::string key;
    std::shared_future<std::shared_ptr<const void>> data;
    std::size_t bytes = 0;  // 0 while it is built
  };
  static std::mutex mutex;
  static std::list<Entry> entries;  // newest first
  constexpr std::size_t kKeep = 4, kOlderBytes = std::size_t{1} << 30;
  const std::string key = kind + '|' + problem.to_string();
  std::promise<std::shared_ptr<const void>> made;
  std::unique_lock lock(mutex);
  for (auto it = entries.begin(); it != entries.end(); ++it)
    if (it->key == key) {
      entries.splice(entries.begin(), entries, it);
      const auto data = it->data;
      lock.unlock();  // a build in progress is waited for outside the lock
      return data.get();
    }
  entries.push_front({key, made.get_future().share(), 0});
  lock.unlock();
  std::shared_ptr<const void> value;
  try {
    value = build();
  } catch (...) {
    made.set_exception(std::current_exception());
    lock.lock();
    entries.remove_if([&](const Entry& e) { return e.key == key; });
    throw;
  }
  made.set_value(value);
  lock.lock();
  std::size_t total = 0, kept = 0;
  for (auto it = entries.begin(); it != entries.end();) {
    if (it->key == key) it->bytes = std::max<std::size_t>(1, bytes(value.get()));
    const bool built = it->bytes > 0;  // one being built elsewhere stays (its builder fills it in)
    if (built && kept > 0 && (kept >= kKeep || total + it->bytes > kOlderBytes)) {
      it = entries.erase(it);
      continue;
    }
    if (built) {
      total += kept > 0 ? it->bytes : 0;
      ++kept;
    }
    ++it;
  }
  return value;
}

std::vector<LayoutInfo> consumer_layouts(const MlaDecodePlan& plan, const std::string& dtype) {
  std::vector<LayoutInfo> out = {{"smem_Q", memory_spec(plan.tile, dtype)},
                                 {"smem_KV", memory_spec(plan.tile, dtype)},
                                 {"smem_P", memory_spec(plan.p, dtype)},
                                 {"smem_row_max", memory_spec(plan.row_max, "f32")},
                                 {"smem_row_sum", memory_spec(plan.row_sum, "f32")}};
  const auto acc = [](int n) { return "wgmma.m64n" + std::to_string(n) + "k16.f32.C"; };
  for (const auto& [name, frag] : {std::pair{"acc_S", plan.acc_s}, std::pair{"acc_O", plan.acc_o}})
    if (auto spec = fragment_spec(frag, acc(frag.cols()))) out.push_back({name, *spec});
  return out;
}

OutputSampling sparse_sampling(std::int64_t topk, const std::string& output) {
  const std::int64_t rows = std::clamp<std::int64_t>(300000000 / (kMlaDimQK * std::max<std::int64_t>(topk, 64)), 8, 96);
  return output == "O" ? OutputSampling{kMlaDimV, static_cast<std::uint64_t>(rows * kMlaDimV)}
                       : OutputSampling{1, static_cast<std::uint64_t>(std::min<std::int64_t>(256, 2 * rows))};
}

RefRow reference_row(const RefToken& t, const HostTensor& Q, double sink, std::int64_t q0) {
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
