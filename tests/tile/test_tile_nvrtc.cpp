// The tile headers compile inside an NVRTC program for sm_90a (C++20), and constexpr layouts fold away.
#include <gtest/gtest.h>
#include <nvrtc.h>

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

}  // namespace
