// Warp and block reductions for row-wise kernels (device only; needs no CUDA headers under NVRTC).
#pragma once

#include "tile/config.hpp"

#if TL_DEVICE_CODE
namespace tl {

struct SumOp {
  TL_DEVICE TL_FORCEINLINE float operator()(float a, float b) const { return a + b; }
};
struct MaxOp {
  TL_DEVICE TL_FORCEINLINE float operator()(float a, float b) const { return fmaxf(a, b); }
};

// Over the 4 lanes that hold one row of an mma.sync / wgmma accumulator (lanes 4r .. 4r+3): every lane ends with
// the row's result. The online softmax's row max and row sum.
TL_DEVICE TL_FORCEINLINE float quad_max(float v) {
  v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 1));
  return fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 2));
}
TL_DEVICE TL_FORCEINLINE float quad_sum(float v) {
  v += __shfl_xor_sync(0xffffffffu, v, 1);
  return v + __shfl_xor_sync(0xffffffffu, v, 2);
}

// 2^x on the SFU (ex2.approx.ftz): the attention kernels' exponential, log2(e) folded into the score scale.
TL_DEVICE TL_FORCEINLINE float exp2_approx(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

// Inclusive prefix sum over the 32 lanes (Hillis-Steele): lane l ends with the sum of lanes 0..l.
TL_DEVICE TL_FORCEINLINE int warp_inclusive_sum(int v, int lane) {
#pragma unroll
  for (int offset = 1; offset < 32; offset <<= 1) {
    const int u = __shfl_up_sync(0xffffffffu, v, offset);
    if (lane >= offset) v += u;
  }
  return v;
}

// Butterfly over all 32 lanes: every lane ends with the result.
template <class Op>
TL_DEVICE TL_FORCEINLINE float warp_allreduce(float v, Op op) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

// Reduce over the WARPS consecutive warps of one group (a row's threads): lanes reduce in registers, warps meet in
// `scratch` (WARPS floats owned by the group). Every thread of the group gets the result. Contains __syncthreads,
// so all threads of the block must call it the same number of times.
template <int WARPS, class Op>
TL_DEVICE TL_FORCEINLINE float group_allreduce(float v, Op op, float* scratch, int warp_in_group, int lane) {
  v = warp_allreduce(v, op);
  if constexpr (WARPS == 1) {
    return v;
  } else {
    if (lane == 0) scratch[warp_in_group] = v;
    __syncthreads();
    float r = scratch[0];
#pragma unroll
    for (int w = 1; w < WARPS; ++w) r = op(r, scratch[w]);
    __syncthreads();  // scratch is reused by the next reduction
    return r;
  }
}

}  // namespace tl
#endif
