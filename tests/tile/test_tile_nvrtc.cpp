// The tile headers compile inside an NVRTC program for sm_90a (C++20), and constexpr layouts fold away.
#include <gtest/gtest.h>
#include <nvrtc.h>

#include <algorithm>
#include <regex>
#include <string>
#include <vector>

namespace {

// A kernel that indexes with a constexpr layout, a swizzled shared-memory layout and two atoms.
constexpr const char* kKernel = R"cu(
#include "tile/layout.hpp"
#include "tile/swizzle.hpp"
#include "tile/fragment.hpp"
#include "tile/atoms.hpp"
#include "tile/fixed.hpp"

extern "C" __global__ void tile_headers_smoke(int* out) {
  constexpr tl::Layout tv = tl::parse_layout("(8,(4,2)):(4,(1,32))").layout;
  static_assert(tv(1, 5) == 37, "layout folds at compile time");
  constexpr tl::SwizzledLayout smem = tl::smem_layout(tl::SmemSwizzle::b128, 2, 64, 64);
  static_assert(smem(1, 0) == 72, "128B swizzle moves row 1's first chunk to chunk 1");
  constexpr tl::Fragment acc = tl::wgmma_m64nNk16_d(128);
  constexpr tl::Fragment a = tl::mma_m16n8k16_a_f16();
  static_assert(a(5, 3).row == 9 && a(5, 3).col == 3, "mma A fragment");
  constexpr tl::Layout tiled = tl::zipped_divide(tl::make_layout(tl::make_shape(64, 64)), tl::make_tile(16, 8));
  const int t = threadIdx.x;
  int sum = tv(t % 8, t / 8) + smem(t % 64, t / 64) + tiled(t % 128, t / 128);
#pragma unroll
  for (int v = 0; v < acc.num_values(); ++v) {
    const tl::TileCoord c = acc(t, v);
    sum += c.row * 256 + c.col;
  }
  const tl::ThreadValue o = a.owner(t % 16, t / 16);
  constexpr auto fixed_smem = tl::fixed<smem>();
  constexpr auto fixed_c = tl::fixed<tl::mma_m16n8k16_c()>();
  static_assert(fixed_smem(1, 0) == 72, "fixed layouts fold at compile time too");
  const tl::TileCoord e = fixed_c(t % 32, t / 32 % 4);
  sum += fixed_smem(t % 64, t / 64) + e.row * 8 + e.col;
  out[t] = sum + o.thread + o.value + tl::Swizzle<3, 4, 3>{}(t * 16);
}
)cu";

struct Compiled {
  nvrtcResult result = NVRTC_SUCCESS;
  std::string log;
  std::string ptx;
};

Compiled compile(const std::string& source, const char* arch) {
  Compiled c;
  nvrtcProgram prog = nullptr;
  c.result = nvrtcCreateProgram(&prog, source.c_str(), "tile_smoke.cu", 0, nullptr, nullptr);
  if (c.result != NVRTC_SUCCESS) return c;
  const std::string arch_opt = std::string("--gpu-architecture=") + arch;
  const std::string include = std::string("-I") + TL_KERNELS_DIR;
  std::vector<const char*> opts = {arch_opt.c_str(), "-std=c++20", include.c_str()};
  c.result = nvrtcCompileProgram(prog, static_cast<int>(opts.size()), opts.data());
  size_t n = 0;
  nvrtcGetProgramLogSize(prog, &n);
  c.log.assign(n, '\0');
  nvrtcGetProgramLog(prog, c.log.data());
  if (c.result == NVRTC_SUCCESS && std::string(arch).rfind("compute_", 0) == 0) {
    nvrtcGetPTXSize(prog, &n);
    c.ptx.assign(n, '\0');
    nvrtcGetPTX(prog, c.ptx.data());
  }
  nvrtcDestroyProgram(&prog);
  return c;
}

TEST(TileNvrtc, HeadersCompileForSm90a) {
  const Compiled c = compile(kKernel, "sm_90a");
  ASSERT_EQ(c.result, NVRTC_SUCCESS) << nvrtcGetErrorString(c.result) << "\n" << c.log;
  EXPECT_EQ(c.log.find("warning"), std::string::npos) << c.log;
}

