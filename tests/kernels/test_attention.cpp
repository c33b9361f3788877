// attn.fwd.mma and attn.fwd.wgmma without a GPU: configs compile (NVRTC, sm_90a, and sm_80 for mma) without spills,
// can_implement refuses with reasons, the float64 reference agrees with a direct computation, FLOPs/bytes, tensor
// maps, and row-wise output sampling.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <set>

#include "attention/attn_fwd_mma_plan.hpp"
#include "library/library.hpp"
#include "runtime/jit/cache.hpp"
#include "runtime/trace/timeline.hpp"
#include "tests/support/scratch_jit.hpp"
#include "tile/layout_spec.hpp"
#include "tile/work_order.hpp"

namespace tl {
namespace {
namespace fs = std::filesystem;
using KV = std::map<std::string, std::string>;

const KernelSpec& attn() { return *library_registry().find("attn.fwd.mma").value(); }
const KernelSpec& attn_wgmma() { return *library_registry().find("attn.fwd.wgmma").value(); }

Jit& jit() { return test::scratch_jit(); }

const ArgSpec& arg(const KernelInstance& k, const std::string& name) {
  for (const ArgSpec& a : k.args)
    if (a.name == name) return a;
  throw std::out_of_range("no argument " + name);
}

TEST(Attention, ConfigsCompileForHopperAndAmpereWithoutSpilling) {
  const std::vector<std::pair<KV, KV>> cases = {
      {{}, {}},
      {{{"causal", "true"}, {"dtype", "f16"}}, {}},
      {{{"dim", "64"}, {"heads_kv", "2"}}, {{"block_M", "128"}, {"block_N", "64"}, {"warps", "4"}}},
      {{{"dim", "128"}, {"causal", "true"}}, {{"block_M", "128"}, {"block_N", "128"}, {"warps", "8"}, {"num_stages", "3"}}},
      {{{"dim", "64"}, {"causal", "true"}, {"dtype", "f16"}}, {{"block_N", "32"}, {"warps", "2"}, {"num_stages", "4"}}},
      {{{"varlen", "true"}, {"causal", "true"}, {"batch", "7"}}, {{"block_M", "128"}, {"warps", "8"}}},
  };
  for (const std::string arch : {"sm_90a", "sm_80"}) {
    for (const auto& [problem, config] : cases) {
      auto inst = instantiate(attn(), problem, config, limits_for_arch(arch));
      if (arch == "sm_80" && !inst.ok()) continue;  // 3 stages of 128-row tiles exceed sm_80's shared memory
      ASSERT_TRUE(inst.ok()) << inst.status().message();
      SCOPED_TRACE(arch + " " + inst->name_expression);
      JitOptions opt;
      opt.arch = arch;
      auto k = jit().compile(compile_request(*inst, opt));
      ASSERT_TRUE(k.ok()) << k.status().message();
      EXPECT_GT(k->resources.registers, 0);
      EXPECT_EQ(k->resources.spill_store_bytes, 0);
      EXPECT_LE(k->resources.registers * static_cast<int>(inst->launch.block.x), limits_for_arch(arch).regs_per_block);
    }
  }
}

void expect_refused(const KV& problem, const KV& config, const std::string& arch, const std::vector<std::string>& words) {
  auto inst = instantiate(attn(), problem, config, limits_for_arch(arch));
  ASSERT_FALSE(inst.ok());
  EXPECT_EQ(inst.status().code(), ErrorCode::unsupported) << inst.status().message();
  for (const auto& w : words) EXPECT_NE(inst.status().message().find(w), std::string::npos) << inst.status().message();
}

TEST(Attention, CanImplementRefusesWithReasons) {
  expect_refused({{"heads", "16"}, {"heads_kv", "3"}}, {}, "sm_90a", {"heads_kv=3", "heads=16", "divisor"});
  expect_refused({{"causal", "true"}, {"seq_q", "300"}, {"seq_k", "200"}}, {}, "sm_90a", {"seq_q=300", "seq_k=200"});
  expect_refused({}, {{"block_M", "64"}, {"warps", "8"}}, "sm_90a", {"multiple of 16 * warps"});
  // 32 rows per warp: 2 * (64 + 32) = 192 accumulators
  expect_refused({}, {{"block_M", "128"}, {"block_N", "64"}, {"warps", "4"}}, "sm_90a", {"192", "spills"});
  // (128 + 2*3*128) * 128 * 2 = 229376 bytes: fits sm_90a's 232448, not sm_80's 166912
  const KV big = {{"block_M", "128"}, {"block_N", "128"}, {"warps", "8"}, {"num_stages", "3"}};
  EXPECT_TRUE(instantiate(attn(), {}, big, limits_for_arch("sm_90a")).ok());
  expect_refused({}, big, "sm_80", {"229376", "shared memory", "num_stages"});
  // What only attn.fwd.wgmma runs is not in attn.fwd.mma's schema: an invalid problem, naming where it is.
  const auto not_in_schema = [](const KV& problem, const std::vector<std::string>& words) {
    auto inst = instantiate(attn(), problem, {}, limits_for_arch("sm_90a"));
    ASSERT_FALSE(inst.ok());
    EXPECT_EQ(inst.status().code(), ErrorCode::invalid_argument) << inst.status().message();
    for (const auto& w : words) EXPECT_NE(inst.status().message().find(w), std::string::npos) << inst.status().message();
  };
  not_in_schema({{"dim", "192"}, {"dim_v", "128"}}, {"dim=192", "one of 64, 128", "attn.fwd.wgmma"});
  not_in_schema({{"dim_v", "64"}}, {"'dim_v'", "attn.fwd.wgmma"});
  not_in_schema({{"causal", "true"}, {"window", "64"}}, {"'window'", "sliding windows", "attn.fwd.wgmma"});
  not_in_schema({{"sinks", "true"}}, {"'sinks'", "attn.fwd.wgmma"});
  for (const char* key : {"dim_v", "window", "sinks"}) EXPECT_EQ(attn().problem.find(key), nullptr) << key;
  // Its matrix is the shared one less those problems (none of them left, the rest all there).
  for (bool full : {false, true})
    for (const auto& kv : attn().test_problems(full)) {
      EXPECT_EQ(kv.count("window") + kv.count("sinks") + kv.count("dim_v"), 0u);
      EXPECT_TRUE(kv.at("dim") == "64" || kv.at("dim") == "128");
    }
  EXPECT_GE(attn().test_problems(false).size(), 6u);
  // A window is a causal band: it implies the causal mask (and its seq_q <= seq_k).
  auto banded = instantiate(attn_wgmma(), {{"window", "64"}}, {}, limits_for_arch("sm_90a"));
  ASSERT_TRUE(banded.ok()) << banded.status().message();
  EXPECT_NE(banded->name_expression.find(".causal = true"), std::string::npos);
  EXPECT_TRUE(banded->spec->baseline(banded->problem, banded->config)->sdpa.causal);
  auto wide = instantiate(attn_wgmma(), {{"window", "64"}, {"seq_q", "300"}, {"seq_k", "200"}}, {}, limits_for_arch("sm_90a"));
  ASSERT_FALSE(wide.ok());
  EXPECT_NE(wide.status().message().find("window=64 with seq_q=300"), std::string::npos) << wide.status().message();
}

TEST(Attention, GeometryFlopsAndBytes) {
  const KV p = {{"batch", "3"}, {"seq_q", "1000"}, {"seq_k", "1500"}, {"heads", "8"}, {"heads_kv", "2"}, {"dim", "64"}};
  auto k = instantiate(attn(), p, {{"block_M", "128"}, {"warps", "8"}}, limits_for_arch("sm_90a")).value();
  EXPECT_EQ(k.launch.grid.x, 8u);  // ceil(1000 / 128)
  EXPECT_EQ(k.launch.grid.y, 8u);
  EXPECT_EQ(k.launch.grid.z, 3u);
  EXPECT_EQ(k.launch.block.x, 256u);
  EXPECT_DOUBLE_EQ(k.flops, 4.0 * 3 * 8 * 1000 * 1500 * 64);
  EXPECT_DOUBLE_EQ(k.min_bytes, 2.0 * 3 * 64 * (2 * 1000 * 8 + 2 * 1500 * 2) + 4.0 * 3 * 8 * 1000 + 4.0 * 2 * 4);
  KV pc = p;
  pc["causal"] = "true";
  EXPECT_DOUBLE_EQ(instantiate(attn(), pc, {}, limits_for_arch("sm_90a")).value().flops, k.flops / 2);
  EXPECT_EQ(k.args.at(1).shape, (std::vector<std::int64_t>{3, 1500, 2, 64}));  // K
  EXPECT_EQ(k.args.at(4).shape, (std::vector<std::int64_t>{3, 8, 1000}));      // LSE
  EXPECT_EQ(k.args.at(4).dtype, DType::f32);
}

ReferenceInputs inputs_of(const KernelInstance& k) {
  ReferenceInputs in;
  for (const auto& a : k.args) {
    if (a.kind == ArgSpec::Kind::scalar) in.scalars[a.name] = a.value;
    else if (a.role != ArgRole::out) in.tensors[a.name] = make_host_tensor(a);
  }
  return in;
}

// Tiny GQA problems computed here the textbook way (scores, masked softmax, weighted sum) from the offsets the kernel
// gets, independently of the spec's row cache and index arithmetic; dense and varlen, causal and not.
// Also with d_qk != d_v (192 / 128: the scale is 1/sqrt(192), O has 128 columns), through attn.fwd.wgmma.
TEST(Attention, ReferenceMatchesADirectComputation) {
  const int H = 4, HKV = 2;
  for (const auto& [D, DV] : {std::pair{64, 64}, std::pair{192, 128}})
  for (bool varlen : {false, true})
    for (bool causal : {false, true}) {
      SCOPED_TRACE(std::string(varlen ? "varlen " : "dense ") + (causal ? "causal " : "full ") + std::to_string(D) + "/" +
                   std::to_string(DV));
      KV p = {{"batch", "4"}, {"seq_q", "6"}, {"seq_k", "9"}, {"heads", "4"}, {"heads_kv", "2"},
              {"dim", std::to_string(D)}, {"causal", causal ? "true" : "false"}, {"varlen", varlen ? "true" : "false"}};
      if (D != DV) p["dim_v"] = std::to_string(DV);  // attn.fwd.wgmma's alone
      auto k = instantiate(D == DV ? attn() : attn_wgmma(), p, {}, limits_for_arch("sm_90a")).value();
      auto in = inputs_of(k);
      const auto &Q = in.tensor("Q"), &K = in.tensor("K"), &V = in.tensor("V");
      const auto &cq = in.tensor("cu_seqlens_q"), &ck = in.tensor("cu_seqlens_k");
      ASSERT_EQ(cq.numel(), 5);
      const int total_q = static_cast<int>(cq.at(4));
      EXPECT_EQ(Q.shape.at(0), varlen ? total_q : 4);
      std::vector<std::int64_t> all_o(static_cast<std::size_t>(total_q * H * DV)), all_l(static_cast<std::size_t>(total_q * H));
      for (std::size_t i = 0; i < all_o.size(); ++i) all_o[i] = static_cast<std::int64_t>(i);
      for (std::size_t i = 0; i < all_l.size(); ++i) all_l[i] = static_cast<std::int64_t>(i);
      auto O = k.spec->reference(k.problem, in, "O", all_o).value();
      auto L = k.spec->reference(k.problem, in, "LSE", all_l).value();
      bool some_shorter = false, some_empty = false;
      for (int b = 0; b < 4; ++b) {
        const int q0 = static_cast<int>(cq.at(b)), lq = static_cast<int>(cq.at(b + 1)) - q0;
        const int k0 = static_cast<int>(ck.at(b)), lk = static_cast<int>(ck.at(b + 1)) - k0;
        EXPECT_LE(lq, 6);
        EXPECT_LE(lk, 9);
        if (!varlen) {
          EXPECT_TRUE(lq == 6 && lk == 9);
        }
        if (causal) {
          EXPECT_LE(lq, lk);
        }
        some_shorter |= lq < 6 || lk < 9;
        some_empty |= lk == 0;
        for (int h = 0; h < H; ++h)
          for (int s = 0; s < lq; ++s) {
            const int hk = h / 2;
            std::vector<double> score;
            for (int j = 0; j < lk; ++j) {
              if (causal && j > s + lk - lq) continue;  // bottom-right aligned
              double dot = 0;
              for (int c = 0; c < D; ++c) dot += Q.at(((q0 + s) * H + h) * D + c) * K.at(((k0 + j) * HKV + hk) * D + c);
              score.push_back(dot / std::sqrt(static_cast<double>(D)));
            }
            double z = 0;
            for (double v : score) z += std::exp(v);
            const double lse = varlen ? L[static_cast<std::size_t>(h * total_q + q0 + s)] : L[static_cast<std::size_t>((b * H + h) * lq + s)];
            if (score.empty()) {
              EXPECT_EQ(lse, -std::numeric_limits<double>::infinity());
            } else {
              EXPECT_NEAR(lse, std::log(z), 1e-12);
            }
            for (int c = 0; c < DV; ++c) {
              double o = 0;
              for (std::size_t j = 0; j < score.size(); ++j) o += std::exp(score[j]) / z * V.at(((k0 + static_cast<int>(j)) * HKV + hk) * DV + c);
              EXPECT_NEAR(O[static_cast<std::size_t>(((q0 + s) * H + h) * DV + c)], o, 1e-12);
            }
          }
      }
      EXPECT_EQ(some_shorter, varlen);
      EXPECT_EQ(some_empty, varlen && !causal);  // sequence 1 has no keys
    }
  EXPECT_FALSE(attn().reference(instantiate(attn(), {{"batch", "1"}, {"seq_q", "2"}, {"seq_k", "2"}}, {}, limits_for_arch("sm_90a")).value().problem,
                                {}, "X", {}).ok());
}

// Sliding window and sinks, the textbook way: row s sees keys (s + diag - window, s + diag], and the head's sink logit
// joins the denominator only: O = sum_j e^(s_j) v_j / (sum_j e^(s_j) + e^(sink)), LSE = log of that denominator (the
// sink's alone for a row without keys).
TEST(Attention, WindowAndSinksReferenceMatchesADirectComputation) {
  const int H = 2, D = 64, W = 3;
  for (bool varlen : {false, true}) {
    SCOPED_TRACE(varlen ? "varlen" : "dense");
    const KV p = {{"batch", "3"}, {"seq_q", "5"}, {"seq_k", "8"}, {"heads", "2"}, {"dim", "64"}, {"causal", "true"},
                  {"window", std::to_string(W)}, {"sinks", "true"}, {"varlen", varlen ? "true" : "false"}};
    auto k = instantiate(attn_wgmma(), p, {}, limits_for_arch("sm_90a")).value();
    auto in = inputs_of(k);
    const auto &Q = in.tensor("Q"), &K = in.tensor("K"), &V = in.tensor("V"), &S = in.tensor("sinks");
    const auto &cq = in.tensor("cu_seqlens_q"), &ck = in.tensor("cu_seqlens_k");
    const int total_q = static_cast<int>(cq.at(3));
    std::vector<std::int64_t> all_o(static_cast<std::size_t>(total_q * H * D)), all_l(static_cast<std::size_t>(total_q * H));
    for (std::size_t i = 0; i < all_o.size(); ++i) all_o[i] = static_cast<std::int64_t>(i);
    for (std::size_t i = 0; i < all_l.size(); ++i) all_l[i] = static_cast<std::int64_t>(i);
    auto O = k.spec->reference(k.problem, in, "O", all_o).value();
    auto L = k.spec->reference(k.problem, in, "LSE", all_l).value();
    int banded = 0;
    for (int b = 0; b < 3; ++b) {
      const int q0 = static_cast<int>(cq.at(b)), lq = static_cast<int>(cq.at(b + 1)) - q0;
      const int k0 = static_cast<int>(ck.at(b)), lk = static_cast<int>(ck.at(b + 1)) - k0;
      for (int h = 0; h < H; ++h)
        for (int s = 0; s < lq; ++s) {
          std::vector<std::pair<int, double>> score;
          for (int j = 0; j < lk; ++j) {
            if (j > s + lk - lq || j <= s + lk - lq - W) continue;
            double dot = 0;
            for (int c = 0; c < D; ++c) dot += Q.at(((q0 + s) * H + h) * D + c) * K.at(((k0 + j) * H + h) * D + c);
            score.push_back({j, dot / 8.0});
          }
          banded += s + lk - lq + 1 > W;  // keys before the window exist
          double z = std::exp(S.at(h));
          for (const auto& [j, v] : score) z += std::exp(v);
          const double lse = varlen ? L[static_cast<std::size_t>(h * total_q + q0 + s)] : L[static_cast<std::size_t>((b * H + h) * lq + s)];
          EXPECT_NEAR(lse, std::log(z), 1e-12);
          for (int c = 0; c < D; ++c) {
            double o = 0;
            for (const auto& [j, v] : score) o += std::exp(v) / z * V.at(((k0 + j) * H + h) * D + c);
            EXPECT_NEAR(O[static_cast<std::size_t>(((q0 + s) * H + h) * D + c)], o, 1e-12);
          }
        }
    }
    EXPECT_GT(banded, 0);
  }
  // FLOPs count the pairs the window lets through: 10 rows see 1, 2, 3, then 4 keys each (34 pairs).
  const KV w = {{"batch", "1"}, {"seq_q", "10"}, {"heads", "2"}, {"dim", "64"}, {"causal", "true"}, {"window", "4"}};
  EXPECT_DOUBLE_EQ(instantiate(attn_wgmma(), w, {}, limits_for_arch("sm_90a")).value().flops, 2.0 * 2 * 34 * (64 + 64));
  // cuDNN's graph gets the window (its diagonal band's left bound) and the sink logits' buffer.
  KV ws = w;
  ws["sinks"] = "true";
  auto kw = instantiate(attn_wgmma(), ws, {}, limits_for_arch("sm_90a")).value();
  const auto base = kw.spec->baseline(kw.problem, kw.config).value();
  EXPECT_EQ(base.sdpa.window, 4);
  EXPECT_EQ(base.sdpa.sinks, "sinks");
}

// The shared-memory layouts the viewer shows are the plan's, the ones the kernel indexes with (test_attn_plans checks
// the plan against the hardware's facts).
TEST(Attention, ExposedLayoutsAreTheKernels) {
  for (const char* dim : {"64", "128"}) {
    auto k = instantiate(attn(), {{"dim", dim}}, {{"block_N", "32"}}, limits_for_arch("sm_90a")).value();
    const AttnFwdMmaPlan plan = make_plan(AttnFwdMmaConfig{.dim = std::stoi(dim), .block_N = 32});
    const auto layouts = k.spec->layouts(k.problem, k.config);
    EXPECT_EQ(layouts.size(), 9u);
    for (const auto& l : layouts) {
      SCOPED_TRACE(l.name + " = " + l.spec);
      const LayoutSpec s = parse_spec(l.spec);
      ASSERT_TRUE(s.ok) << format_spec_error(s);
      if (s.is_fragment()) continue;
      const SwizzledLayout& t = l.name == "smem_Q" ? plan.smem_Q : l.name == "smem_K" ? plan.smem_K : plan.smem_V;
      ASSERT_EQ(s.rows, t.layout().mode(0).size());
      ASSERT_EQ(s.cols, t.layout().mode(1).size());
      for (int r = 0; r < s.rows; ++r)
        for (int c = 0; c < s.cols; ++c) ASSERT_EQ(s.offset(r, c), t(r, c)) << r << "," << c;
    }
  }
}

TEST(Attention, ProbeBuildCompiles) {
  auto inst = instantiate(attn(), {{"causal", "true"}}, {}, limits_for_arch("sm_90a")).value();
  JitOptions opt;
  opt.arch = "sm_90a";
  opt.defines.push_back("TL_TIMELINE=1");
  auto k = jit().compile(compile_request(inst, opt));
  ASSERT_TRUE(k.ok()) << k.status().message();
  EXPECT_EQ(k->resources.spill_store_bytes, 0);
  EXPECT_EQ(attn().probes.size(), 6u);
}

TEST(Attention, TimelineModelSaysThereIsNone) {
  auto inst = instantiate(attn(), {}, {}, limits_for_arch("sm_90a")).value();
  auto t = model_timeline(inst, ModelDevice{});
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), ErrorCode::unsupported);
  EXPECT_NE(t.status().message().find("no timeline model for attn.fwd.mma"), std::string::npos) << t.status().message();
}

