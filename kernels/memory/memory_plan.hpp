// The typed configs of the memory-bound kernels (copy, elementwise, rmsnorm, softmax) and their name expressions.
#pragma once

#include "tile/config.hpp"
#include "tile/float16.hpp"
#include "tile/layout.hpp"

#if !TL_DEVICE_CODE
#include <string>

#include "tile/config_name.hpp"
#endif

namespace tl {

// copy and elementwise: thread t of block b moves the vec elements from (b * threads + t) * vec on.
struct FlatConfig {
  ElemType dtype = ElemType::f32;
  int vec = 4;
  int threads = 256;
};

// rmsnorm and softmax: rows_per_block rows per block, threads / rows_per_block threads (whole warps) per row.
// cached (softmax): the vectors per thread a row is held in registers for, read once; 0: read twice (rmsnorm
// always reads twice).
struct RowsConfig {
  ElemType dtype = ElemType::f32;
  int vec = 4;
  int threads = 256;
  int rows_per_block = 1;
  int cached = 0;
};

// Which element each thread of a flat block moves: (vec, threads) -> element offset in the block's span.
TL_HOST_DEVICE constexpr Layout thread_vectors(const FlatConfig& c) {
  return Layout(make_shape(c.vec, c.threads), make_stride(1, c.vec));
}

#if !TL_DEVICE_CODE
// `kernel`: copy or elementwise.
inline std::string name_expression(const char* kernel, const FlatConfig& c) {
  return ConfigName(kernel, "FlatConfig")
      .raw("dtype", elem_type_source(c.dtype))
      .field("vec", c.vec)
      .field("threads", c.threads)
      .str();
}

// `kernel`: rmsnorm or softmax.
inline std::string name_expression(const char* kernel, const RowsConfig& c) {
  return ConfigName(kernel, "RowsConfig")
      .raw("dtype", elem_type_source(c.dtype))
      .field("vec", c.vec)
      .field("threads", c.threads)
      .field("rows_per_block", c.rows_per_block)
      .field("cached", c.cached)
      .str();
}
#endif

}  // namespace tl
