// Random problems from a problem schema, biased toward edge values, kept under a byte and FLOP budget.
#include "runtime/spec/random_problem.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <string_view>

namespace tl {
namespace {

// splitmix64: the same stream on every platform and standard library (std distributions are not portable).
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : m_state(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (m_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  double unit() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }  // [0, 1)
  std::size_t index(std::size_t n) { return static_cast<std::size_t>(next() % n); }
  bool chance(double p) { return unit() < p; }

 private:
  std::uint64_t m_state;
};

// How far up an int parameter's draws go (its max when smaller): a few times its default, and at least 256 past
// its minimum, so a size drawn alone stays near the shapes the kernel is meant for and the budget rarely bites.
std::int64_t draw_cap(const ParamSpec& p) {
  const std::int64_t def = std::stoll(p.default_value);
  std::int64_t cap = std::max<std::int64_t>(def > (INT64_MAX / 4) ? INT64_MAX : def * 4, p.min + 256);
  return std::clamp(cap, p.min, p.max);
}

std::string draw_int(const ParamSpec& p, Rng& rng) {
  if (!p.choices.empty()) return p.choices[rng.index(p.choices.size())];
  const std::int64_t cap = draw_cap(p);
  const double r = rng.unit();
  std::int64_t v;
  auto log_uniform = [&] {  // over [max(min, 1), cap]
    const double lo = static_cast<double>(std::max<std::int64_t>(p.min, 1)), hi = static_cast<double>(cap);
    const auto x = static_cast<std::int64_t>(std::floor(std::exp(std::log(lo) + rng.unit() * (std::log(hi + 1) - std::log(lo)))));
    return std::clamp(x, std::max<std::int64_t>(p.min, 1), cap);
  };
  if (r < 0.12) {
    v = p.min;
  } else if (r < 0.18) {
    v = std::min(p.min + 1, p.max);
  } else if (r < 0.45) {
    const auto edges = edge_values(p, cap);
    v = edges[rng.index(edges.size())];
  } else if (r < 0.55) {
    v = std::stoll(p.default_value);
  } else if (r < 0.70) {
    // A multiple of 8, 32 or 128 (what kernels with alignment rules accept: K % 32, 16-byte rows), up from a size
    // drawn as below.
    const std::int64_t m = std::int64_t{8} << (2 * rng.index(3));
    v = (log_uniform() + m - 1) / m * m;
  } else {
    v = log_uniform();
  }
  return std::to_string(std::clamp(v, p.min, p.max));
}

std::map<std::string, std::string> draw_once(const Schema& schema, Rng& rng) {
  std::map<std::string, std::string> given;
  for (const ParamSpec& p : schema.params) {
    // Unset: its default, or (more often, as that is where the spec's following logic runs) default_from's value.
    if (rng.chance(p.default_from.empty() ? 0.12 : 0.35)) continue;
    switch (p.type) {
      case ParamType::int_: given[p.name] = draw_int(p, rng); break;
      case ParamType::enum_: given[p.name] = p.choices[rng.index(p.choices.size())]; break;
      case ParamType::bool_: given[p.name] = rng.chance(0.5) ? "true" : "false"; break;
    }
  }
  // A set int follower is, half the time, a divisor of the value of what it follows (heads_kv of heads, set or at
  // its default: the GQA ratios kernels take; any other value they mostly refuse).
  for (const ParamSpec& p : schema.params) {
    if (p.type != ParamType::int_ || !p.choices.empty() || p.default_from.empty() || !schema.find(p.default_from))
      continue;
    auto own = given.find(p.name);
    if (own == given.end() || !rng.chance(0.5)) continue;
    std::map<std::string, std::string> others = given;
    others.erase(p.name);
    const std::int64_t of = std::stoll(schema.value_of(p.default_from, others));
    std::vector<std::int64_t> divisors;
    for (std::int64_t d = 1; d * d <= of; ++d)
      if (of % d == 0)
        for (auto x : {d, of / d})
          if (x >= p.min && x <= p.max) divisors.push_back(x);
    if (!divisors.empty()) own->second = std::to_string(divisors[rng.index(divisors.size())]);
  }
  return given;
}

std::uint64_t tensor_bytes(const std::vector<ArgSpec>& args) {
  std::uint64_t sum = 0;
  for (const ArgSpec& a : args)
    if (a.kind == ArgSpec::Kind::tensor) sum += a.bytes();
  return sum;
}

std::string mib(double bytes) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.1f MiB", bytes / (1 << 20));
  return buf;
}

std::string gflop(double flops) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.2f GFLOP", flops / 1e9);
  return buf;
}

}  // namespace