TEST(Attention, OutputsAreSampledInWholeRows) {
  const KV p = {{"batch", "2"}, {"seq_q", "4096"}, {"seq_k", "4096"}, {"heads", "16"}, {"dim", "128"}};
  auto k = instantiate(attn(), p, {}, limits_for_arch("sm_90a")).value();
  const OutputSampling s = k.spec->sampling(k.problem, "O");
  EXPECT_EQ(s.unit, 128u);
  const std::uint64_t count = 2ull * 4096 * 16 * 128;
  auto pos = sample_positions(count, s.max_samples, 0x5EED, s.unit);
  ASSERT_EQ(pos.size() % 128, 0u);
  EXPECT_LE(pos.size(), s.max_samples);
  std::set<std::uint64_t> rows;
  for (std::size_t i = 0; i < pos.size(); i += 128) {
    EXPECT_EQ(pos[i] % 128, 0u);
    for (std::size_t e = 0; e < 128; ++e) EXPECT_EQ(pos[i + e], pos[i] + e);
    rows.insert(pos[i] / 128);
  }
  EXPECT_EQ(rows.size(), pos.size() / 128);  // distinct rows
  EXPECT_TRUE(rows.count(0) && rows.count(count / 128 - 1));  // the first and last rows, as for single elements
  // Small outputs are checked whole, unit or not.
  EXPECT_EQ(sample_positions(256, 1024, 1, 128).size(), 256u);
}

