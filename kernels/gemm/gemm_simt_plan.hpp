// gemm.simt's plan: its typed config and the shared-memory tiles and thread tiles kernel and host share.
#pragma once

#include "tile/config.hpp"
#include "tile/config_name.hpp"
#include "tile/fragment.hpp"
#include "tile/layout.hpp"

#if !TL_DEVICE_CODE
#include <string>
#endif

namespace tl {

// Element type of A and B (C is always f32); the kernel converts to float as it loads.
enum class GemmSimtInput : int { f32 = 0, f16 = 1, bf16 = 2 };

// The kernel's one template parameter, in the spec's names.
struct GemmSimtConfig {
  int block_M;
  int block_N;
  int block_K;
  int thread_M;
  int thread_N;
  GemmSimtInput dtype;
};

// Shared memory (floats): the A tile stored k-major (a thread's thread_M values of one k are contiguous), then the
// B tile, row-major. Thread t = tx + (block_N/thread_N) * ty owns the thread_M x thread_N sub-tile of C at
// (ty * thread_M, tx * thread_N), value j + thread_N * i being its element (i, j) (acc[i][j]).
struct GemmSimtPlan {
  int threads;
  Layout smem_A;    // (m, k) of the block_M x block_K A tile -> float offset
  Layout smem_B;    // (k, n) of the block_K x block_N B tile -> float offset from b_offset
  int b_offset;     // floats before the B tile
  int smem_bytes;   // the dynamic shared memory of a block
  Fragment thread_C;  // (thread, value) -> (row, col) of the block's C tile
};

TL_HOST_DEVICE constexpr GemmSimtPlan make_plan(const GemmSimtConfig& c) {
  GemmSimtPlan p{};
  const int tx = c.block_N / c.thread_N, ty = c.block_M / c.thread_M;
  p.threads = tx * ty;
  p.smem_A = Layout(make_shape(c.block_M, c.block_K), make_stride(1, c.block_M));
  p.smem_B = make_layout_row_major(make_shape(c.block_K, c.block_N));
  p.b_offset = p.smem_A.cosize();
  p.smem_bytes = 4 * (p.smem_A.cosize() + p.smem_B.cosize());
  // one thread's tile, values j + thread_N * i, then one copy per thread along the columns first
  const Fragment one(make_layout(Layout(1, 0), Layout(make_shape(c.thread_N, c.thread_M), make_stride(c.thread_M, 1))),
                     c.thread_M, c.thread_N);
  p.thread_C = repeat(one, ty, tx, true, false);
  return p;
}

#if !TL_DEVICE_CODE
// tl::gemm_simt<tl::GemmSimtConfig{.block_M = 128, ...}>: designated initializers, so the compiler checks every name.
inline std::string name_expression(const GemmSimtConfig& c) {
  static const char* const kInput[] = {"tl::GemmSimtInput::f32", "tl::GemmSimtInput::f16", "tl::GemmSimtInput::bf16"};
  return ConfigName("gemm_simt", "GemmSimtConfig")
      .field("block_M", c.block_M)
      .field("block_N", c.block_N)
      .field("block_K", c.block_K)
      .field("thread_M", c.thread_M)
      .field("thread_N", c.thread_N)
      .raw("dtype", kInput[static_cast<int>(c.dtype)])
      .str();
}
#endif

}  // namespace tl
