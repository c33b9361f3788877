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

extern "C" __global__ void wgmma_forms(float* out, unsigned addr, int s) {
  const unsigned a[4] = {threadIdx.x, threadIdx.x + 1, threadIdx.x + 2, threadIdx.x + 3};
  const unsigned long long da = smem_desc_sw128(addr), db = smem_desc_sw128_mn(addr + 1024, 8192);
  every_n<32, 64, 128, 176, 192, 256>(out, da, db, a, s);
  float e[128];
#pragma unroll
  for (int i = 0; i < 128; ++i) e[i] = out[i];
  WgmmaSSE4M3<256>::run(e, da, db);
  WgmmaSSE4M3<256>::run<0>(e, da, db);
  wgmma_fence();
  wgmma_commit();
  wgmma_wait<0>();
#pragma unroll
  for (int i = 0; i < 128; ++i) out[i] += e[i];
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
  want.push_back({"1", "m64n256k32", "e4m3", "R, R, p, 1, 1", 128});
  want.push_back({"0", "m64n256k32", "e4m3", "R, R, p, 1, 1", 128});
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

}  // namespace