// [SECTION] attn.fwd.wgmma

// The probe build's consumers have 232 registers, not 240: where S, O and P take 180 or more of them (block_N=176 at
// dim_v 128, 112 at 192), or O is 192 wide, it spills; the spec's block_N help says so. Three consumer warpgroups
// keep 160 in the probe build too, and its marks spill a few bytes there.
bool probe_build_spills(const KernelInstance& k) {
  const std::string& n = k.name_expression;
  auto field = [&](const std::string& f) { return std::stoi(n.substr(n.find("." + f + " = ") + f.size() + 4)); };
  const int bn = field("block_N"), dv = field("dim_v");
  // (Also the per-thread descriptors' probe build with the softmax's trees at d 128: 4 bytes at 232 registers.)
  const bool thread_desc_tree = n.find(".uniform_desc = false") != std::string::npos &&
                                n.find("AttnSoftmax::chain") == std::string::npos;
  return bn / 2 + dv / 2 + bn / 4 >= 180 || dv == 192 || field("block_M") == 192 || thread_desc_tree;
}

// Every block_N, both head dims and dtypes, causal, varlen, 3 stages, one consumer warpgroup without ping-pong, and
// the probe build: sm_90a only (TMA, wgmma, setmaxnreg). The probe build of block_N=176 at dim=128 spills (its
// consumers have 232 registers there, not 240): the one exception, stated in the spec's block_N help.
TEST(AttentionWgmma, ConfigsCompileForHopperWithoutSpilling) {
  const std::vector<std::pair<KV, KV>> cases = {
      {{}, {}},
      {{{"causal", "true"}, {"dtype", "f16"}}, {}},
      {{{"dim", "64"}, {"heads_kv", "2"}}, {{"block_N", "176"}}},
      {{}, {{"block_N", "176"}, {"epilogue", "direct"}, {"q_stages", "1"}}},
      {{{"dim", "64"}, {"causal", "true"}}, {{"block_N", "64"}, {"num_stages", "3"}}},
      {{}, {{"num_stages", "3"}, {"epilogue", "direct"}, {"q_stages", "1"}}},
      {{{"varlen", "true"}, {"causal", "true"}, {"batch", "7"}}, {}},
      // (With epilogue=tma this one's probe build spills 4 bytes: the consumers have 232 registers there.)
      {{{"varlen", "true"}, {"dtype", "f16"}}, {{"block_M", "64"}, {"ping_pong", "false"}, {"epilogue", "direct"}}},
      {{}, {{"ping_pong", "false"}}},
      {{{"causal", "true"}}, {{"persistent", "false"}}},
      {{{"causal", "true"}, {"varlen", "true"}}, {{"section", "0"}, {"epilogue", "direct"}}},
      {{{"varlen", "true"}}, {{"epilogue", "smem"}}},
      {{{"dim", "64"}, {"causal", "true"}}, {{"epilogue", "smem"}, {"block_M", "64"}, {"ping_pong", "false"}}},
      // (Causal with epilogue=direct and the dynamic schedule, auto there: its probe build spills 4 bytes.)
      {{{"causal", "true"}}, {{"epilogue", "direct"}, {"section", "16"}, {"schedule", "static"}}},
      {{{"causal", "true"}}, {{"q_stages", "1"}}},
      {{{"varlen", "true"}}, {{"q_stages", "2"}, {"epilogue", "direct"}, {"block_M", "64"}, {"ping_pong", "false"}}},
      {{{"dim", "64"}, {"varlen", "true"}, {"dtype", "f16"}}, {{"epilogue", "tma"}, {"block_N", "176"}}},
      {{{"dim", "64"}, {"varlen", "true"}, {"causal", "true"}}, {{"epilogue", "tma"}, {"block_M", "64"}, {"ping_pong", "false"}}},
      // d_qk != d_v (DeepSeek's MLA prefill as MHA) and head dim 192, at their auto tiles.
      {{{"dim", "192"}, {"dim_v", "128"}}, {}},
      {{{"dim", "192"}, {"dim_v", "128"}, {"causal", "true"}, {"varlen", "true"}}, {}},
      {{{"dim", "192"}, {"dim_v", "128"}, {"dtype", "f16"}}, {{"epilogue", "smem"}, {"num_stages", "2"}}},
      {{{"dim", "192"}, {"causal", "true"}}, {}},
      // Head dim 256 at its auto tile (80 keys, no ping-pong: with it O's 128 registers a thread leave too few).
      {{{"dim", "256"}}, {}},
      {{{"dim", "256"}, {"causal", "true"}, {"varlen", "true"}}, {}},
      {{{"dim", "192"}, {"varlen", "true"}}, {{"epilogue", "smem"}, {"block_M", "64"}, {"ping_pong", "false"}, {"block_N", "64"}}},
      // Sliding window and attention sinks, alone and with the rest.
      {{{"causal", "true"}, {"window", "300"}}, {}},
      {{{"sinks", "true"}}, {}},
      {{{"dim", "64"}, {"causal", "true"}, {"window", "1000"}, {"sinks", "true"}, {"varlen", "true"}}, {{"block_N", "176"}}},
      {{{"dim", "192"}, {"dim_v", "128"}, {"causal", "true"}, {"window", "4096"}, {"sinks", "true"}}, {}},
      {{{"dim", "128"}, {"dim_v", "64"}, {"causal", "true"}}, {}},
      // Head dim 64's 192-row blocks (three consumer warpgroups of 160 registers, the auto tile there), with the rest.
      // (A window with epilogue smem or direct spills 4-8 bytes outside the K/V loop: not among these.)
      {{{"dim", "64"}}, {}},
      {{{"dim", "64"}, {"causal", "true"}, {"varlen", "true"}, {"heads_kv", "4"}}, {{"epilogue", "smem"}}},
      {{{"dim", "64"}, {"causal", "true"}, {"window", "128"}, {"sinks", "true"}, {"dtype", "f16"}}, {}},
      {{{"dim", "64"}, {"varlen", "true"}, {"sinks", "true"}}, {{"epilogue", "direct"}, {"q_stages", "1"}}},
      {{{"dim", "64"}, {"causal", "true"}}, {{"block_M", "192"}, {"ping_pong", "false"}, {"block_N", "64"}, {"num_stages", "3"}}},
      // Two and three CTAs per SM (the narrow band's auto is the window 128 case above): the consumers' share.
      {{{"dim", "64"}, {"causal", "true"}, {"varlen", "true"}}, {{"block_M", "64"}, {"ping_pong", "false"}, {"min_blocks", "2"}}},
      {{{"dim", "64"}, {"window", "100"}, {"varlen", "true"}, {"dtype", "f16"}}, {}},
      {{}, {{"block_M", "64"}, {"ping_pong", "false"}, {"block_N", "64"}, {"min_blocks", "2"}, {"q_stages", "1"}}},
      // The per-thread descriptors (uniform_desc=false; true, the default, is every case above) at the timed shapes'
      // tiles: d 128, causal, d 64's 192-row blocks, GQA varlen, 192 / 128 causal and d 256.
      {{}, {{"uniform_desc", "false"}}},
      {{{"causal", "true"}, {"dtype", "f16"}}, {{"uniform_desc", "false"}}},
      {{{"dim", "64"}}, {{"uniform_desc", "false"}}},
      {{{"varlen", "true"}, {"causal", "true"}, {"heads_kv", "2"}}, {{"uniform_desc", "false"}}},
      {{{"dim", "192"}, {"dim_v", "128"}, {"causal", "true"}}, {{"uniform_desc", "false"}}},
      {{{"dim", "256"}, {"causal", "true"}}, {{"uniform_desc", "false"}}},
      // pv_fence off at d 256 (its auto is on there) and on with ping-pong at d 128 and 192 / 128.
      {{{"dim", "256"}, {"causal", "true"}}, {{"pv_fence", "false"}}},
      {{}, {{"pv_fence", "true"}}},
      {{{"dim", "192"}, {"dim_v", "128"}, {"causal", "true"}}, {{"pv_fence", "true"}}},
      // The softmax's forms off their auto (tree at d 64 and 128 not causal, lazy at d 256 causal, chain elsewhere,
      // which the cases above compile): chain and lazy at d 128, lazy at d 64's 192-row blocks, chain at d 256 causal
      // (with pv_fence, its auto), tree at d 128 causal GQA varlen, lazy and tree at 192 / 128 causal varlen, lazy
      // under the d 128 narrow band (64-row blocks, two CTAs per SM) with sinks.
      {{}, {{"softmax", "chain"}}},
      {{}, {{"softmax", "lazy"}}},
      {{{"dim", "64"}}, {{"softmax", "lazy"}}},
      {{{"dim", "256"}, {"causal", "true"}}, {{"softmax", "chain"}}},
      {{{"varlen", "true"}, {"causal", "true"}, {"heads_kv", "2"}}, {{"softmax", "tree"}}},
      {{{"dim", "192"}, {"dim_v", "128"}, {"causal", "true"}, {"varlen", "true"}}, {{"softmax", "tree"}}},
      {{{"dim", "192"}, {"dim_v", "128"}, {"causal", "true"}, {"varlen", "true"}}, {{"softmax", "lazy"}}},
      {{{"causal", "true"}, {"window", "128"}, {"sinks", "true"}, {"heads", "32"}, {"heads_kv", "8"}}, {{"softmax", "lazy"}}},
  };
  for (bool probes : {false, true})
    for (const auto& [problem, config] : cases) {
      auto inst = instantiate(attn_wgmma(), problem, config, limits_for_arch("sm_90a"));
      ASSERT_TRUE(inst.ok()) << inst.status().message();
      SCOPED_TRACE(inst->name_expression + (probes ? " +probes" : ""));
      if (probes && probe_build_spills(*inst)) continue;
      JitOptions opt;
      opt.arch = "sm_90a";
      if (probes) opt.defines.push_back("TL_TIMELINE=1");
      auto k = jit().compile(compile_request(*inst, opt));
      ASSERT_TRUE(k.ok()) << k.status().message();
      EXPECT_GT(k->resources.registers, 0);
      EXPECT_EQ(k->resources.spill_store_bytes, 0);
      EXPECT_LE(k->resources.registers * static_cast<int>(inst->launch.block.x), limits_for_arch("sm_90a").regs_per_block);
    }
  EXPECT_EQ(attn_wgmma().probes.size(), 11u);
}