TEST(TileNvrtc, ConstexprLayoutsLeaveNoLocalMemory) {
  // Evaluating a constexpr layout at run-time coordinates must become plain integer arithmetic: a layout
  // object spilled to local memory would show up as a .local depot in the PTX.
  const Compiled c = compile(kKernel, "compute_90a");
  ASSERT_EQ(c.result, NVRTC_SUCCESS) << c.log;
  ASSERT_NE(c.ptx.find("tile_headers_smoke"), std::string::npos);
  EXPECT_EQ(c.ptx.find(".local"), std::string::npos) << c.ptx;
  // Nor may the headers' constants become device globals (NVRTC emits namespace-scope and static constexpr
  // variables as such): a kernel's PTX must hold only what the kernel declares.
  EXPECT_FALSE(std::regex_search(c.ptx, std::regex(R"((^|\n)\.global )"))) << c.ptx;
}

TEST(TileNvrtc, ViolatedPreconditionsStopTheCompile) {
  const std::string bad = R"cu(
#include "tile/layout.hpp"
extern "C" __global__ void k(int* out) {
  constexpr tl::Layout c = tl::composition(tl::Layout(tl::make_shape(3, 4), tl::make_stride(4, 1)), tl::Layout(2, 2));
  out[0] = c(threadIdx.x);
}
)cu";
  const Compiled c = compile(bad, "sm_90a");
  EXPECT_NE(c.result, NVRTC_SUCCESS);
  EXPECT_NE(c.log.find("tl_layout_error_not_divisible"), std::string::npos) << c.log;
}

// Every form of tile/wgmma_ops.cuh's wrappers (each N, bf16 and f16, A from smem or registers, trans-B 0/1, scale_d
// in a register or as an immediate 1/0, and e4m3 k32), in program order; the PTX must hold, per call, the
// instruction with N/2 accumulator registers and the operands and immediates that form asks for.
constexpr const char* kWgmmaForms = R"cu(
#include "tile/wgmma_ops.cuh"
using namespace tl::wgmma_ops;

template <int N, bool BF16>
__device__ void all_forms(float* out, unsigned long long da, unsigned long long db, const unsigned* a, int s) {
  float d[N / 2];
#pragma unroll
  for (int i = 0; i < N / 2; ++i) d[i] = out[i];
  WgmmaSS<N, BF16, 0>::run(d, da, db, s);
  WgmmaSS<N, BF16, 1>::run(d, da, db, s);
  WgmmaSS<N, BF16, 0>::run(d, da, db);
  WgmmaSS<N, BF16, 1>::template run<0>(d, da, db);
  WgmmaRS<N, BF16, 1>::run(d, a, db, s);
  WgmmaRS<N, BF16, 0>::run(d, a, db, s);
#pragma unroll
  for (int i = 0; i < N / 2; ++i) out[i] += d[i];
}

template <int... N>
__device__ void every_n(float* out, unsigned long long da, unsigned long long db, const unsigned* a, int s) {
  ((all_forms<N, true>(out, da, db, a, s), all_forms<N, false>(out, da, db, a, s)), ...);
}

template <int... N>
__device__ void e4m3_forms(float* out, unsigned long long da, unsigned long long db) {
  ([&] {
    float e[N / 2];
#pragma unroll
    for (int i = 0; i < N / 2; ++i) e[i] = out[i];
    WgmmaSSE4M3<N>::run(e, da, db);
    WgmmaSSE4M3<N>::template run<0>(e, da, db);
#pragma unroll
    for (int i = 0; i < N / 2; ++i) out[i] += e[i];
  }(), ...);
}