std::uint64_t kernel_draw_seed(std::uint64_t seed, const std::string& kernel) {
  std::uint64_t h = 0xCBF29CE484222325ull;  // FNV-1a of the name
  for (unsigned char c : kernel) h = (h ^ c) * 0x100000001B3ull;
  Rng rng(seed ^ h);
  return rng.next();
}

std::vector<std::int64_t> edge_values(const ParamSpec& p, std::int64_t cap) {
  std::set<std::int64_t> v = {p.min, p.min + 1, p.min + 2, std::stoll(p.default_value)};
  for (std::int64_t s : {3, 5, 7, 11, 13, 17, 31, 37, 61, 67, 97, 127, 131, 257, 509, 1021}) v.insert(s);
  for (std::int64_t b = 2; b <= cap && b <= p.max; b *= 2) {
    v.insert({b - 1, b, b + 1});
    if (b > INT64_MAX / 2) break;
  }
  if (p.max <= cap) v.insert({p.max - 1, p.max});
  std::vector<std::int64_t> out;
  for (auto x : v)
    if (x >= p.min && x <= p.max && (x <= cap || x == p.min || x == std::stoll(p.default_value))) out.push_back(x);
  return out;
}

std::vector<DrawnProblem> draw_problems(const KernelSpec& spec, int n, std::uint64_t seed,
                                        const std::map<std::string, std::string>& config, const DeviceLimits& limits,
                                        const DrawOptions& options) {
  Rng rng(kernel_draw_seed(seed, spec.name));
  std::vector<DrawnProblem> out;
  for (int accepted = 0, drawn = 0; accepted < n && drawn < 4 * n; ++drawn) {
    DrawnProblem d;
    for (;; ++d.redraws) {
      d.given = draw_once(spec.problem, rng);
      d.refused.clear();
      d.refused_code = ErrorCode::ok;
      d.bytes = 0;
      d.flops = 0;
      std::string over;  // why this draw is over the budget; empty: within it
      if (auto values = spec.problem.resolve(d.given, "problem"); !values) {
        d.refused = values.status().message();
        d.refused_code = values.status().code();
        break;
      } else {
        // The cheap bounds first (no arguments built: index tables of big problems are built on the host).
        const double flops = spec.flops ? spec.flops(*values) : 0;
        const double min_bytes = spec.min_bytes ? spec.min_bytes(*values) : 0;
        if (flops > options.max_flops) over = "its " + gflop(flops);
        else if (min_bytes > static_cast<double>(options.max_bytes)) over = "its " + mib(min_bytes);
      }
      if (over.empty()) {
        auto inst = instantiate(spec, d.given, config, limits);
        if (!inst) {
          d.refused = inst.status().message();
          d.refused_code = inst.status().code();
          break;
        }
        d.bytes = tensor_bytes(inst->args);
        d.flops = inst->flops;
        if (d.bytes <= options.max_bytes && d.flops <= options.max_flops) break;
        over = "its tensors' " + mib(static_cast<double>(d.bytes));
      }
      if (d.redraws >= options.max_redraws) {
        d.refused = "every one of " + std::to_string(d.redraws + 1) + " draws was over the test budget (" +
                    mib(static_cast<double>(options.max_bytes)) + ", " + gflop(options.max_flops) + "), the last by " +
                    over;
        d.refused_code = ErrorCode::unsupported;
        d.over_budget = true;
        d.bytes = 0;
        d.flops = 0;
        break;
      }
    }
    accepted += d.accepted();
    out.push_back(std::move(d));
  }
  return out;
}

bool has_reason(const std::string& message, const std::string& kernel) {
  std::string_view m = message;
  if (!kernel.empty() && m.substr(0, kernel.size()) == kernel) {
    m.remove_prefix(kernel.size());
    if (!m.empty() && m.front() == ':') m.remove_prefix(1);
  }
  return m.find_first_not_of(" \t\n") != std::string_view::npos;
}

std::optional<std::string> refusal_text(const Status& status, const std::string& kernel) {
  const bool refusal = status.code() == ErrorCode::unsupported || status.code() == ErrorCode::invalid_argument;
  if (!refusal || !has_reason(status.message(), kernel)) return std::nullopt;
  return "refused: " + status.message();
}

}  // namespace tl