TEST(AttentionWgmma, CanImplementRefusesWithReasons) {
  auto refused = [](const KV& problem, const KV& config, const std::vector<std::string>& words) {
    auto inst = instantiate(attn_wgmma(), problem, config, limits_for_arch("sm_90a"));
    ASSERT_FALSE(inst.ok());
    for (const auto& w : words) EXPECT_NE(inst.status().message().find(w), std::string::npos) << inst.status().message();
  };
  refused({{"heads", "16"}, {"heads_kv", "3"}}, {}, {"heads_kv=3", "divisor"});
  refused({}, {{"block_M", "64"}, {"ping_pong", "true"}}, {"ping_pong", "block_M=64"});
  // Three consumer warpgroups have 160 registers each: S, P and O fit at head dim 64 and block_N <= 128 only.
  refused({}, {{"block_M", "192"}}, {"block_M=192", "dim=128", "block_M=128"});
  refused({{"dim", "64"}}, {{"block_M", "192"}, {"block_N", "176"}}, {"block_M=192", "block_N=176", "block_N=128"});
  refused({{"dim", "128"}, {"dim_v", "64"}}, {{"block_M", "192"}}, {"block_M=192", "dim=128", "dim_v=64"});
  // (128 + 2*3*176) * 128 * 2 + 8 * 14 + 1024 = 304240 bytes (static: block_N 176 keeps it)
  refused({}, {{"block_N", "176"}, {"num_stages", "3"}, {"epilogue", "direct"}, {"q_stages", "1"}}, {"304240", "shared memory"});
  // Staged O and two Q buffers: block_N=176 at dim 128 fits 2 stages only with neither, which auto picks.
  refused({}, {{"block_N", "176"}, {"q_stages", "2"}, {"epilogue", "tma"}}, {"279648", "O staging", "epilogue=direct", "q_stages=1"});
  refused({}, {{"block_N", "176"}, {"q_stages", "1"}, {"epilogue", "tma"}}, {"246864", "O staging", "epilogue=direct"});
  auto auto176 = instantiate(attn_wgmma(), {}, {{"block_N", "176"}}, limits_for_arch("sm_90a"));
  ASSERT_TRUE(auto176.ok()) << auto176.status().message();
  EXPECT_NE(auto176->name_expression.find(".q_stages = 1"), std::string::npos) << auto176->name_expression;
  EXPECT_NE(auto176->name_expression.find("AttnEpilogue::direct"), std::string::npos) << auto176->name_expression;
  refused({{"causal", "true"}}, {{"block_N", "176"}}, {"block_N=176", "spills", "block_N=128"});
  // (128 + 2*3*128 + 128) * 128 * 2 + 8 * 14 + 1024 + 40 (the dynamic schedule's tile ring, auto here) = 263320
  // bytes with the O staging tile
  refused({}, {{"num_stages", "3"}, {"epilogue", "smem"}, {"q_stages", "1"}}, {"263320", "O staging", "epilogue=direct"});
  refused({}, {{"num_stages", "3"}, {"q_stages", "1"}, {"epilogue", "tma"}}, {"263320", "O staging", "epilogue=direct"});
  // (2*128 + 2*2*128 + 128) * 128 * 2 + 8 * (4 + 8) + 1024 + 40 = 230536 fits; a third K/V stage does not.
  refused({}, {{"q_stages", "2"}, {"num_stages", "3"}, {"epilogue", "direct"}}, {"263336", "q_stages=2", "q_stages=1"});
  // CTAs per SM share its registers and shared memory: two 384-thread CTAs leave a consumer 104 registers; two of
  // 2 * (2*64*128 + 2*2*64*128 + 64*128) + 8 * 12 + 1024 + 40 = 115848 bytes are over half of 227 KiB + 1 KiB, less
  // 1 KiB.
  refused({}, {{"min_blocks", "2"}}, {"min_blocks=2", "104 registers", "spill"});
  refused({}, {{"block_M", "64"}, {"ping_pong", "false"}, {"block_N", "64"}, {"min_blocks", "2"}, {"q_stages", "2"},
               {"epilogue", "tma"}},
          {"min_blocks=2", "115848", "shared memory"});
  // The mma kernel runs on Ampere; this one is Hopper-only.
  EXPECT_FALSE(instantiate(attn_wgmma(), {}, {}, limits_for_arch("sm_80")).ok());
}