extern "C" __global__ void wgmma_forms(float* out, unsigned addr, int s) {
  const unsigned a[4] = {threadIdx.x, threadIdx.x + 1, threadIdx.x + 2, threadIdx.x + 3};
  const unsigned long long da = smem_desc_sw128(addr), db = smem_desc_sw128_mn(addr + 1024, 8192);
  every_n<32, 64, 128, 176, 192, 256>(out, da, db, a, s);
  e4m3_forms<64, 128, 256>(out, da, db);
  wgmma_fence();
  wgmma_commit();
  wgmma_wait<0>();
}
)cu";

TEST(TileNvrtc, WgmmaWrappersEmitEveryForm) {
  const Compiled c = compile(kWgmmaForms, "compute_90a");
  ASSERT_EQ(c.result, NVRTC_SUCCESS) << c.log;
  // One inline-asm block per call: the predicate's source (a register or an immediate), the shape, the types, the
  // accumulator list and the operands after it.
  const std::regex wgmma(
      R"(setp\.ne\.b32 p, (%r\d+|0|1), 0;\s*wgmma\.mma_async\.sync\.aligned\.m64n(\d+)k(\d+)\.f32\.(\w+)\.(\w+) \{([^}]*)\}, (.*);)");
  struct Call {
    std::string scale, shape, type, rest;
    int regs;
  };
  std::vector<Call> got;
  for (auto it = std::sregex_iterator(c.ptx.begin(), c.ptx.end(), wgmma); it != std::sregex_iterator(); ++it) {
    const std::smatch& m = *it;
    EXPECT_EQ(m[4], m[5]);
    const std::string regs = m[6];
    const std::string scale = m[1];
    got.push_back({scale[0] == '%' ? "reg" : scale, "m64n" + m[2].str() + "k" + m[3].str(), m[4],
                   std::regex_replace(m[7].str(), std::regex(R"(%r[d]?\d+)"), "R"),
                   static_cast<int>(std::count(regs.begin(), regs.end(), ',')) + 1});
  }
  std::vector<Call> want;
  for (int n : {32, 64, 128, 176, 192, 256}) {
    for (const char* t : {"bf16", "f16"}) {
      const std::string shape = "m64n" + std::to_string(n) + "k16";
      want.push_back({"reg", shape, t, "R, R, p, 1, 1, 0, 0", n / 2});
      want.push_back({"reg", shape, t, "R, R, p, 1, 1, 0, 1", n / 2});
      want.push_back({"1", shape, t, "R, R, p, 1, 1, 0, 0", n / 2});
      want.push_back({"0", shape, t, "R, R, p, 1, 1, 0, 1", n / 2});
      want.push_back({"reg", shape, t, "{R, R, R, R}, R, p, 1, 1, 1", n / 2});
      want.push_back({"reg", shape, t, "{R, R, R, R}, R, p, 1, 1, 0", n / 2});
    }
  }
  for (int n : {64, 128, 256}) {
    const std::string shape = "m64n" + std::to_string(n) + "k32";
    want.push_back({"1", shape, "e4m3", "R, R, p, 1, 1", n / 2});
    want.push_back({"0", shape, "e4m3", "R, R, p, 1, 1", n / 2});
  }
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    SCOPED_TRACE("call " + std::to_string(i) + ": " + want[i].shape + " " + want[i].type + " " + want[i].rest);
    EXPECT_EQ(got[i].scale, want[i].scale);
    EXPECT_EQ(got[i].shape, want[i].shape);
    EXPECT_EQ(got[i].type, want[i].type);
    EXPECT_EQ(got[i].rest, want[i].rest);
    EXPECT_EQ(got[i].regs, want[i].regs);
  }
  // And ptxas takes every form for sm_90a (operand types, counts and immediates).
  const Compiled sass = compile(kWgmmaForms, "sm_90a");
  EXPECT_EQ(sass.result, NVRTC_SUCCESS) << sass.log;
}

// Every wrapper of the device toolkit (one header per instruction family), called once each in one kernel: the PTX
// must hold each instruction (TMA with one coordinate per dimension, 1-5 D, and the multicast mask after them), and
// ptxas must take the whole program for sm_90a.
constexpr const char* kToolkitForms = R"cu(
#include "tile/barrier.cuh"
#include "tile/cluster.cuh"
#include "tile/convert.cuh"
#include "tile/cp_async.cuh"
#include "tile/global.cuh"
#include "tile/ldmatrix.cuh"
#include "tile/mbarrier.cuh"
#include "tile/mma_sync.cuh"
#include "tile/setmaxnreg.cuh"
#include "tile/smem.cuh"
#include "tile/timer.cuh"
#include "tile/tma.cuh"
using namespace tl;

