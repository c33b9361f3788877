// The user kernel of samples/custom_kernel.lua: out[r, c] = max(x[r, c], 0) * alpha + bias[c] (a fused bias-ReLU).
// Compiled by TileLab's NVRTC with the library's headers on the include path ("tile/float16.hpp", ...).

template <int THREADS, int ITEMS>
__global__ void __launch_bounds__(THREADS) bias_relu(const float* __restrict__ x, const float* __restrict__ bias,
                                                     float* __restrict__ out, float alpha, int rows, int cols) {
  const long long n = static_cast<long long>(rows) * cols;
  const long long first = (static_cast<long long>(blockIdx.x) * THREADS * ITEMS) + threadIdx.x;
#pragma unroll
  for (int k = 0; k < ITEMS; ++k) {
    const long long i = first + static_cast<long long>(k) * THREADS;  // coalesced: a warp covers 32 neighbours
    if (i < n) out[i] = fmaxf(x[i], 0.0f) * alpha + bias[i % cols];
  }
}