// Q, K and V reach the kernel only through tensor maps whose boxes are 64 columns (the 128-byte swizzle) x one head x
// block rows, of rank 4 over dense [batch, seq, heads, dim] and 3 over packed varlen [total, heads, dim]; the rest
// of the signature is the mma kernel's.
TEST(AttentionWgmma, TensorMapsAndGeometry) {
  for (bool varlen : {false, true}) {
    SCOPED_TRACE(varlen ? "varlen" : "dense");
    const KV p = {{"batch", "3"}, {"seq_q", "1000"}, {"seq_k", "1500"}, {"heads", "8"}, {"heads_kv", "2"},
                  {"dim", "128"}, {"varlen", varlen ? "true" : "false"}};
    auto k = instantiate(attn_wgmma(), p, {{"block_N", "176"}, {"persistent", "false"}, {"epilogue", "direct"}, {"q_stages", "1"}},
                         limits_for_arch("sm_90a")).value();
    EXPECT_EQ(k.launch.grid.x, 8u * 8 * 3);  // ceil(1000 / 128) query blocks x heads x batch
    EXPECT_EQ(k.launch.grid.y, 1u);
    EXPECT_EQ(k.launch.block.x, 384u);
    EXPECT_EQ(k.launch.dynamic_smem, (128u + 2 * 2 * 176) * 128 * 2 + 8 * 10 + 1024);
    EXPECT_EQ(instantiate(attn_wgmma(), p, {}, limits_for_arch("sm_90a")).value().launch.grid.x, 132u);  // persistent
    std::vector<std::string> params;
    for (const auto& a : k.args)
      if (a.kind != ArgSpec::Kind::tensor || a.is_param) params.push_back(a.name);
    EXPECT_EQ(params, (std::vector<std::string>{"tma_Q", "tma_K", "tma_V", "tma_O", "O", "LSE", "cu_seqlens_q",
                                                "cu_seqlens_k", "heads", "heads_kv", "m_blocks", "batch", "section",
                                                "sinks", "window", "tile_counter"}));
    EXPECT_EQ(arg(k, "batch").value, 3);
    EXPECT_EQ(arg(k, "m_blocks").value, 8);
    EXPECT_EQ(arg(k, "section").value, 64);  // section -1 (auto): 512 work tiles / 8 query blocks
    EXPECT_EQ(arg(k, "window").value, 0);
    EXPECT_EQ(arg(k, "sinks").kind, ArgSpec::Kind::scalar);  // a null pointer without sinks
    KV ps = p;
    ps["sinks"] = "true";
    const ArgSpec sinks = arg(instantiate(attn_wgmma(), ps, {}, limits_for_arch("sm_90a")).value(), "sinks");
    EXPECT_EQ(sinks.kind, ArgSpec::Kind::tensor);
    EXPECT_EQ(sinks.shape, (std::vector<std::int64_t>{8}));
    EXPECT_EQ(sinks.dtype, DType::f32);
    // schedule=dynamic's work counter is the launch's own (a zeroed scratch int), a null pointer for static ones.
    EXPECT_EQ(arg(k, "tile_counter").kind, ArgSpec::Kind::scalar);
    KV pc = p;
    pc["causal"] = "true";
    const ArgSpec counter = arg(instantiate(attn_wgmma(), pc, {}, limits_for_arch("sm_90a")).value(), "tile_counter");
    EXPECT_EQ(counter.kind, ArgSpec::Kind::tensor);
    EXPECT_EQ(counter.role, ArgRole::scratch);
    EXPECT_EQ(counter.shape, (std::vector<std::int64_t>{1}));
    for (const auto& a : k.args) {
      if (a.kind != ArgSpec::Kind::tensor_map) continue;
      // O's map stores one consumer warpgroup's 64 rows.
      const std::int64_t rows = a.name == "tma_Q" ? 128 : a.name == "tma_O" ? 64 : 176;
      EXPECT_EQ(a.box, varlen ? (std::vector<std::int64_t>{64, 1, rows}) : (std::vector<std::int64_t>{64, 1, rows, 1}));
      EXPECT_EQ(a.swizzle_bytes, 128);
    }
    // Same FLOPs, bytes and reference as attn.fwd.mma.
    auto m = instantiate(attn(), p, {}, limits_for_arch("sm_90a")).value();
    EXPECT_DOUBLE_EQ(k.flops, m.flops);
    EXPECT_DOUBLE_EQ(k.min_bytes, m.min_bytes);
  }
  // attn.fwd.mma's matrix is this one less what its schema does not take.
  auto shared = attn_wgmma().test_problems(true);
  std::erase_if(shared, [](const KV& kv) {
    return kv.count("dim_v") || kv.count("window") || kv.count("sinks") || kv.at("dim") == "192" || kv.at("dim") == "256";
  });
  EXPECT_EQ(shared, attn().test_problems(true));
}