extern "C" __global__ void __cluster_dims__(2, 1, 1) toolkit_forms(const __grid_constant__ TmaDescriptor map,
                                                                   float* out, int* flags) {
  __shared__ __align__(1024) unsigned char tile[4096];
  __shared__ unsigned long long bar;
  const unsigned s = smem_align<1024>(tile), b = smem_u32(&bar);
  mbar_init(b, 1);
  fence_mbarrier_init();
  cluster_sync();
  mbar_expect_tx(b, 1024);
  tma_load(s, &map, b, 1);
  tma_load(s, &map, b, 1, 2);
  tma_load(s, &map, b, 1, 2, 3);
  tma_load(s, &map, b, 1, 2, 3, 4);
  tma_load(s, &map, b, 1, 2, 3, 4, 5);
  tma_load_multicast(s, &map, b, 3, 1, 2);
  tma_load_multicast(s, &map, b, 3, 1, 2, 3, 4, 5);
  mbar_wait(b, 0);
  mbar_arrive(b);
  mbar_arrive_cluster(map_shared_rank(b, cluster_ctarank() ^ 1));
  fence_proxy_async_smem();
  tma_store(&map, s, 1);
  tma_store(&map, s, 1, 2, 3);
  tma_store(&map, s, 1, 2, 3, 4, 5);
  tma_store_commit();
  tma_store_wait_read();
  tma_store_wait_all();
  prefetch_tensormap(&map);
  cp_async_16(s, out, 16);
  cp_async_4(s + 16, out);
  cp_async_mbar_arrive(b);
  cp_async_commit();
  cp_async_wait<0>();
  unsigned r[4];
  ldmatrix_x4(s, r[0], r[1], r[2], r[3]);
  ldmatrix_x4_trans(s, r[0], r[1], r[2], r[3]);
  ldmatrix_x2(s, r[0], r[1]);
  ldmatrix_x2_trans(s, r[2], r[3]);
  stmatrix_x4(s, r[0], r[1], r[2], r[3]);
  stmatrix_x4_trans(s, r[0], r[1], r[2], r[3]);
  float d[4] = {0.f, 0.f, 0.f, 0.f};
  mma_16816<true>(d, r, r);
  mma_16816<false>(d, r, r);
  mma_16832_e4m3(d, r, r);
  fence_regs(d);
  named_barrier_sync(1, 128);
  named_barrier_arrive(2, 128);
  setmaxnreg_dec<40>();
  setmaxnreg_inc<232>();
  st_shared_b32(s, pack2<true>(d[0], d[1]));
  st_shared_f32(s + 4, d[2]);
  st_shared_v2_f32(s + 8, d[0], d[3]);
  st_shared_v4_fill(s + 16, 0u);
  const float2 u = unpack2<false>(ld_shared_b32(s));
  const uint4 v = ld_shared_v4_b32(s + 16);
  st_global_v2_f32(out, u.x + ld_shared_f32(s + 4), u.y + v.x);
  prefetch_l1(out);
  prefetch_l2(out + 64);
  bulk_prefetch_l2(out, 256);
  flags[0] = ld_acquire_gpu(flags + 1) + ld_relaxed_gpu(flags + 2);
  flags[3] = static_cast<int>(read_clock64() + read_globaltimer()) + read_smid() + read_laneid();
}
)cu";

