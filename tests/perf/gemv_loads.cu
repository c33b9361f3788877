// gemm.dequant gemv's weight reads alone (no dequantization, no mma, no sums) against plain reads of the same bytes:
// is the streaming rate the access pattern and grid, or the kernel's work? Standalone (CUDA events, L2 flushed by a
// 256 MiB write before every run, median of 20), built here and run on the GPU machine:
//   nvcc -O3 -arch=sm_90a -std=c++17 -o gemv_loads tests/perf/gemv_loads.cu && ./gemv_loads
// Kernels, each over N rows of K/2 bytes with the gemv path's grid (N / 128 row tiles x splits, 256 threads, 4 CTAs an
// SM):
//   pattern: lane (g, t) of warp w reads 16 bytes at 16 t of each 64-byte step of rows 16 w + g and + 8 (the gemv
//            split schedule: its two steps a batch, asked for together, one step = 64 bytes of 16 rows per warp);
//   lines:   the same rows, each lane a row's two steps as one 32-byte run (a quad: one 128-byte line);
//   linear:  the CTA's same number of bytes as one contiguous run, 16 bytes a lane, two loads in flight;
// and read: one 1 GiB read (the ceiling of a read-only stream), copy: a 1 GiB copy (tilelab's HBM copy ceiling).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "stream_reads.cuh"


// MODE 0 pattern, 1 lines, 2 linear. steps: the CTA's 64-byte steps per row (blockIdx.y's share of the row).
template <int MODE>
__global__ void __launch_bounds__(256, 4)
    reads(const unsigned char* W, long long row_bytes, int steps, unsigned* sink) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, g = lane / 4, t = lane % 4;
  unsigned acc = 0;
  if (MODE == 2) {
    const long long cta_bytes = 128LL * steps * 64;
    const unsigned char* p = W + (static_cast<long long>(blockIdx.x) * gridDim.y + blockIdx.y) * cta_bytes;
    for (long long o = 16LL * threadIdx.x; o < cta_bytes; o += 2 * 16 * 256) {
      const uint4 a = ld_stream(p + o);
      const uint4 b = o + 16 * 256 < cta_bytes ? ld_stream(p + o + 16 * 256) : make_uint4(0, 0, 0, 0);
      acc ^= fold(a) ^ fold(b);
    }
  } else {
    const long long row = 128LL * blockIdx.x + 16 * warp + g;
    const unsigned char* r0 = W + row * row_bytes + static_cast<long long>(blockIdx.y) * steps * 64;
    const unsigned char* r1 = r0 + 8 * row_bytes;
    for (int s = 0; s < steps; s += 2) {
      uint4 v[4] = {};
      if (MODE == 0) {
        v[0] = ld_stream(r0 + 64 * s + 16 * t);
        v[1] = ld_stream(r1 + 64 * s + 16 * t);
        if (s + 1 < steps) {
          v[2] = ld_stream(r0 + 64 * s + 64 + 16 * t);
          v[3] = ld_stream(r1 + 64 * s + 64 + 16 * t);
        }
      } else {  // an odd last step reads its row's next 64 bytes too (inside the buffer)
        v[0] = ld_stream(r0 + 64 * s + 32 * t);
        v[1] = ld_stream(r0 + 64 * s + 32 * t + 16);
        v[2] = ld_stream(r1 + 64 * s + 32 * t);
        v[3] = ld_stream(r1 + 64 * s + 32 * t + 16);
      }
      acc ^= fold(v[0]) ^ fold(v[1]) ^ fold(v[2]) ^ fold(v[3]);
    }
  }
  if (acc == 0x9e3779b9u) sink[0] = acc;  // keeps the loads (practically never true)
}

__global__ void read_all(const uint4* in, long long n, unsigned* sink) {
  unsigned acc = 0;
  for (long long i = blockIdx.x * 256LL + threadIdx.x; i < n; i += 256LL * gridDim.x) acc ^= fold(ld_stream(in + i));
  if (acc == 0x9e3779b9u) sink[0] = acc;
}
__global__ void copy_all(const uint4* in, uint4* out, long long n) {
  for (long long i = blockIdx.x * 256LL + threadIdx.x; i < n; i += 256LL * gridDim.x) out[i] = in[i];
}