// Head dim 64's auto tile is 192 query rows (FlashAttention-3's there): three consumer warpgroups and the producer,
// 512 threads; Q's tensor map box is 192 rows, O's still one warpgroup's 64; query blocks of 192. Where 192 cannot run
// (block_N 176, other head dims) auto is 128 (under a narrow window 64: the next test), and an explicit block_M is kept.
TEST(AttentionWgmma, HeadDim64AutoTileIs192Rows) {
  const KV p = {{"batch", "2"}, {"seq_q", "1000"}, {"seq_k", "1000"}, {"heads", "8"}, {"dim", "64"}};
  auto k = instantiate(attn_wgmma(), p, {{"persistent", "false"}}, limits_for_arch("sm_90a")).value();
  EXPECT_NE(k.name_expression.find(".block_M = 192, .block_N = 128"), std::string::npos) << k.name_expression;
  EXPECT_EQ(k.launch.block.x, 512u);
  EXPECT_EQ(k.launch.grid.x, 6u * 8 * 2);  // ceil(1000 / 192) query blocks x heads x batch
  EXPECT_EQ(arg(k, "m_blocks").value, 6);
  // Q 192x64 twice, 2 K and 2 V 128x64, 3 O 64x64, 2 bytes each; 12 barriers; the alignment slack.
  EXPECT_EQ(k.launch.dynamic_smem, 2u * (2 * 192 * 64 + 4 * 128 * 64 + 3 * 64 * 64) + 8 * 12 + 1024);
  EXPECT_EQ(arg(k, "tma_Q").box, (std::vector<std::int64_t>{64, 1, 192, 1}));
  EXPECT_EQ(arg(k, "tma_O").box, (std::vector<std::int64_t>{64, 1, 64, 1}));
  auto rows = [&](const KV& problem, const KV& config) {
    const std::string n = instantiate(attn_wgmma(), problem, config, limits_for_arch("sm_90a")).value().name_expression;
    return std::stoi(n.substr(n.find(".block_M = ") + 11));
  };
  EXPECT_EQ(rows(p, {{"block_N", "176"}}), 128);
  EXPECT_EQ(rows(p, {{"block_M", "128"}}), 128);
  EXPECT_EQ(rows(p, {{"ping_pong", "false"}}), 192);  // three warpgroups without turns
  KV banded = p;
  banded["causal"] = "true", banded["window"] = "2048";
  EXPECT_EQ(rows(banded, {}), 192);
  EXPECT_EQ(rows({{"dim", "128"}}, {}), 128);
  EXPECT_EQ(rows({{"dim", "128"}, {"dim_v", "64"}}, {}), 128);
  EXPECT_EQ(instantiate(attn_wgmma(), {{"dim", "128"}}, {}, limits_for_arch("sm_90a")).value().launch.block.x, 384u);
}

// Head dim 64 under a window of at most 1024 keys: 64 x 64 blocks of one consumer warpgroup (256 threads, no turns)
// and three CTAs per SM, whose registers (80 a thread at launch, 136 a consumer after setmaxnreg) and shared memory
// (three of 57 KiB) fit; the persistent grid is three per SM. Where three do not fit, two (head dim 128, up to 128
// keys); explicit values are kept, and wider windows or no window keep one CTA per SM.
TEST(AttentionWgmma, NarrowBandRunsThreeCtasPerSm) {
  const KV p = {{"batch", "2"}, {"seq_q", "4096"}, {"seq_k", "4096"}, {"heads", "8"}, {"dim", "64"},
                {"causal", "true"}, {"window", "128"}};
  const DeviceLimits h = limits_for_arch("sm_90a");
  auto k = instantiate(attn_wgmma(), p, {}, h).value();
  for (const char* f : {".block_M = 64, .block_N = 64,", ".ping_pong = false", ".min_blocks = 3"})
    EXPECT_NE(k.name_expression.find(f), std::string::npos) << f << " in " << k.name_expression;
  EXPECT_EQ(k.launch.block.x, 256u);
  EXPECT_EQ(k.launch.grid.x, 3u * 132);  // of 64 query blocks x 8 heads x 2 sequences
  EXPECT_LE(3 * (static_cast<int>(k.launch.dynamic_smem) + 1024), h.smem_per_block_optin + 1024);
  auto blocks = [&](const KV& problem, const KV& config) {
    const std::string n = instantiate(attn_wgmma(), problem, config, h).value().name_expression;
    return std::stoi(n.substr(n.find(".min_blocks = ") + 14));
  };
  EXPECT_EQ(blocks(p, {{"block_N", "128"}}), 2);  // S, P and O of 128 keys need more than 136 registers
  EXPECT_EQ(blocks(p, {{"block_M", "128"}}), 1);

  EXPECT_EQ(blocks(p, {{"min_blocks", "1"}}), 1);
  KV wide = p, d128 = p;
  wide["window"] = "1024";
  EXPECT_EQ(blocks(wide, {}), 3);
  wide["window"] = "1025";
  EXPECT_EQ(blocks(wide, {}), 1);
  d128["dim"] = "128";  // two CTAs of one Q buffer fit (three neither in registers nor in shared memory)
  EXPECT_EQ(blocks(d128, {}), 2);
  EXPECT_NE(instantiate(attn_wgmma(), d128, {}, h).value().name_expression.find(".q_stages = 1"), std::string::npos);
  // A given block_N that fits no second CTA (d 128, 128 keys: two 64-row CTAs' tiles exceed the SM's shared memory)
  // gets the wide band's 128-row tile.
  EXPECT_EQ(blocks(d128, {{"block_N", "128"}}), 1);
  EXPECT_NE(instantiate(attn_wgmma(), d128, {{"block_N", "128"}}, h).value().name_expression.find(".block_M = 128,"),
            std::string::npos);
  d128["window"] = "129";
  EXPECT_EQ(blocks(d128, {}), 1);
  EXPECT_EQ(blocks({{"dim", "64"}}, {}), 1);
}

