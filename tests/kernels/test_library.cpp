// The kernel library: every kernel compiles (default + sampled configs), refuses invalid configs with reasons,
// validates its schemas, and has a reference with the properties of its operation.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <random>
#include <set>

#include "library/library.hpp"
#include "runtime/core/numeric.hpp"
#include "runtime/jit/cache.hpp"
#include "runtime/measure/bench.hpp"
#include "tests/support/scratch_jit.hpp"
#include "tile/work_order.hpp"

namespace tl {
namespace {
namespace fs = std::filesystem;

const KernelSpec& spec(const std::string& name) { return *library_registry().find(name).value(); }

Jit& jit() { return test::scratch_jit(); }

void expect_compiles(const KernelSpec& s, const std::map<std::string, std::string>& problem,
                     const std::map<std::string, std::string>& config, const std::string& arch) {
  SCOPED_TRACE(s.name + " " + arch);
  auto inst = instantiate(s, problem, config, limits_for_arch(arch));
  ASSERT_TRUE(inst.ok()) << inst.status().message();
  JitOptions opt;
  opt.arch = arch;
  auto k = jit().compile(compile_request(*inst, opt));
  ASSERT_TRUE(k.ok()) << k.status().message();
  EXPECT_FALSE(k->lowered_name.empty());
  EXPECT_NE(std::string(k->cubin.begin(), k->cubin.end()).find(k->lowered_name), std::string::npos);
  EXPECT_GT(k->resources.registers, 0);
  EXPECT_GE(k->resources.shared_static_bytes, 0);
  EXPECT_LE(k->resources.registers * static_cast<int>(inst->launch.block.x), limits_for_arch(arch).regs_per_block);
  EXPECT_LE(static_cast<std::size_t>(k->resources.shared_static_bytes) + inst->launch.dynamic_smem,
            static_cast<std::size_t>(limits_for_arch(arch).smem_per_block_optin));
  // The entry's PTX parameters are the launch's, one for one (what lets the worker skip probing past the last).
  auto sizes = ptx_entry_param_sizes(k->ptx, k->lowered_name);
  ASSERT_TRUE(sizes.ok()) << sizes.status().message();
  auto launch = to_launch_spec(*inst, *k);
  ASSERT_TRUE(launch.ok()) << launch.status().message();
  ASSERT_EQ(sizes->size(), launch->args.size());
  for (std::size_t i = 0; i < sizes->size(); ++i) EXPECT_EQ((*sizes)[i], param_bytes(launch->args[i])) << i;
}

TEST(Library, EveryKernelCompilesAtItsDefaultsWithoutSpilling) {
  for (const KernelSpec* s : library_registry().list(true)) {
    for (const auto& arch : s->archs) {
      expect_compiles(*s, {}, {}, arch);
      auto inst = instantiate(*s, {}, {}, limits_for_arch(arch)).value();
      JitOptions opt;
      opt.arch = arch;
      auto k = jit().compile(compile_request(inst, opt)).value();
      EXPECT_TRUE(k.from_cache);  // the same config again comes from the cache
      EXPECT_EQ(k.resources.spill_store_bytes, 0) << s->name << " " << arch;
    }
  }
}

// The memory and fault kernels' typed configs: every problem and config value the kernel is specialised on reaches
// its name expression (so the cache key), and the name lists the config struct's fields by name.
TEST(Library, TypedConfigsOfTheMemoryAndTestKernelsNameEveryField) {
  using KV = std::map<std::string, std::string>;
  const std::vector<std::tuple<std::string, std::vector<KV>, std::vector<KV>>> variants = {
      {"copy", {{{"dtype", "f16"}}}, {{{"vec", "2"}}, {{"threads", "128"}}}},
      {"elementwise", {{{"dtype", "bf16"}}}, {{{"vec", "2"}}, {{"threads", "128"}}}},
      {"rmsnorm", {{{"dtype", "f16"}}}, {{{"vec", "2"}}, {{"threads", "128"}}, {{"rows_per_block", "2"}}}},
      {"softmax", {{{"dtype", "f16"}}, {{"cols", "1000000"}}}, {{{"vec", "2"}}, {{"threads", "128"}}, {{"rows_per_block", "2"}}}},
      {"test.oob", {}, {{{"threads", "64"}}}},
      {"test.spin", {}, {{{"threads", "64"}}}}};
  for (const auto& [name, problems, configs] : variants) {
    SCOPED_TRACE(name);
    auto expr = [&](const KV& p, const KV& c) {
      auto inst = instantiate(spec(name), p, c, limits_for_arch("sm_90a"));
      EXPECT_TRUE(inst.ok()) << inst.status().message();
      return inst.ok() ? inst->name_expression : std::string();
    };
    const std::string base = expr({}, {});
    EXPECT_NE(base.find("Config{."), std::string::npos) << base;
    std::set<std::string> all = {base};
    for (const KV& p : problems) all.insert(expr(p, {}));
    for (const KV& c : configs) all.insert(expr({}, c));
    EXPECT_EQ(all.size(), 1 + problems.size() + configs.size());
  }
  auto copy = instantiate(spec("copy"), {{"dtype", "bf16"}}, {{"vec", "8"}, {"threads", "64"}}, limits_for_arch("sm_90a"));
  ASSERT_TRUE(copy.ok()) << copy.status().message();
  EXPECT_EQ(copy->name_expression, "tl::copy<tl::FlatConfig{.dtype = tl::ElemType::bf16, .vec = 8, .threads = 64}>");
  EXPECT_EQ(spec("copy").layouts(copy->problem, copy->config).at(0).spec, "(8,64):(1,8)");  // thread t's 8 elements at 8t
}

// A few valid configs per kernel, drawn from each schema with a fixed seed (invalid draws are skipped, as
// can_implement decides), with each dtype the kernel takes. (Up to 200 draws: attn.fwd.wgmma's schema, where most
// joint draws do not fit shared memory or registers, found 1 valid config in 40 once pv_fence joined it.)
TEST(Library, SampledValidConfigsCompile) {
  std::mt19937 rng(20240611);
  for (const KernelSpec* s : library_registry().list(false)) {
    int compiled = 0;
    // Pass 1 draws every parameter; pass 2 (where pass 1 found too few) an eighth of them, the rest at their
    // defaults: gemm.dequant refuses the options of the path a problem does not take, so a full draw, which sets
    // options of both its paths, is almost never valid.
    for (int pass = 0, attempt = 0; pass < 2 && compiled < 3; ++pass, attempt = 0)
    for (; attempt < 200 && compiled < 3; ++attempt) {
      std::map<std::string, std::string> config;
      for (const auto& p : s->config.params) {
        if (pass == 1 && rng() % 8 != 0) continue;
        if (!p.choices.empty()) {
          config[p.name] = p.choices[rng() % p.choices.size()];
        } else if (p.type == ParamType::int_) {
          std::int64_t v = p.min + static_cast<std::int64_t>(rng() % static_cast<unsigned>(std::min<std::int64_t>(p.max - p.min + 1, 1 << 20)));
          // Small ranges (pipeline depths) as drawn; wide ones (thread counts) rounded to whole warps.
          if (p.max - p.min > 64) v = v / 32 * 32 == 0 ? 32 : v / 32 * 32;
          config[p.name] = std::to_string(v);
        }
      }
      std::map<std::string, std::string> problem;
      if (const ParamSpec* d = s->problem.find("dtype")) problem["dtype"] = d->choices[compiled % d->choices.size()];
      const std::string arch = s->archs[compiled % s->archs.size()];
      if (!instantiate(*s, problem, config, limits_for_arch(arch)).ok()) continue;
      expect_compiles(*s, problem, config, arch);
      ++compiled;
    }
    EXPECT_EQ(compiled, 3) << s->name << ": too few valid configs drawn";
  }
}

// The tensor-core GEMMs' problem variants (B layout, output type) are template arguments: each compiles, for every
// arch the kernel lists, at a config that fits it.
TEST(Library, GemmLayoutsAndOutputTypesCompile) {
  using KV = std::map<std::string, std::string>;
  const KV row = {{"trans_B", "false"}}, f32 = {{"out_dtype", "f32"}};
  for (const auto& arch : spec("gemm.mma").archs) {
    expect_compiles(spec("gemm.mma"), row, {}, arch);
    expect_compiles(spec("gemm.mma"), {{"trans_B", "false"}, {"out_dtype", "f32"}, {"dtype", "f16"}}, {}, arch);
    expect_compiles(spec("gemm.mma"), {{"out_dtype", "f16"}}, {{"warps_M", "4"}, {"swizzle", "false"}}, arch);
    expect_compiles(spec("gemm.mma"), row, {{"block_N", "64"}, {"warps_N", "2"}}, arch);  // 32-column warp tiles
  }
  expect_compiles(spec("gemm.wgmma"), row, {}, "sm_90a");
  expect_compiles(spec("gemm.wgmma"), f32, {{"num_stages", "2"}}, "sm_90a");
  expect_compiles(spec("gemm.wgmma"), {{"trans_B", "false"}, {"out_dtype", "f32"}, {"dtype", "f16"}},
                  {{"block_N", "128"}, {"tma_store", "false"}}, "sm_90a");
  expect_compiles(spec("gemm.wgmma"), {{"trans_B", "false"}, {"out_dtype", "bf16"}, {"dtype", "f16"}},
                  {{"block_M", "64"}, {"block_N", "128"}}, "sm_90a");
  // 2-CTA clusters: each shared operand (B for cluster_M=2, both B layouts; A for cluster_N=2), each epilogue.
  expect_compiles(spec("gemm.wgmma"), {}, {{"cluster_M", "2"}}, "sm_90a");
  expect_compiles(spec("gemm.wgmma"), row, {{"cluster_M", "2"}, {"block_N", "128"}}, "sm_90a");
  expect_compiles(spec("gemm.wgmma"), row, {{"cluster_N", "2"}, {"block_M", "64"}, {"block_N", "128"}}, "sm_90a");
  expect_compiles(spec("gemm.wgmma"), {{"out_dtype", "f32"}, {"dtype", "f16"}}, {{"cluster_N", "2"}, {"tma_store", "false"}},
                  "sm_90a");
}

// gemm.wgmma's clusters: the PTX of a 2-CTA config has the multicast loads, the remote releases (mapa + a
// cluster-scope arrive) and the cluster barriers; the 1x1 default has none of them. The launch pairs CTAs.
TEST(Library, GemmWgmmaClusterPtxAndLaunch) {
  auto ptx_of = [](const std::map<std::string, std::string>& problem, const std::map<std::string, std::string>& config) {
    auto inst = instantiate(spec("gemm.wgmma"), problem, config, limits_for_arch("sm_90a"));
    EXPECT_TRUE(inst.ok()) << inst.status().message();
    JitOptions opt;
    opt.arch = "sm_90a";
    auto k = jit().compile(compile_request(*inst, opt));
    EXPECT_TRUE(k.ok()) << k.status().message();
    return k.ok() ? k->ptx : std::string();
  };
  const std::vector<std::string> cluster_words = {
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster",
      "mapa.shared::cluster", "mbarrier.arrive.shared::cluster", "barrier.cluster.arrive",
      "barrier.cluster.wait", "%cluster_ctarank"};
  const std::string plain = ptx_of({}, {});
  ASSERT_FALSE(plain.empty());
  for (const auto& w : cluster_words) EXPECT_EQ(plain.find(w), std::string::npos) << w;
  for (const auto& [problem, config] : std::vector<std::pair<std::map<std::string, std::string>, std::map<std::string, std::string>>>{
           {{}, {{"cluster_M", "2"}}}, {{}, {{"cluster_N", "2"}}}, {{{"trans_B", "false"}}, {{"cluster_M", "2"}}}}) {
    SCOPED_TRACE(config.begin()->first + " trans_B=" + (problem.empty() ? "true" : "false"));
    const std::string ptx = ptx_of(problem, config);
    ASSERT_FALSE(ptx.empty());
    for (const auto& w : cluster_words) EXPECT_NE(ptx.find(w), std::string::npos) << w;
  }

  // Launch: clusters of 2 along x, a grid of whole pairs, at most 66 of them; the shared operand's box is halved.
  const std::map<std::string, std::string> cube = {{"M", "4096"}, {"N", "4096"}, {"K", "4096"}};
  auto box = [](const KernelInstance& k, const std::string& name) {
    for (const auto& a : k.args)
      if (a.name == name) return a.box;
    return std::vector<std::int64_t>{};
  };
  auto one = instantiate(spec("gemm.wgmma"), cube, {}, limits_for_arch("sm_90a")).value();
  EXPECT_EQ(one.launch.cluster.volume(), 1u);
  EXPECT_EQ(one.launch.grid.x, 132u);  // 32 x 16 tiles of 128 x 256
  EXPECT_EQ(box(one, "tma_A"), (std::vector<std::int64_t>{64, 128}));
  EXPECT_EQ(box(one, "tma_B"), (std::vector<std::int64_t>{64, 256}));
  auto m2 = instantiate(spec("gemm.wgmma"), cube, {{"cluster_M", "2"}}, limits_for_arch("sm_90a")).value();
  EXPECT_EQ(m2.launch.cluster.x, 2u);
  EXPECT_EQ(m2.launch.cluster.volume(), 2u);
  EXPECT_EQ(m2.launch.grid.x, 132u);  // 66 pairs of the 256 cluster tiles
  EXPECT_EQ(box(m2, "tma_A"), (std::vector<std::int64_t>{64, 128}));
  EXPECT_EQ(box(m2, "tma_B"), (std::vector<std::int64_t>{64, 128}));  // half of B's 256 rows per CTA
  auto n2 = instantiate(spec("gemm.wgmma"), cube, {{"cluster_N", "2"}}, limits_for_arch("sm_90a")).value();
  EXPECT_EQ(box(n2, "tma_A"), (std::vector<std::int64_t>{64, 64}));  // half of A's 128 rows per CTA
  EXPECT_EQ(box(n2, "tma_B"), (std::vector<std::int64_t>{64, 256}));
  // 257 x 130: 3 x 1 tiles; 2x1 pairs: 2 cluster tiles (the second's rank 1 is past M) = 4 CTAs; 1x2: 3 = 6 CTAs.
  const std::map<std::string, std::string> odd = {{"M", "257"}, {"N", "130"}, {"K", "72"}};
  EXPECT_EQ(instantiate(spec("gemm.wgmma"), odd, {{"cluster_M", "2"}, {"tma_store", "false"}}, limits_for_arch("sm_90a"))
                .value().launch.grid.x, 4u);
  EXPECT_EQ(instantiate(spec("gemm.wgmma"), odd, {{"cluster_N", "2"}, {"tma_store", "false"}}, limits_for_arch("sm_90a"))
                .value().launch.grid.x, 6u);
}

// The cluster-pair tile order (tile/work_order.hpp, what gemm.wgmma's CTAs walk): over every cluster tile and both
// ranks, each output tile inside the matrix comes exactly once, the two tiles of a pair share the operand the pair
// multicasts (same row block for 1x2, same column block for 2x1), and only rank 1 of the last pairs along an odd
// dimension falls outside.
TEST(Library, GemmClusterTileOrderCoversEveryTileOnce) {
  for (const auto& [cm, cn] : std::vector<std::pair<int, int>>{{1, 1}, {2, 1}, {1, 2}})
    for (int tiles_m = 1; tiles_m <= 9; ++tiles_m)
      for (int tiles_n = 1; tiles_n <= 9; ++tiles_n)
        for (int panel : {1, 2, 4, 16})
          for (bool raster_n : {false, true}) {
            SCOPED_TRACE(std::to_string(cm) + "x" + std::to_string(cn) + " tiles " + std::to_string(tiles_m) + "x" +
                         std::to_string(tiles_n) + " panel " + std::to_string(panel) + (raster_n ? " n" : " m"));
            const int cluster = cm * cn, work = gemm_cluster_tiles(tiles_m, tiles_n, cm, cn);
            EXPECT_EQ(work, ((tiles_m + cm - 1) / cm) * ((tiles_n + cn - 1) / cn));
            std::set<std::pair<int, int>> seen;
            int outside = 0;
            for (int t = 0; t < work; ++t) {
              const GemmTile r0 = gemm_cluster_tile(t, tiles_m, tiles_n, panel, raster_n, cm, cn, 0);
              const GemmTile r1 = gemm_cluster_tile(t, tiles_m, tiles_n, panel, raster_n, cm, cn, 1);
              ASSERT_TRUE(r0.m < tiles_m && r0.n < tiles_n) << t;  // rank 0 is always inside
              if (cluster == 1) {
                EXPECT_TRUE(r0.m == r1.m && r0.n == r1.n);
              } else if (cm == 2) {
                EXPECT_TRUE(r1.m == r0.m + 1 && r1.n == r0.n && r0.m % 2 == 0) << t;
              } else {
                EXPECT_TRUE(r1.n == r0.n + 1 && r1.m == r0.m && r0.n % 2 == 0) << t;
              }
              EXPECT_TRUE(seen.insert({r0.m, r0.n}).second) << t;
              if (cluster == 2) {
                if (r1.m < tiles_m && r1.n < tiles_n) {
                  EXPECT_TRUE(seen.insert({r1.m, r1.n}).second) << t;
                } else {
                  ++outside;
                }
              }
            }
            EXPECT_EQ(seen.size(), static_cast<std::size_t>(tiles_m * tiles_n));
            const int expect_outside = cm == 2 ? (tiles_m % 2) * tiles_n : cn == 2 ? (tiles_n % 2) * tiles_m : 0;
            EXPECT_EQ(outside, expect_outside);
          }
}

void expect_refused(const std::string& kernel, const std::map<std::string, std::string>& problem,
                    const std::map<std::string, std::string>& config, const std::string& arch,
                    const std::vector<std::string>& words) {
  auto inst = instantiate(spec(kernel), problem, config, limits_for_arch(arch));
  ASSERT_FALSE(inst.ok()) << kernel << " accepted an invalid config";
  EXPECT_EQ(inst.status().code(), ErrorCode::unsupported) << inst.status().message();
  for (const auto& w : words) EXPECT_NE(inst.status().message().find(w), std::string::npos) << inst.status().message();
}

TEST(Library, CanImplementRefusesWithReasons) {
  // gemm.wgmma pairs CTAs: a 2 x 2 cluster is refused with what to set instead.
  expect_refused("gemm.wgmma", {}, {{"cluster_M", "2"}, {"cluster_N", "2"}}, "sm_90a",
                 {"cluster of 4", "cluster_M=2", "cluster_N=2", "not both"});
  // 16x16 block of 4x4 thread tiles = 16 threads
  expect_refused("gemm.simt", {}, {{"block_M", "16"}, {"block_N", "16"}, {"thread_M", "4"}, {"thread_N", "4"}}, "sm_90a",
                 {"16 threads", "multiple of 32"});
  // 256x256 of 2x2 = 16384 threads
  expect_refused("gemm.simt", {}, {{"block_M", "256"}, {"block_N", "256"}, {"thread_M", "2"}, {"thread_N", "2"}},
                 "sm_90a", {"16384", "1024"});
  expect_refused("gemm.simt", {}, {{"thread_M", "16"}, {"thread_N", "16"}, {"block_M", "256"}, {"block_N", "256"}},
                 "sm_90a", {"256 accumulators"});
  // 64 * (256 + 256) * 4 = 128 KiB: fits sm_90a's 227 KiB, not sm_86's 99 KiB.
  const std::map<std::string, std::string> big = {{"block_M", "256"}, {"block_N", "256"}, {"block_K", "64"}};
  EXPECT_TRUE(instantiate(spec("gemm.simt"), {}, big, limits_for_arch("sm_90a")).ok());
  expect_refused("gemm.simt", {}, big, "sm_86", {"131072", "shared memory", "101376"});

  expect_refused("rmsnorm", {{"cols", "1004"}, {"dtype", "bf16"}}, {{"vec", "8"}, {"threads", "256"}}, "sm_90a", {"cols=1004", "vec=8"});
  // The row kernels' vec left at auto: 4, else the widest of 2 and 1 that divides cols, so any row length runs.
  for (const auto& [cols, vec] : std::vector<std::pair<std::string, std::string>>{{"4096", "4"}, {"1002", "2"}, {"1001", "1"}}) {
    for (const char* name : {"rmsnorm", "softmax"}) {
      auto inst = instantiate(spec(name), {{"cols", cols}}, {}, limits_for_arch("sm_90a"));
      ASSERT_TRUE(inst.ok()) << name << " cols=" << cols << ": " << inst.status().message();
      EXPECT_NE(inst->name_expression.find(".vec = " + vec + ","), std::string::npos) << inst->name_expression;
    }
  }
  expect_refused("softmax", {}, {{"threads", "96"}, {"rows_per_block", "2"}}, "sm_90a", {"48 threads per row", "whole warps"});
  expect_refused("softmax", {}, {{"threads", "100"}}, "sm_90a", {"threads=100", "multiple of 32"});
  expect_refused("copy", {{"dtype", "f32"}}, {{"vec", "8"}}, "sm_90a", {"32 bytes", "vec=4"});
  EXPECT_TRUE(instantiate(spec("copy"), {{"dtype", "bf16"}}, {{"vec", "8"}}, limits_for_arch("sm_90a")).ok());
  expect_refused("elementwise", {}, {{"threads", "33"}}, "sm_80", {"multiple of 32"});

  // The f32 C staging tile of gemm.wgmma's TMA-store epilogue is 128 x 256 x 4 = 128 KiB: with 3 stages of
  // (128 + 256) x 64 x 2 bytes that is 279600 bytes; 2 stages, block_N=128 or direct stores fit. The default
  // (tma_store=auto) stores an f32 C directly, and a 16-bit C whose rows are not 16-byte units too.
  expect_refused("gemm.wgmma", {{"out_dtype", "f32"}}, {{"tma_store", "true"}}, "sm_90a",
                 {"f32 C staging tile", "279600", "tma_store=false"});
  for (const std::map<std::string, std::string>& fits :
       {std::map<std::string, std::string>{{"num_stages", "2"}, {"tma_store", "true"}},
        {{"block_N", "128"}, {"tma_store", "true"}}, {{"tma_store", "false"}}, {}})
    EXPECT_TRUE(instantiate(spec("gemm.wgmma"), {{"out_dtype", "f32"}}, fits, limits_for_arch("sm_90a")).ok());
  expect_refused("gemm.wgmma", {{"out_dtype", "f32"}, {"N", "130"}}, {{"num_stages", "2"}, {"tma_store", "true"}},
                 "sm_90a", {"N a multiple of 4 for f32", "tma_store=false"});
  auto tma_c = [&](std::map<std::string, std::string> problem) {
    auto k = instantiate(spec("gemm.wgmma"), problem, {}, limits_for_arch("sm_90a")).value();
    for (const ArgSpec& a : k.args)
      if (a.name == "tma_C") return a.tensor_of;
    return std::string();
  };
  EXPECT_EQ(tma_c({}), "C");                                          // bf16 C, N 4096: the TMA store
  EXPECT_EQ(tma_c({{"out_dtype", "f32"}}), "A");                      // f32: direct stores (a map of A passed)
  EXPECT_EQ(tma_c({{"N", "4100"}}), "A");                             // 8200-byte rows: not 16-byte units
  EXPECT_TRUE(instantiate(spec("gemm.wgmma"), {{"N", "4100"}}, {}, limits_for_arch("sm_90a")).ok());
  expect_refused("gemm.mma", {{"trans_B", "false"}}, {{"block_N", "32"}, {"warps_N", "2"}}, "sm_90a",
                 {"block_N=32", "64-column blocks"});
  for (const char* k : {"gemm.mma", "gemm.wgmma"})
    expect_refused(k, {{"trans_B", "false"}, {"N", "130"}}, {}, "sm_90a", {"trans_B=false", "N a multiple of 8"});
  // A 2x1 pair multicasts half of an N-major B's 64-column boxes from each CTA: 192 columns are 3 boxes.
  expect_refused("gemm.wgmma", {{"trans_B", "false"}}, {{"cluster_M", "2"}, {"block_N", "192"}}, "sm_90a",
                 {"block_N=192", "3 of them", "cluster_M=1"});
  EXPECT_TRUE(instantiate(spec("gemm.wgmma"), {}, {{"cluster_M", "2"}, {"block_N", "192"}}, limits_for_arch("sm_90a")).ok());
}

// gemm.mma / gemm.wgmma: C = A * B^T (B stored N x K) or A * B (B stored K x N); the reference reads B as stored,
// and the output type follows out_dtype.
TEST(Library, TensorCoreGemmReferenceFollowsTheBLayout) {
  const auto lim = limits_for_arch("sm_90a");
  for (const char* trans : {"true", "false"}) {
    auto k = instantiate(spec("gemm.wgmma"), {{"M", "3"}, {"N", "8"}, {"K", "16"}, {"trans_B", trans}, {"out_dtype", "f32"}},
                         {{"tma_store", "false"}}, lim)
                 .value();
    ReferenceInputs in;
    for (const ArgSpec& a : k.args)
      if (a.kind == ArgSpec::Kind::tensor && a.role == ArgRole::in) in.tensors[a.name] = make_host_tensor(a);
    const HostTensor &A = in.tensor("A"), &B = in.tensor("B");
    EXPECT_EQ(B.shape, (std::string(trans) == "true" ? std::vector<std::int64_t>{8, 16} : std::vector<std::int64_t>{16, 8}));
    const ArgSpec* C = nullptr;
    for (const ArgSpec& a : k.args)
      if (a.name == "C" && a.kind == ArgSpec::Kind::tensor) C = &a;
    ASSERT_NE(C, nullptr);
    EXPECT_EQ(C->dtype, DType::f32);
    double c25 = 0;  // row 2, column 5 by hand
    for (int kk = 0; kk < 16; ++kk) c25 += A.at(2 * 16 + kk) * (std::string(trans) == "true" ? B.at(5 * 16 + kk) : B.at(kk * 8 + 5));
    EXPECT_DOUBLE_EQ(k.spec->reference(k.problem, in, "C", {2 * 8 + 5}).value().at(0), c25);
    const auto b = k.spec->baseline(k.problem, k.config).value();
    EXPECT_EQ(b.layout, std::string(trans) == "true" ? "nt" : "nn");
    EXPECT_EQ(b.out, DType::f32);
  }
}

TEST(Library, SchemaValidationMessagesAreActionable) {
  auto check = [](const std::string& kernel, const std::string& problem, const std::string& config,
                  const std::vector<std::string>& words) {
    auto p = parse_key_values(problem);
    auto c = parse_key_values(config);
    ASSERT_TRUE(p.ok() && c.ok());
    auto inst = instantiate(spec(kernel), *p, *c, limits_for_arch("sm_90a"));
    ASSERT_FALSE(inst.ok());
    EXPECT_EQ(inst.status().code(), ErrorCode::invalid_argument);
    for (const auto& w : words) EXPECT_NE(inst.status().message().find(w), std::string::npos) << inst.status().message();
  };
  check("gemm.simt", "", "blockM=64", {"unknown config key 'blockM'", "block_M, block_N, block_K, thread_M, thread_N"});
  check("gemm.simt", "", "block_M=48", {"block_M=48", "one of 16, 32, 64, 128, 256"});
  check("softmax", "", "threads=2048", {"threads=2048", "out of range 32..1024"});
  check("softmax", "", "threads=lots", {"not an integer"});
  check("gemm.simt", "L=3", "", {"unknown problem key 'L'", "M, N, K, dtype"});
  check("copy", "dtype=f8", "", {"dtype=f8", "one of f32, f16, bf16"});

  EXPECT_FALSE(parse_key_values("block_M").ok());
  EXPECT_FALSE(parse_key_values("a=1,a=2").ok());
  auto kv = parse_key_values(" block_M = 64 , block_N=32,");
  ASSERT_TRUE(kv.ok());
  EXPECT_EQ(kv->at("block_M"), "64");
  EXPECT_EQ(kv->size(), 2u);
  // dtype aliases are stored under their canonical name, which is what name expressions use
  auto inst = instantiate(spec("copy"), {{"dtype", "half"}}, {}, limits_for_arch("sm_90a"));
  ASSERT_TRUE(inst.ok());
  EXPECT_EQ(inst->problem.text("dtype"), "f16");
  EXPECT_NE(inst->name_expression.find("tl::ElemType::f16"), std::string::npos);
}

// A hostile user's values for every parameter of every kernel (hidden ones too), problem and config: below the
// minimum, above the maximum, 2^40, a fraction, text, empty, a value no choice has, a misspelt key. Each is refused
// before anything is built (invalid_argument), naming the key and what it takes, never accepted or thrown.
TEST(Library, EveryParameterRefusesBadValuesNamingIt) {
  int checked = 0;
  for (const KernelSpec* s : library_registry().list(true)) {
    for (const bool problem : {true, false}) {
      const Schema& schema = problem ? s->problem : s->config;
      const std::string side = problem ? "problem" : "config";
      std::vector<std::string> keys;
      for (const ParamSpec& p : schema.params) keys.push_back(p.name);
      for (const ParamSpec& p : schema.params) {
        std::vector<std::string> bad = {"", "bogus", "3.5", "1e3x"};
        if (p.type == ParamType::int_ && p.choices.empty()) {
          if (p.min > INT64_MIN) bad.push_back(std::to_string(p.min - 1));
          if (p.max < INT64_MAX) bad.push_back(std::to_string(p.max + 1));
          if (p.max < (std::int64_t{1} << 40)) bad.push_back(std::to_string(std::int64_t{1} << 40));
          bad.push_back("99999999999999999999999");
        } else if (p.type == ParamType::int_) {  // values no choice has (-1 is one: mla.sparse_decode's c1_rows auto)
          for (const std::string v : {"-7", "999983", "1099511627776"})
            if (std::find(p.choices.begin(), p.choices.end(), v) == p.choices.end()) bad.push_back(v);
        }
        for (const std::string& v : bad) {
          const std::map<std::string, std::string> given = {{p.name, v}};
          auto inst = problem ? instantiate(*s, given, {}, limits_for_arch("sm_90a"))
                              : instantiate(*s, {}, given, limits_for_arch("sm_90a"));
          ++checked;
          ASSERT_FALSE(inst.ok()) << s->name << " " << side << " " << p.name << "=" << v << " was accepted";
          EXPECT_EQ(inst.status().code(), ErrorCode::invalid_argument) << inst.status().message();
          EXPECT_NE(inst.status().message().find(side + " " + p.name + "=" + v), std::string::npos)
              << s->name << ": " << inst.status().message();
          EXPECT_NE(inst.status().message().find(p.describe_allowed()), std::string::npos)
              << s->name << ": " << inst.status().message();
        }
      }
      const std::map<std::string, std::string> misspelt = {{(keys.empty() ? std::string("x") : keys[0]) + "x", "1"}};
      auto inst = problem ? instantiate(*s, misspelt, {}, limits_for_arch("sm_90a"))
                          : instantiate(*s, {}, misspelt, limits_for_arch("sm_90a"));
      ASSERT_FALSE(inst.ok()) << s->name;
      EXPECT_NE(inst.status().message().find("unknown " + side + " key '" + misspelt.begin()->first + "'"),
                std::string::npos) << inst.status().message();
    }
  }
  EXPECT_GT(checked, 1000);
}

// A parameter left unset never makes a problem unrunnable: any one or two settings of a kernel's own runnable test
// problems, with everything else at its default, can be implemented. (heads=4 once failed against 16 default kv
// heads.)
TEST(Library, UnsetParametersLeaveARunnableProblem) {
  for (const KernelSpec* s : library_registry().list(true)) {
    if (!s->test_problems) continue;
    for (const auto& problem : s->test_problems(true)) {
      if (!instantiate(*s, problem, {}, limits_for_arch("sm_90a")).ok()) continue;  // a refusal the matrix tests
      const std::vector<std::pair<std::string, std::string>> kv(problem.begin(), problem.end());
      for (std::size_t i = 0; i < kv.size(); ++i) {
        for (std::size_t j = i; j < kv.size(); ++j) {
          const std::map<std::string, std::string> given = {kv[i], kv[j]};
          auto inst = instantiate(*s, given, {}, limits_for_arch("sm_90a"));
          EXPECT_TRUE(inst.ok()) << s->name << " " << kv[i].first << "=" << kv[i].second << " " << kv[j].first << "="
                                 << kv[j].second << ": " << inst.status().message();
        }
      }
    }
  }
}

TEST(Library, AttentionKvHeadsAndLengthsFollowUnlessSet) {
  for (const char* name : {"attn.fwd.mma", "attn.fwd.wgmma"}) {
    SCOPED_TRACE(name);
    auto p = instantiate(spec(name), {{"heads", "4"}, {"seq_q", "4096"}, {"causal", "true"}}, {}, limits_for_arch("sm_90a"));
    ASSERT_TRUE(p.ok()) << p.status().message();
    EXPECT_EQ(p->problem.integer("heads_kv"), 4);  // MHA
    EXPECT_EQ(p->problem.integer("seq_k"), 4096);  // self-attention
    p = instantiate(spec(name), {{"heads", "8"}, {"heads_kv", "2"}, {"seq_k", "100"}, {"causal", "true"}}, {},
                    limits_for_arch("sm_90a"));
    ASSERT_TRUE(p.ok()) << p.status().message();
    EXPECT_EQ(p->problem.integer("heads_kv"), 2);
    EXPECT_EQ(p->problem.integer("seq_k"), 100);
    EXPECT_EQ(p->problem.integer("seq_q"), 100);  // seq_q follows seq_k as well
    p = instantiate(spec(name), {{"seq_q", "77"}, {"seq_k", "301"}}, {}, limits_for_arch("sm_90a"));
    ASSERT_TRUE(p.ok()) << p.status().message();
    EXPECT_EQ(p->problem.integer("seq_q"), 77);
    EXPECT_EQ(p->problem.integer("seq_k"), 301);
    p = instantiate(spec(name), {}, {}, limits_for_arch("sm_90a"));
    ASSERT_TRUE(p.ok()) << p.status().message();
    EXPECT_EQ(p->problem.integer("seq_q"), 2048);  // both unset: their defaults
    EXPECT_EQ(p->problem.integer("seq_k"), 2048);
    EXPECT_EQ(p->problem.integer("heads_kv"), 16);
    const ParamSpec* kv = spec(name).problem.find("heads_kv");
    ASSERT_NE(kv, nullptr);
    EXPECT_EQ(kv->describe_default(), "= heads");
    EXPECT_EQ(spec(name).problem.value_of("heads_kv", {{"heads", "32"}}), "32");
    EXPECT_EQ(spec(name).problem.value_of("heads_kv", {}), spec(name).problem.find("heads")->default_value);
  }
}

TEST(Library, LaunchCoversTheProblemAndArgsMatchShapes) {
  // Sizes that are not multiples of any tile.
  auto g = instantiate(spec("gemm.simt"), {{"M", "1000"}, {"N", "517"}, {"K", "33"}, {"dtype", "f16"}},
                       {{"block_M", "64"}, {"block_N", "128"}, {"thread_M", "4"}, {"thread_N", "8"}}, limits_for_arch("sm_90a"));
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(g->launch.block.x, 16u * 16u);
  EXPECT_EQ(g->launch.grid.x, 5u);   // ceil(517 / 128)
  EXPECT_EQ(g->launch.grid.y, 16u);  // ceil(1000 / 64)
  EXPECT_EQ(g->launch.dynamic_smem, 8u * (64 + 128) * 4);
  EXPECT_DOUBLE_EQ(g->flops, 2.0 * 1000 * 517 * 33);
  EXPECT_EQ(g->args.at(0).shape, (std::vector<std::int64_t>{1000, 33}));
  EXPECT_EQ(g->args.at(1).shape, (std::vector<std::int64_t>{33, 517}));
  EXPECT_EQ(g->args.at(2).dtype, DType::f32);
  EXPECT_EQ(g->args.at(2).role, ArgRole::out);

  auto c = instantiate(spec("copy"), {{"n", "1000003"}, {"dtype", "bf16"}}, {{"vec", "8"}, {"threads", "128"}},
                       limits_for_arch("sm_90a"));
  ASSERT_TRUE(c.ok());
  const std::uint64_t per_block = 128 * 8;
  EXPECT_GE(c->launch.grid.x * per_block, 1000003u);
  EXPECT_LT((c->launch.grid.x - 1) * per_block, 1000003u);
  EXPECT_DOUBLE_EQ(c->min_bytes, 2.0 * 1000003 * 2);

  auto r = instantiate(spec("rmsnorm"), {{"rows", "1001"}, {"cols", "64"}}, {{"threads", "256"}, {"rows_per_block", "8"}},
                       limits_for_arch("sm_90a"));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->launch.grid.x, 126u);  // ceil(1001 / 8)
}

ReferenceInputs inputs_of(const KernelInstance& k) {
  ReferenceInputs in;
  for (const auto& a : k.args) {
    if (a.kind == ArgSpec::Kind::scalar) in.scalars[a.name] = a.value;
    else if (a.role != ArgRole::out) in.tensors[a.name] = make_host_tensor(a);
  }
  return in;
}

std::vector<double> reference_all(const KernelInstance& k, const std::string& out) {
  const ArgSpec* o = nullptr;
  for (const auto& a : k.args)
    if (a.name == out) o = &a;
  std::vector<std::int64_t> idx(static_cast<std::size_t>(o->numel()));
  for (std::size_t i = 0; i < idx.size(); ++i) idx[i] = static_cast<std::int64_t>(i);
  return k.spec->reference(k.problem, inputs_of(k), out, idx).value();
}

TEST(Library, ReferencesHaveTheOperationsProperties) {
  const auto lim = limits_for_arch("sm_90a");
  {  // softmax rows are positive and sum to 1, and the order within a row follows x
    auto k = instantiate(spec("softmax"), {{"rows", "3"}, {"cols", "50"}}, {{"vec", "2"}}, lim).value();
    auto y = reference_all(k, "y");
    auto x = inputs_of(k).tensor("x");
    for (int r = 0; r < 3; ++r) {
      double s = 0;
      for (int c = 0; c < 50; ++c) {
        EXPECT_GT(y[r * 50 + c], 0);
        s += y[r * 50 + c];
        if (c > 0) {
          EXPECT_EQ(x.at(r * 50 + c) > x.at(r * 50 + c - 1), y[r * 50 + c] > y[r * 50 + c - 1]);
        }
      }
      EXPECT_NEAR(s, 1.0, 1e-12);
    }
  }
  {  // rmsnorm: y / w has mean square ~1 per row
    auto k = instantiate(spec("rmsnorm"), {{"rows", "4"}, {"cols", "256"}}, {}, lim).value();
    auto y = reference_all(k, "y");
    auto w = inputs_of(k).tensor("w");
    for (int r = 0; r < 4; ++r) {
      double ms = 0;
      for (int c = 0; c < 256; ++c) ms += std::pow(y[r * 256 + c] / w.at(c), 2);
      EXPECT_NEAR(ms / 256, 1.0, 1e-4);  // eps = 1e-6 against mean squares ~1
    }
  }
  {  // gemm: against the identity-like fact C[i][j] = dot(row i of A, column j of B), spot-checked by hand
    auto k = instantiate(spec("gemm.simt"), {{"M", "3"}, {"N", "4"}, {"K", "5"}}, {}, lim).value();
    auto in = inputs_of(k);
    auto C = reference_all(k, "C");
    const auto &A = in.tensor("A"), &B = in.tensor("B");
    double c21 = 0;
    for (int kk = 0; kk < 5; ++kk) c21 += A.at(2 * 5 + kk) * B.at(kk * 4 + 1);
    EXPECT_DOUBLE_EQ(C[2 * 4 + 1], c21);
    // sampled indices return the same values as the full output
    auto sampled = k.spec->reference(k.problem, in, "C", {9, 2}).value();
    EXPECT_EQ(sampled, (std::vector<double>{C[9], C[2]}));
  }
  {  // elementwise with a = 2, b = -1
    auto k = instantiate(spec("elementwise"), {{"n", "10"}}, {}, lim).value();
    auto in = inputs_of(k);
    auto out = reference_all(k, "out");
    for (int i = 0; i < 10; ++i) EXPECT_DOUBLE_EQ(out[i], 2 * in.tensor("x").at(i) - in.tensor("y").at(i));
  }
}

TEST(Library, FillsAreDeterministicAndInRange) {
  ArgSpec a = ArgSpec::tensor("x", DType::f32, {10000}, ArgRole::in, {.lo = -1, .hi = 1, .seed = 7});
  HostTensor t1 = make_host_tensor(a), t2 = make_host_tensor(a);
  EXPECT_EQ(t1.data, t2.data);
  a.fill.seed = 8;
  EXPECT_NE(make_host_tensor(a).data, t1.data);
  double lo = 1, hi = -1, mean = 0;
  for (int i = 0; i < 10000; ++i) {
    lo = std::min(lo, t1.at(i));
    hi = std::max(hi, t1.at(i));
    mean += t1.at(i) / 10000;
  }
  EXPECT_GE(lo, -1);
  EXPECT_LT(hi, 1);
  EXPECT_LT(lo, -0.99);
  EXPECT_GT(hi, 0.99);
  EXPECT_NEAR(mean, 0, 0.03);
  // The host inputs are the bits the worker's device fill writes (runtime/core/numeric.hpp), for every dtype.
  for (DType t : {DType::f32, DType::f16, DType::bf16}) {
    ArgSpec b = ArgSpec::tensor("b", t, {4096}, ArgRole::in, {.lo = -3, .hi = 5, .seed = 11});
    std::vector<unsigned char> expected(b.bytes());
    for (std::uint64_t i = 0; i < 4096; ++i) {
      std::uint64_t bits = num::fill_bits(static_cast<int>(t), 11, i, -3, 5);
      std::memcpy(expected.data() + i * dtype_size(t), &bits, dtype_size(t));
    }
    EXPECT_EQ(make_host_tensor(b).data, expected) << dtype_name(t);
  }
}

TEST(Library, RegistryListsFindsAndSuggests) {
  auto& reg = library_registry();
  std::vector<std::string> names, all;
  for (auto* s : reg.list(false)) names.push_back(s->name);
  for (auto* s : reg.list(true)) all.push_back(s->name);
  EXPECT_EQ(names, (std::vector<std::string>{"attn.bwd.mma", "attn.bwd.wgmma", "attn.decode", "attn.fwd.mma", "attn.fwd.wgmma", "copy", "elementwise", "gemm.dequant", "gemm.fp8", "gemm.grouped", "gemm.mma", "gemm.simt", "gemm.wgmma", "mla.decode", "mla.sparse_decode", "mla.sparse_prefill", "rmsnorm", "softmax"}));
  EXPECT_EQ(all.size(), names.size() + 2);
  auto miss = reg.find("gemm.smit");
  ASSERT_FALSE(miss.ok());
  EXPECT_NE(miss.status().message().find("did you mean 'gemm.simt'"), std::string::npos) << miss.status().message();
  Registry fresh;
  EXPECT_TRUE(register_library_kernels(fresh).ok());
  EXPECT_FALSE(fresh.add(spec("copy")).ok());  // duplicate name
}

TEST(Library, PrepareKernelResolvesAndCompilesForTheDevice) {
  DeviceInfo h100;
  h100.cc_major = 9;
  h100.cc_minor = 0;
  h100.smem_per_block_optin = 232448;
  DeviceLimits lim = limits_for_device(h100);
  EXPECT_EQ(lim.arch, "sm_90a");  // so Hopper-only instructions are available
  DeviceInfo ada;
  ada.cc_major = 8;
  ada.cc_minor = 9;
  ada.smem_per_block_optin = 101376;
  EXPECT_EQ(limits_for_device(ada).arch, "sm_89");

  auto p = prepare_kernel(library_registry(), jit(), "rmsnorm", {{"dtype", "f16"}}, {{"rows_per_block", "2"}}, lim);
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->compiled.arch, "sm_90a");
  EXPECT_EQ(p->compiled.name_expression, p->instance.name_expression);
  EXPECT_EQ(p->instance.name_expression,
            "tl::rmsnorm<tl::RowsConfig{.dtype = tl::ElemType::f16, .vec = 4, .threads = 256, .rows_per_block = 2, .cached = 0}>");
  auto bad = prepare_kernel(library_registry(), jit(), "rmsnorm", {}, {{"threads", "31"}}, lim);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), ErrorCode::invalid_argument);  // out of the schema's range: never compiled
}

TEST(Library, EmbeddedSourcesMatchTheSourceTreeAndCompile) {
  SourceSet embedded = embedded_kernel_sources();
  const auto names = embedded.names();
  EXPECT_FALSE(names.empty());
  for (const KernelSpec* s : library_registry().list(true)) EXPECT_TRUE(embedded.contains(s->source)) << s->source;
  if (fs::is_directory(build_tree_kernels_dir())) {
    SourceSet tree = SourceSet::from_directory(build_tree_kernels_dir());
    for (const auto& n : names) EXPECT_EQ(embedded.read(n).value(), tree.read(n).value()) << n;
  }
  Jit j(embedded);
  auto inst = instantiate(spec("softmax"), {{"dtype", "bf16"}}, {}, limits_for_arch("sm_90a")).value();
  auto k = j.compile(compile_request(inst, JitOptions{}));
  ASSERT_TRUE(k.ok()) << k.status().message();
  EXPECT_EQ(k->key, jit().cache_key(compile_request(inst, JitOptions{})).value());  // same text, same key
}

}  // namespace
}  // namespace tl