template <class F>
float median_ms(F launch, unsigned char* flush, size_t flush_bytes) {
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  std::vector<float> ms;
  for (int i = 0; i < 23; ++i) {
    cudaMemsetAsync(flush, i, flush_bytes);
    cudaEventRecord(a);
    launch();
    cudaEventRecord(b);
    cudaEventSynchronize(b);
    float x = 0;
    cudaEventElapsedTime(&x, a, b);
    if (i >= 3) ms.push_back(x);
  }
  std::sort(ms.begin(), ms.end());
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return ms[ms.size() / 2];
}

int main() {
  const size_t big = 1ull << 30, flush_bytes = 256ull << 20;
  unsigned char *buf, *out, *flush;
  unsigned* sink;
  CK(cudaMalloc(&buf, big));
  CK(cudaMalloc(&out, big));
  CK(cudaMalloc(&flush, flush_bytes));
  CK(cudaMalloc(&sink, 64));
  CK(cudaMemset(buf, 0x5a, big));
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  const int grid_all = prop.multiProcessorCount * 8;
  const long long n16 = big / 16;
  const float read_ms =
      median_ms([&] { read_all<<<grid_all, 256>>>(reinterpret_cast<uint4*>(buf), n16, sink); }, flush, flush_bytes);
  const float copy_ms = median_ms(
      [&] { copy_all<<<grid_all, 256>>>(reinterpret_cast<uint4*>(buf), reinterpret_cast<uint4*>(out), n16 / 2); }, flush,
      flush_bytes);
  const double read_gbs = big / read_ms * 1e-6, copy_gbs = big / copy_ms * 1e-6;  // copy: half read, half written
  std::printf("%s: 1 GiB read %.0f GB/s, 1 GiB copy (read + write) %.0f GB/s\n", prop.name, read_gbs, copy_gbs);
  const float empty_ms = median_ms([&] { reads<2><<<dim3(64, 8), 256>>>(buf, 0, 0, sink); }, flush, flush_bytes);
  std::printf("an empty launch of 512 CTAs: %.1f us (in every time below)\n", empty_ms * 1e3);
  std::printf("%-12s %6s %5s %6s %9s %9s %9s   (us, %% of the copy)\n", "N x K", "splits", "steps", "MB", "pattern",
              "lines", "linear");
  struct Shape {
    int N, K, splits;
  };
  // The kernel's auto splits on 132 SMs (8, 4, 16, 16: 512, 896, 1024, 512 CTAs), and one wave at the two large ones.
  for (const Shape s : {Shape{8192, 8192, 8}, Shape{28672, 8192, 4}, Shape{8192, 28672, 16}, Shape{4096, 14336, 16},
                        Shape{28672, 8192, 2}, Shape{8192, 28672, 8}}) {
    const long long row_bytes = s.K / 2, bytes = static_cast<long long>(s.N) * row_bytes;
    const int steps = s.K / 128 / s.splits;
    const dim3 grid(s.N / 128, s.splits);
    float t[3];
    t[0] = median_ms([&] { reads<0><<<grid, 256>>>(buf, row_bytes, steps, sink); }, flush, flush_bytes);
    t[1] = median_ms([&] { reads<1><<<grid, 256>>>(buf, row_bytes, steps, sink); }, flush, flush_bytes);
    t[2] = median_ms([&] { reads<2><<<grid, 256>>>(buf, row_bytes, steps, sink); }, flush, flush_bytes);
    CK(cudaGetLastError());
    std::printf("%5d x %-5d %6d %5d %6.1f", s.N, s.K, s.splits, steps, bytes * 1e-6);
    for (float x : t) std::printf(" %5.1f %3.0f%%", x * 1e3, 100.0 * bytes / (x * 1e-3) / (copy_gbs * 1e9));
    std::printf("\n");
  }
  return 0;
}