// d_qk 192 / d_v 128 at the auto config: 112-key tiles, one Q buffer beside two K/V stages and the TMA-stored O
// staging tile (FlashAttention-3's Hopper shape for it); V and O have 128 columns, the FLOPs count (192 + 128).
TEST(AttentionWgmma, MlaPrefillShapeGeometry) {
  const KV p = {{"batch", "2"}, {"seq_q", "1000"}, {"seq_k", "1000"}, {"heads", "8"}, {"dim", "192"}, {"dim_v", "128"}};
  auto k = instantiate(attn_wgmma(), p, {}, limits_for_arch("sm_90a")).value();
  EXPECT_NE(k.name_expression.find(".block_N = 112"), std::string::npos) << k.name_expression;
  EXPECT_NE(k.name_expression.find(".q_stages = 1"), std::string::npos) << k.name_expression;
  EXPECT_NE(k.name_expression.find("AttnEpilogue::tma"), std::string::npos) << k.name_expression;
  // Q 128x192 + 2 K 112x192 + 2 V 112x128 + 2 O 64x128, 2 bytes each; 10 barriers; the alignment slack.
  EXPECT_EQ(k.launch.dynamic_smem, 2u * (128 * 192 + 2 * 112 * 192 + 2 * 112 * 128 + 2 * 64 * 128) + 8 * 10 + 1024);
  EXPECT_DOUBLE_EQ(k.flops, 2.0 * 8 * 2 * 1000 * 1000 * (192 + 128));
  EXPECT_DOUBLE_EQ(k.min_bytes, 2.0 * (192 + 128) * (2 * 1000 * 8) * 2 + 4.0 * 8 * 2000 + 8.0 * 3);
  std::map<std::string, std::vector<std::int64_t>> shape, box;
  for (const auto& a : k.args) shape[a.name] = a.shape, box[a.name] = a.box;
  EXPECT_EQ(shape["Q"], (std::vector<std::int64_t>{2, 1000, 8, 192}));
  EXPECT_EQ(shape["K"], (std::vector<std::int64_t>{2, 1000, 8, 192}));
  EXPECT_EQ(shape["V"], (std::vector<std::int64_t>{2, 1000, 8, 128}));
  EXPECT_EQ(shape["O"], (std::vector<std::int64_t>{2, 1000, 8, 128}));
  EXPECT_EQ(box["tma_K"], (std::vector<std::int64_t>{64, 1, 112, 1}));
  EXPECT_EQ(box["tma_V"], (std::vector<std::int64_t>{64, 1, 112, 1}));
  const auto base = k.spec->baseline(k.problem, k.config).value();
  EXPECT_EQ(base.sdpa.dim, 192);
  EXPECT_EQ(base.sdpa.dim_v, 128);
  EXPECT_DOUBLE_EQ(base.sdpa.scale, 1.0 / std::sqrt(192.0));
}

// Both work orders visit every (query block, pair) once; heaviest-first sections even out the causal work of 132
// statically striding CTAs: at 32k tokens, 16 heads, 128-row query blocks and 128-key tiles, the busiest CTA's
// K/V tiles (+1 per work tile for its prologue/epilogue) over the mean drop from 1.19 (s=2048) / 1.12 (s=4096)
// with query blocks fastest to about 1.03 (a model: on the H100 the sections' speed differs far more than it
// predicts, which is why the default is the measured rule below).
TEST(AttentionWgmma, WorkOrdersAreBijectiveAndSectionsBalanceCausalWork) {
  for (int m_blocks : {1, 5, 16})
    for (int pairs : {1, 7, 64})
      for (int section : {1, 3, 8, 100}) {
        std::set<std::pair<int, int>> seen, seen_m;
        for (int t = 0; t < m_blocks * pairs; ++t) {
          const WorkCoord a = work_sections(t, m_blocks, pairs, section), b = work_m_fastest(t, m_blocks);
          ASSERT_TRUE(a.m >= 0 && a.m < m_blocks && a.pair >= 0 && a.pair < pairs) << t;
          seen.insert({a.m, a.pair});
          seen_m.insert({b.m, b.pair});
        }
        EXPECT_EQ(seen.size(), static_cast<std::size_t>(m_blocks * pairs));
        EXPECT_EQ(seen_m.size(), static_cast<std::size_t>(m_blocks * pairs));
      }
  auto imbalance = [](int seq, int section) {
    const int m_blocks = seq / 128;
    // Block m_blocks - 1 - m sees that many tiles.
    return work_imbalance(m_blocks, 16 * (32768 / seq), section, 132, [&](int m) { return (m_blocks - m) + 1.0; });
  };
  EXPECT_NEAR(imbalance(2048, 0), 1.194, 0.002);
  EXPECT_NEAR(imbalance(4096, 0), 1.120, 0.002);
  for (int seq : {2048, 4096, 8192, 16384}) EXPECT_LT(imbalance(seq, 8), 1.04) << seq;
}

// Work-order switches set where the work order does not use them were dropped without a word: section > 0 without
// the mask (causal or a window), schedule=dynamic and q_stages=2 with one CTA a work tile (persistent=false).
TEST(AttentionWgmma, WorkOrderSwitchesThatCannotApplyAreRefused) {
  const auto why = [](const KV& p, const KV& c) {
    auto k = instantiate(attn_wgmma(), p, c, limits_for_arch("sm_90a"));
    return k.ok() ? std::string() : k.status().message();
  };
  const std::string sec = why({}, {{"section", "16"}});
  EXPECT_NE(sec.find("section=16 orders causal work tiles"), std::string::npos) << sec;
  EXPECT_NE(sec.find("not causal (causal=false, no window)"), std::string::npos) << sec;
  EXPECT_NE(sec.find("or set causal=true"), std::string::npos) << sec;
  const std::string dyn = why({}, {{"schedule", "dynamic"}, {"persistent", "false"}});
  EXPECT_NE(dyn.find("schedule=dynamic hands persistent CTAs"), std::string::npos) << dyn;
  EXPECT_NE(dyn.find("set persistent=true"), std::string::npos) << dyn;
  const std::string qs = why({{"causal", "true"}}, {{"q_stages", "2"}, {"persistent", "false"}});
  EXPECT_NE(qs.find("q_stages=2 loads the next work tile's Q"), std::string::npos) << qs;
  EXPECT_NE(qs.find("persistent=false"), std::string::npos) << qs;
  // Where they apply, and their auto and off values: valid.
  for (const auto& [p, c] : std::vector<std::pair<KV, KV>>{
           {{{"causal", "true"}}, {{"section", "16"}}},
           {{{"window", "512"}, {"seq_q", "4096"}, {"seq_k", "4096"}}, {{"section", "4"}}},
           {{}, {{"section", "0"}}},
           {{}, {{"section", "-1"}, {"persistent", "false"}, {"schedule", "static"}, {"q_stages", "1"}}},
           {{}, {{"schedule", "dynamic"}}},
           {{}, {{"persistent", "false"}}},
           {{}, {{"q_stages", "2"}}}})
    EXPECT_EQ(why(p, c), "") << c.size();
}

// section=-1 (the default) passes G = 512 / query blocks, at least 1: the best measured G per issue-6 shape.
TEST(AttentionWgmma, AutoSectionGroupsAbout512WorkTiles) {
  const std::vector<std::pair<int, int>> seq_g = {{2048, 32}, {4096, 16}, {8192, 8}, {16384, 4}, {131072, 1}, {100, 512}};
  for (const auto& [seq, g] : seq_g) {
    const KV p = {{"batch", std::to_string(std::max(1, 32768 / seq))}, {"seq_q", std::to_string(seq)},
                  {"seq_k", std::to_string(seq)}, {"causal", "true"}};
    auto k = instantiate(attn_wgmma(), p, {}, limits_for_arch("sm_90a")).value();
    EXPECT_EQ(arg(k, "section").value, g) << seq;
    EXPECT_EQ(arg(instantiate(attn_wgmma(), p, {{"section", "0"}}, limits_for_arch("sm_90a")).value(), "section").value, 0);
  }
}

