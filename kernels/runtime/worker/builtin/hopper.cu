// The worker's sm_90a built-in kernels: the wgmma tensor-core ceiling, compiled by nvcc into a second fatbin
// (wgmma exists only for the arch-specific target sm_90a, which the portable fatbin cannot carry).
#include "tile/barrier.cuh"
#include "tile/smem.cuh"
#include "tile/timer.cuh"
#include "tile/wgmma_ops.cuh"

namespace tl::builtin {

using wgmma_ops::smem_desc_sw128;

// Each warpgroup keeps one 64x256 fp32 accumulator (128 registers per thread) and issues wgmma back to back
// over one shared 64x64 (16-bit) A tile and 256x64 B tile, four k-steps per commit group with one group left in
// flight, as a GEMM main loop does. The tiles hold pseudo-random values of both signs (magnitudes 2^-7..1 in
// bf16/f16, 2^-6..1 in e4m3, never NaN or Inf): tensor-core power, and with it the clock the H100 holds, depends on
// the operand bits, and constant operands overstate what a GEMM on real data can reach. Two warpgroups per block,
// one block per SM. Thread 0 of block 0 adds the SM cycles and the nanoseconds its loop took to clock[0..1] (the
// host zeroes them; launches are serial): a tensor-core rate means little without the clock it ran at, which the
// power cap pulls down under sustained load, and cycles per loop give the rate per clock whatever the clock.
template <int KIND>  // 0 bf16, 1 f16, 2 e4m3
__device__ __forceinline__ void wgmma_chain(int iters, float* sink, unsigned long long* clock) {
  __shared__ __align__(1024) unsigned char tiles[8192 + 32768];
  for (int i = threadIdx.x; i < (8192 + 32768) / 2; i += blockDim.x) {
    unsigned h = static_cast<unsigned>(i) * 2654435761u;
    h ^= h >> 15;
    h *= 2246822519u;
    h ^= h >> 13;
    unsigned short v;
    if (KIND == 0) {  // bf16: sign, exponent 120..127, 7 mantissa bits
      v = static_cast<unsigned short>((h & 0x8000u) | ((120u + (h >> 16) % 8u) << 7) | (h & 0x7Fu));
    } else if (KIND == 1) {  // f16: sign, exponent 8..15, 10 mantissa bits
      v = static_cast<unsigned short>((h & 0x8000u) | ((8u + (h >> 16) % 8u) << 10) | (h & 0x3FFu));
    } else {  // two e4m3: sign, exponent 1..7, 3 mantissa bits each
      const unsigned lo = (h & 0x80u) | ((1u + (h >> 8) % 7u) << 3) | (h & 7u);
      const unsigned hi = ((h >> 16) & 0x80u) | ((1u + (h >> 24) % 7u) << 3) | ((h >> 11) & 7u);
      v = static_cast<unsigned short>(lo | (hi << 8));
    }
    reinterpret_cast<unsigned short*>(tiles)[i] = v;
  }
  fence_proxy_async_smem();  // generic writes -> visible to wgmma
  __syncthreads();
  float acc[128];
#pragma unroll
  for (int j = 0; j < 128; ++j) acc[j] = 0.f;
  const unsigned a = smem_u32(tiles), b = a + 8192;
  const unsigned long long c0 = clock64(), t0 = read_globaltimer();
  for (int it = 0; it < iters; ++it) {
    wgmma_ops::wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) {
      const unsigned long long da = smem_desc_sw128(a + kk * 32), db = smem_desc_sw128(b + kk * 32);
      if constexpr (KIND == 0) wgmma_ops::WgmmaSS<256, true, 0>::run(acc, da, db);
      else if constexpr (KIND == 1) wgmma_ops::WgmmaSS<256, false, 0>::run(acc, da, db);
      else wgmma_ops::WgmmaSSE4M3<256>::run(acc, da, db);
    }
    wgmma_ops::wgmma_commit();
    wgmma_ops::wgmma_wait<1>();
  }
  wgmma_ops::wgmma_wait<0>();
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    clock[0] += clock64() - c0;
    clock[1] += read_globaltimer() - t0;
  }
  float s = 0.f;
#pragma unroll
  for (int j = 0; j < 128; ++j) s += acc[j];
  if (s == -1.2345f) sink[threadIdx.x] = s;
}

}  // namespace tl::builtin

extern "C" __global__ void __launch_bounds__(256, 1) tl_bench_wgmma_bf16(int iters, float* sink,
                                                                     unsigned long long* clock) {
  tl::builtin::wgmma_chain<0>(iters, sink, clock);
}
extern "C" __global__ void __launch_bounds__(256, 1) tl_bench_wgmma_f16(int iters, float* sink,
                                                                     unsigned long long* clock) {
  tl::builtin::wgmma_chain<1>(iters, sink, clock);
}
extern "C" __global__ void __launch_bounds__(256, 1) tl_bench_wgmma_e4m3(int iters, float* sink,
                                                                     unsigned long long* clock) {
  tl::builtin::wgmma_chain<2>(iters, sink, clock);
}