TEST(TileNvrtc, DeviceToolkitEmitsEveryInstruction) {
  const Compiled c = compile(kToolkitForms, "compute_90a");
  ASSERT_EQ(c.result, NVRTC_SUCCESS) << c.log;
  auto count = [&](const std::string& pattern) {
    const std::regex re(pattern);
    return std::distance(std::sregex_iterator(c.ptx.begin(), c.ptx.end(), re), std::sregex_iterator());
  };
  const std::string coords[] = {"", R"(\{%r\d+\})", R"(\{%r\d+, %r\d+\})",
                                                    R"(\{%r\d+, %r\d+, %r\d+\})", R"(\{%r\d+, %r\d+, %r\d+, %r\d+\})",
                                                    R"(\{%r\d+, %r\d+, %r\d+, %r\d+, %r\d+\})"};
  for (int dim = 1; dim <= 5; ++dim) {
    SCOPED_TRACE("tensor dims " + std::to_string(dim));
    const std::string d = std::to_string(dim);
    EXPECT_EQ(count(R"(cp\.async\.bulk\.tensor\.)" + d + R"(d\.shared::cluster\.global\.mbarrier::complete_tx::bytes \[%r\d+\], \[%rd\d+, )" +
                    coords[dim] + R"(\], \[%r\d+\];)"),
              1);
  }
  EXPECT_EQ(count(R"(complete_tx::bytes\.multicast::cluster \[%r\d+\], \[%rd\d+, )" + coords[2] + R"(\], \[%r\d+\], %rs\d+;)"), 1);
  EXPECT_EQ(count(R"(complete_tx::bytes\.multicast::cluster \[%r\d+\], \[%rd\d+, )" + coords[5] + R"(\], \[%r\d+\], %rs\d+;)"), 1);
  for (int dim : {1, 3, 5})
    EXPECT_EQ(count(R"(cp\.async\.bulk\.tensor\.)" + std::to_string(dim) + R"(d\.global\.shared::cta\.bulk_group \[%rd\d+, )" +
                    coords[dim] + R"(\], \[%r\d+\];)"),
              1)
        << "store, dims " << dim;
  for (const char* insn :
       {"mbarrier.init.shared::cta.b64", "fence.mbarrier_init.release.cluster", "barrier.cluster.arrive.release",
        "barrier.cluster.wait.acquire", "mbarrier.arrive.expect_tx.shared::cta.b64", "mbarrier.try_wait.parity.shared::cta.b64",
        "mbarrier.arrive.shared::cta.b64", "mbarrier.arrive.shared::cluster.b64", "mapa.shared::cluster.u32",
        "%cluster_ctarank", "fence.proxy.async.shared::cta", "cp.async.bulk.commit_group", "cp.async.bulk.wait_group.read 0",
        "cp.async.bulk.wait_group 0", "prefetch.tensormap", "cp.async.cg.shared.global", "cp.async.ca.shared.global",
        "cp.async.mbarrier.arrive.noinc.shared::cta.b64", "cp.async.commit_group",
        "cp.async.wait_group 0", "ldmatrix.sync.aligned.m8n8.x4.shared.b16", "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16",
        "ldmatrix.sync.aligned.m8n8.x2.shared.b16", "ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16",
        "stmatrix.sync.aligned.m8n8.x4.shared.b16", "stmatrix.sync.aligned.m8n8.x4.trans.shared.b16",
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32", "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
        "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32", "bar.sync", "bar.arrive", "setmaxnreg.dec.sync.aligned.u32 40",
        "setmaxnreg.inc.sync.aligned.u32 232", "st.shared.b32", "st.shared.f32", "st.shared.v2.f32", "st.shared.v4.b32",
        "ld.shared.b32", "ld.shared.f32", "ld.shared.v4.b32", "cvt.rn.bf16x2.f32", "cvt.f32.f16", "st.global.v2.f32",
        "prefetch.global.L1", "prefetch.global.L2", "cp.async.bulk.prefetch.L2.global", "ld.acquire.gpu.global.b32",
        "ld.relaxed.gpu.global.b32", "%clock64", "%globaltimer", "%smid", "%laneid"})
    EXPECT_NE(c.ptx.find(insn), std::string::npos) << insn;
  const Compiled sass = compile(kToolkitForms, "sm_90a");
  EXPECT_EQ(sass.result, NVRTC_SUCCESS) << sass.log;
}

}  // namespace