// schedule=auto is dynamic where persistent and causal (FlashAttention-3's causal scheduler) or not causal at
// dim = dim_v = 128 or 256 with block_N <= 128 (measured faster there), else static (d 64, d_qk != d_v: measured
// slower).
TEST(AttentionWgmma, AutoScheduleIsDynamicWhereCausal) {
  const KV causal = {{"causal", "true"}}, window = {{"window", "100"}}, dense = {{"causal", "false"}};
  const KV dense64 = {{"dim", "64"}}, dense256 = {{"dim", "256"}}, mla = {{"dim", "192"}, {"dim_v", "128"}};
  auto dynamic = [](const KV& p, const KV& c) {
    return instantiate(attn_wgmma(), p, c, limits_for_arch("sm_90a")).value().name_expression.find(".dynamic = true") !=
           std::string::npos;
  };
  EXPECT_TRUE(dynamic(causal, {}));
  EXPECT_TRUE(dynamic(window, {}));
  EXPECT_TRUE(dynamic(dense, {}));
  EXPECT_TRUE(dynamic(dense256, {}));
  EXPECT_FALSE(dynamic(dense64, {}));
  EXPECT_FALSE(dynamic(mla, {}));
  EXPECT_FALSE(dynamic(dense, {{"block_N", "176"}}));  // its build spills 4 bytes with the dynamic schedule
  EXPECT_FALSE(dynamic(dense, {{"schedule", "static"}}));
  EXPECT_FALSE(dynamic(causal, {{"persistent", "false"}}));
  EXPECT_FALSE(dynamic(causal, {{"schedule", "static"}}));
  EXPECT_TRUE(dynamic(dense64, {{"schedule", "dynamic"}}));
}

// uniform_desc auto: on at every head dim (192 / 128 too). pv_fence auto: on where ping_pong is off with two consumer
// warpgroups (head dim 256's auto tile), off with ping-pong (d 128, 64, 192) and under a narrow band (one warpgroup).
TEST(AttentionWgmma, AutoUniformDescAndPvFence) {
  auto has = [](const KV& p, const KV& c, const std::string& field) {
    return instantiate(attn_wgmma(), p, c, limits_for_arch("sm_90a")).value().name_expression.find(field) !=
           std::string::npos;
  };
  const KV d128 = {}, d64 = {{"dim", "64"}}, mla = {{"dim", "192"}, {"dim_v", "128"}, {"causal", "true"}};
  const KV d256 = {{"dim", "256"}, {"causal", "true"}}, narrow = {{"causal", "true"}, {"window", "128"}};
  for (const KV& p : {d128, d64, mla, d256, narrow}) EXPECT_TRUE(has(p, {}, ".uniform_desc = true"));
  EXPECT_TRUE(has(mla, {{"uniform_desc", "false"}}, ".uniform_desc = false"));
  EXPECT_TRUE(has(d256, {}, ".pv_fence = true"));
  for (const KV& p : {d128, d64, mla, narrow}) EXPECT_TRUE(has(p, {}, ".pv_fence = false"));
  EXPECT_TRUE(has(d256, {{"pv_fence", "false"}}, ".pv_fence = false"));
  EXPECT_TRUE(has(d128, {{"pv_fence", "true"}}, ".pv_fence = true"));
  EXPECT_TRUE(has(d128, {{"ping_pong", "false"}}, ".pv_fence = true"));
}

// softmax auto: tree where not causal with ping-pong at head dims to 128 (d 128, d 64's 192-row blocks), lazy where
// causal with ping_pong off and two consumer warpgroups (head dim 256's auto tile), chain elsewhere: d 128 causal (tree
// not faster there), 192 / 128, d 256 not causal and the narrow bands (not measured).
TEST(AttentionWgmma, AutoSoftmax) {
  auto has = [](const KV& p, const KV& c, const std::string& field) {
    return instantiate(attn_wgmma(), p, c, limits_for_arch("sm_90a")).value().name_expression.find(field) !=
           std::string::npos;
  };
  const KV d128 = {}, d64 = {{"dim", "64"}}, mla = {{"dim", "192"}, {"dim_v", "128"}, {"causal", "true"}};
  const KV d256 = {{"dim", "256"}, {"causal", "true"}}, narrow = {{"causal", "true"}, {"window", "128"}};
  const KV gqa = {{"heads", "32"}, {"heads_kv", "8"}, {"causal", "true"}}, d256_dense = {{"dim", "256"}};
  const KV d64_causal = {{"dim", "64"}, {"causal", "true"}};
  for (const KV& p : {d128, d64}) EXPECT_TRUE(has(p, {}, ".softmax = tl::AttnSoftmax::tree"));
  EXPECT_TRUE(has(d256, {}, ".softmax = tl::AttnSoftmax::lazy"));
  for (const KV& p : {gqa, mla, narrow, d256_dense, d64_causal}) EXPECT_TRUE(has(p, {}, ".softmax = tl::AttnSoftmax::chain"));
  EXPECT_TRUE(has(d128, {{"softmax", "chain"}}, ".softmax = tl::AttnSoftmax::chain"));
  EXPECT_TRUE(has(d256, {{"softmax", "tree"}}, ".softmax = tl::AttnSoftmax::tree"));
  EXPECT_TRUE(has(mla, {{"softmax", "lazy"}}, ".softmax = tl::AttnSoftmax::lazy"));
  EXPECT_TRUE(has(gqa, {{"ping_pong", "false"}}, ".softmax = tl::AttnSoftmax::lazy"));
}

// Causal auto sections. Dynamic: no more (sequence, head) pairs than whose K and V fill 32 MB, so head dim 256 at
// 4k (4 MB a head) gets G 8 for the 512-tile rule's 16, and MLA's 192/128 (2.5 MB) 12. Static: where the static model
// puts the busiest CTA more than 5% further above the mean at the 512-tile G than at a smaller one, the smaller:
// head dim 256's 80-key tiles at b 4, h 16, 4k (2,048 work tiles on 132 CTAs) get G 6 (model 1.04) for 16 (1.15).
TEST(AttentionWgmma, AutoSectionFitsL2OrTheStaticModel) {
  const KV d256 = {{"batch", "4"}, {"seq_q", "4096"}, {"seq_k", "4096"}, {"heads", "16"}, {"dim", "256"}, {"causal", "true"}};
  auto section = [](const KV& p, const KV& c) {
    return arg(instantiate(attn_wgmma(), p, c, limits_for_arch("sm_90a")).value(), "section").value;
  };
  EXPECT_EQ(section(d256, {}), 8);
  EXPECT_EQ(section(d256, {{"schedule", "static"}}), 6);
  EXPECT_EQ(section(d256, {{"section", "16"}}), 16);
  EXPECT_EQ(section(d256, {{"persistent", "false"}}), 16);
  const KV mla = {{"batch", "4"}, {"seq_q", "4096"}, {"seq_k", "4096"}, {"heads", "128"}, {"dim", "192"}, {"dim_v", "128"}, {"causal", "true"}};
  EXPECT_EQ(section(mla, {}), 12);
  EXPECT_EQ(section(mla, {{"schedule", "static"}}), 16);
  KV gqa = {{"batch", "8"}, {"seq_q", "4096"}, {"seq_k", "4096"}, {"heads", "32"}, {"heads_kv", "8"}, {"causal", "true"}};
  EXPECT_EQ(section(gqa, {}), 16);  // four heads share each 2 MB kv head: the 512-tile rule binds
  const int m_blocks = 32;
  auto cost = [&](int m) { return std::ceil((m_blocks - m) * 128 / 80.0) + 2.0; };
  EXPECT_NEAR(work_imbalance(m_blocks, 64, 16, 132, cost), 1.145, 0.002);
  EXPECT_NEAR(work_imbalance(m_blocks, 64, 6, 132, cost), 1.042, 0.002);
}

// The viewer's layouts parse: the 128B-swizzled smem tiles (the O staging tile only when O is staged) and the wgmma
// fragments.
TEST(AttentionWgmma, ExposedLayoutsParse) {
  for (const char* epi : {"direct", "tma"}) {
    auto k = instantiate(attn_wgmma(), {{"dim", "64"}}, {{"block_N", "176"}, {"epilogue", epi}}, limits_for_arch("sm_90a")).value();
    const auto layouts = k.spec->layouts(k.problem, k.config);
    EXPECT_EQ(layouts.size(), std::string(epi) == "tma" ? 7u : 6u);
    for (const auto& l : layouts) {
      SCOPED_TRACE(l.name + " = " + l.spec);
      const LayoutSpec s = parse_spec(l.spec);
      EXPECT_TRUE(s.ok) << format_spec_error(s);
    }
  }
}

}  // namespace
}  // namespace tl
