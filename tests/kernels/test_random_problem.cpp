// `tilelab test --random`'s draws (runtime/spec/random_problem.hpp) over every library kernel's problem schema:
// deterministic per seed, inside every range and choice, edge values and unset parameters do appear, the budget
// holds, and a refused draw says why.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "library/library.hpp"
#include "runtime/spec/random_problem.hpp"

namespace tl {
namespace {

const DeviceLimits kLimits = limits_for_arch("sm_90a");

std::vector<const KernelSpec*> kernels() { return library_registry().list(false); }

std::uint64_t tensor_bytes(const KernelInstance& in) {
  std::uint64_t sum = 0;
  for (const ArgSpec& a : in.args)
    if (a.kind == ArgSpec::Kind::tensor) sum += a.bytes();
  return sum;
}

TEST(RandomProblem, SameSeedSameDrawsOtherSeedOthers) {
  for (const KernelSpec* k : kernels()) {
    SCOPED_TRACE(k->name);
    const auto a = draw_problems(*k, 10, 7, {}, kLimits);
    const auto b = draw_problems(*k, 10, 7, {}, kLimits);
    const auto c = draw_problems(*k, 10, 8, {}, kLimits);
    // Drawn until 10 are accepted, at most 40 draws.
    const auto accepted = std::count_if(a.begin(), a.end(), [](const DrawnProblem& d) { return d.accepted(); });
    EXPECT_TRUE(accepted == 10 || a.size() == 40u) << accepted << " accepted of " << a.size();
    EXPECT_GE(a.size(), 10u);
    EXPECT_LE(a.size(), 40u);
    ASSERT_EQ(a.size(), b.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
      EXPECT_EQ(a[i].given, b[i].given);
      EXPECT_EQ(a[i].refused, b[i].refused);
      EXPECT_EQ(a[i].bytes, b[i].bytes);
    }
    bool differs = a.size() != c.size();
    for (std::size_t i = 0; i < std::min(a.size(), c.size()); ++i) differs = differs || a[i].given != c[i].given;
    EXPECT_TRUE(differs) << "seeds 7 and 8 drew the same 10 problems";
  }
  // A kernel's draws do not depend on which other kernels were drawn (`--kernel K` replays a whole run's K)
  // but do depend on the kernel: two kernels of one schema draw different problems from one seed.
  EXPECT_NE(kernel_draw_seed(7, "attn.fwd.mma"), kernel_draw_seed(7, "attn.fwd.wgmma"));
  EXPECT_EQ(kernel_draw_seed(7, "attn.fwd.mma"), kernel_draw_seed(7, "attn.fwd.mma"));
}

TEST(RandomProblem, EveryValueInsideItsRangeOrChoices) {
  for (const KernelSpec* k : kernels()) {
    SCOPED_TRACE(k->name);
    for (const DrawnProblem& d : draw_problems(*k, 40, kDefaultDrawSeed, {}, kLimits)) {
      for (const auto& [key, value] : d.given) {
        const ParamSpec* p = k->problem.find(key);
        ASSERT_NE(p, nullptr) << key;
        // Each value on its own resolves (only default_from followers can make a whole draw fail to resolve).
        auto alone = k->problem.resolve({{key, value}}, "problem");
        EXPECT_TRUE(alone.ok()) << alone.status().message();
        if (p->type == ParamType::int_) {
          const auto v = std::stoll(value);
          if (p->choices.empty()) {
            EXPECT_GE(v, p->min) << key;
            EXPECT_LE(v, p->max) << key;
          } else {
            EXPECT_NE(std::find(p->choices.begin(), p->choices.end(), value), p->choices.end()) << key << "=" << value;
          }
        } else if (p->type == ParamType::enum_) {
          EXPECT_NE(std::find(p->choices.begin(), p->choices.end(), value), p->choices.end()) << key << "=" << value;
        } else {
          EXPECT_TRUE(value == "true" || value == "false") << key << "=" << value;
        }
      }
    }
  }
}

TEST(RandomProblem, EdgeValuesAndUnsetParametersAppear) {
  // Over a few hundred draws of one kernel: its minimum, the one after it, a power of two +-1 past the minimum and
  // a parameter left unset all come up, and an accepted draw sets every kind of value somewhere.
  const KernelSpec& gemm = *library_registry().find("gemm.simt").value();
  std::map<std::string, std::set<std::int64_t>> seen;
  int unset = 0;
  for (const DrawnProblem& d : draw_problems(gemm, 300, kDefaultDrawSeed, {}, kLimits)) {
    for (const char* key : {"M", "N", "K"}) {
      if (auto it = d.given.find(key); it != d.given.end()) seen[key].insert(std::stoll(it->second));
      else ++unset;
    }
  }
  for (const char* key : {"M", "N", "K"}) {
    SCOPED_TRACE(key);
    EXPECT_TRUE(seen[key].count(1)) << "min";
    EXPECT_TRUE(seen[key].count(2)) << "min+1";
    const bool pow2_neighbour = seen[key].count(63) || seen[key].count(65) || seen[key].count(127) ||
                                seen[key].count(129) || seen[key].count(255) || seen[key].count(257);
    EXPECT_TRUE(pow2_neighbour);
    const bool odd_prime = seen[key].count(13) || seen[key].count(17) || seen[key].count(31) || seen[key].count(37);
    EXPECT_TRUE(odd_prime);
  }
  EXPECT_GT(unset, 0);
  // A zero-length minimum (mla.decode's seq_k = 0) is drawn too.
  const KernelSpec& mla = *library_registry().find("mla.decode").value();
  bool zero = false;
  for (const DrawnProblem& d : draw_problems(mla, 200, kDefaultDrawSeed, {}, kLimits))
    zero = zero || (d.given.count("seq_k") && d.given.at("seq_k") == "0");
  EXPECT_TRUE(zero);
  // default_from followers are left unset at times while what they follow is set (heads_kv follows heads).
  const KernelSpec& attn = *library_registry().find("attn.fwd.mma").value();
  bool follows = false;
  for (const DrawnProblem& d : draw_problems(attn, 100, kDefaultDrawSeed, {}, kLimits))
    follows = follows || (d.given.count("heads") && !d.given.count("heads_kv"));
  EXPECT_TRUE(follows);
  // A set follower is at times a proper divisor of what it follows (a GQA ratio: heads 12, heads_kv 4).
  bool gqa = false;
  for (const DrawnProblem& d : draw_problems(attn, 200, kDefaultDrawSeed, {}, kLimits)) {
    if (!d.given.count("heads") || !d.given.count("heads_kv")) continue;
    const auto h = std::stoll(d.given.at("heads")), kv = std::stoll(d.given.at("heads_kv"));
    gqa = gqa || (kv > 1 && kv < h && h % kv == 0);
  }
  EXPECT_TRUE(gqa);
}

TEST(RandomProblem, EdgeValuesStayInRange) {
  for (const KernelSpec* k : kernels()) {
    for (const ParamSpec& p : k->problem.params) {
      if (p.type != ParamType::int_ || !p.choices.empty()) continue;
      SCOPED_TRACE(k->name + " " + p.name);
      const auto edges = edge_values(p, p.max);
      ASSERT_FALSE(edges.empty());
      EXPECT_EQ(edges.front(), p.min);
      for (auto v : edges) {
        EXPECT_GE(v, p.min);
        EXPECT_LE(v, p.max);
      }
    }
  }
}

TEST(RandomProblem, AcceptedDrawsInstantiateWithinTheBudget) {
  DrawOptions small;
  small.max_bytes = 1 << 20;  // so the cap bites: most kernels' defaults are far over it
  small.max_flops = 5e7;
  int redrawn = 0, accepted = 0;
  for (const DrawOptions& opt : {DrawOptions{}, small}) {
    for (const KernelSpec* k : kernels()) {
      SCOPED_TRACE(k->name + " max_bytes " + std::to_string(opt.max_bytes));
      for (const DrawnProblem& d : draw_problems(*k, 12, kDefaultDrawSeed, {}, kLimits, opt)) {
        redrawn += d.redraws;
        if (!d.accepted()) continue;
        ++accepted;
        auto in = instantiate(*k, d.given, {}, kLimits);
        ASSERT_TRUE(in.ok()) << in.status().message();
        EXPECT_EQ(tensor_bytes(*in), d.bytes);
        EXPECT_LE(d.bytes, opt.max_bytes);
        EXPECT_LE(in->flops, opt.max_flops);
      }
    }
  }
  EXPECT_GT(redrawn, 0);
  EXPECT_GT(accepted, 100);  // the draws mostly run: refusals and the budget leave most of them
}

TEST(RandomProblem, RefusedDrawsSayWhy) {
  int refused = 0;
  for (const KernelSpec* k : kernels()) {
    SCOPED_TRACE(k->name);
    for (const DrawnProblem& d : draw_problems(*k, 30, kDefaultDrawSeed, {}, kLimits)) {
      if (d.accepted()) continue;
      ++refused;
      EXPECT_TRUE(has_reason(d.refused, k->name)) << "'" << d.refused << "'";
      auto text = refusal_text(make_error(d.refused_code, d.refused), k->name);
      ASSERT_TRUE(text.has_value()) << d.refused;
      EXPECT_EQ(text->rfind("refused: ", 0), 0u);
      // The runner sees the same refusal: instantiate on the draw gives the same message.
      if (!d.over_budget) {
        auto in = instantiate(*k, d.given, {}, kLimits);
        ASSERT_FALSE(in.ok());
        EXPECT_EQ(in.status().message(), d.refused);
      }
    }
  }
  EXPECT_GT(refused, 0) << "no kernel refused any of its draws: the refusal path went untested";

  // Every draw over a budget nothing meets: refused, over_budget, with the budget in the reason.
  DrawOptions none;
  none.max_flops = 0.5;
  none.max_redraws = 5;
  const KernelSpec& gemm = *library_registry().find("gemm.simt").value();
  for (const DrawnProblem& d : draw_problems(gemm, 3, 1, {}, kLimits, none)) {
    EXPECT_FALSE(d.accepted());
    EXPECT_TRUE(d.over_budget);
    EXPECT_NE(d.refused.find("over the test budget"), std::string::npos) << d.refused;
  }
}

TEST(RandomProblem, ARefusalWithoutAReasonIsAFailure) {
  EXPECT_EQ(refusal_text(make_error(ErrorCode::unsupported, "K: dim 64 needs seq_k > 0"), "K"),
            "refused: K: dim 64 needs seq_k > 0");
  EXPECT_EQ(refusal_text(make_error(ErrorCode::invalid_argument, "problem x=1: out of range"), "K"),
            "refused: problem x=1: out of range");
  EXPECT_FALSE(refusal_text(make_error(ErrorCode::unsupported, ""), "K"));
  EXPECT_FALSE(refusal_text(make_error(ErrorCode::unsupported, "K: "), "K"));
  EXPECT_FALSE(refusal_text(make_error(ErrorCode::unsupported, "K:"), "K"));
  EXPECT_FALSE(refusal_text(make_error(ErrorCode::compile, "K: ptxas error"), "K"));
  EXPECT_FALSE(refusal_text(make_error(ErrorCode::internal, "K: bug"), "K"));

  // A spec whose can_implement refuses without a message: the draw keeps the refusal, and the runner's reading of it
  // is a failure.
  KernelSpec fake;
  fake.name = "test.fake";
  fake.problem.params = {ParamSpec::integer("n", 8, 1, 64, "elements")};
  fake.can_implement = [](const Values& p, const Values&, const DeviceLimits&) -> Status {
    if (p.integer("n") % 2) return make_error(ErrorCode::unsupported, "");
    return {};
  };
  fake.name_expression = [](const Values&, const Values&) { return std::string("k"); };
  fake.launch = [](const Values&, const Values&, const DeviceLimits&) { return LaunchGeometry{}; };
  fake.args = [](const Values& p, const Values&, const DeviceLimits&) {
    return std::vector<ArgSpec>{ArgSpec::tensor("x", DType::f32, {p.integer("n")}, ArgRole::out)};
  };
  int odd = 0;
  for (const DrawnProblem& d : draw_problems(fake, 40, 3, {}, kLimits)) {
    const auto n = d.given.count("n") ? std::stoll(d.given.at("n")) : 8;
    if (n % 2 == 0) {
      EXPECT_TRUE(d.accepted());
      EXPECT_EQ(d.bytes, static_cast<std::uint64_t>(n) * 4);
      continue;
    }
    ++odd;
    EXPECT_EQ(d.refused_code, ErrorCode::unsupported);
    EXPECT_FALSE(has_reason(d.refused, fake.name)) << d.refused;
    EXPECT_FALSE(refusal_text(make_error(d.refused_code, d.refused), fake.name));
  }
  EXPECT_GT(odd, 0);
}

}  // namespace
}  // namespace tl
