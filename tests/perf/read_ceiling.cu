// How fast can this GPU stream a decode gemv's weight bytes at all? Plain reads of exactly a problem's bytes (no
// arithmetic but an XOR that keeps the loads), over grids of c CTAs an SM and u independent 16-byte loads a thread in
// flight, beside a 1 GiB copy. Each time is kernel time without launch gaps or L2 reuse: 10 launches back to back
// between two CUDA events, launch i reading region i of 10 disjoint regions (so nothing is still in the L2, which is
// smaller than a region at these sizes), median of 7 such batches, divided by 10.
//   nvcc -O3 -arch=sm_90a -std=c++17 -o read_ceiling tests/perf/read_ceiling.cu && ./read_ceiling [MB ...]
// Output: one line per (bytes, c, u) with GB/s and % of the copy (read + written bytes / time, tilelab's HBM ceiling).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "stream_reads.cuh"

// Thread t of CTA b reads 16-byte pieces (b * 256 + t) + j * 256 * grid, U of them issued before any is used.
template <int U>
__global__ void __launch_bounds__(256) read_u(const uint4* in, long long n, unsigned* sink) {
  const long long stride = 256LL * gridDim.x;
  unsigned acc = 0;
  long long i = blockIdx.x * 256LL + threadIdx.x;
  for (; i + (U - 1) * stride < n; i += U * stride) {
    uint4 v[U];
#pragma unroll
    for (int j = 0; j < U; ++j) v[j] = ld_stream(in + i + j * stride);
#pragma unroll
    for (int j = 0; j < U; ++j) acc ^= fold(v[j]);
  }
  for (; i < n; i += stride) {
    acc ^= fold(ld_stream(in + i));
  }
  if (acc == 0x9e3779b9u) sink[0] = acc;  // keeps the loads (practically never true)
}

__global__ void copy_all(const uint4* in, uint4* out, long long n) {
  for (long long i = blockIdx.x * 256LL + threadIdx.x; i < n; i += 256LL * gridDim.x) out[i] = in[i];
}

// Median over 7 batches of the time of one launch, a batch being launch(0) .. launch(9) between two events.
template <class F>
double launch_us(F launch) {
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  launch(0);  // warm-up
  std::vector<float> ms;
  for (int rep = 0; rep < 7; ++rep) {
    cudaEventRecord(a);
    for (int r = 0; r < 10; ++r) launch(r);
    cudaEventRecord(b);
    cudaEventSynchronize(b);
    float x = 0;
    cudaEventElapsedTime(&x, a, b);
    ms.push_back(x);
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2] * 1e3 / 10;
}

template <int U>
double time_read(const unsigned char* base, long long region, long long bytes, int grid, unsigned* sink) {
  return launch_us([&](int r) {
    read_u<U><<<grid, 256>>>(reinterpret_cast<const uint4*>(base + r * region), bytes / 16, sink);
  });
}

int main(int argc, char** argv) {
  std::vector<double> mbs;
  for (int i = 1; i < argc; ++i) mbs.push_back(std::atof(argv[i]));
  if (mbs.empty()) mbs = {117.440512, 58.720256};  // 28672 x 8192 int4 (either orientation); half of it
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  const int sms = prop.multiProcessorCount;
  const long long region = 128ll << 20;  // 10 regions of 128 MiB: a launch's bytes, 16-byte aligned, never reused
  unsigned char *buf, *out;
  unsigned* sink;
  CK(cudaMalloc(&buf, 10 * region));
  CK(cudaMalloc(&out, 10 * region));
  CK(cudaMalloc(&sink, 64));
  CK(cudaMemset(buf, 0x5a, 10 * region));
  const long long copy_n = (1ll << 30) / 2 / 16;  // 512 MiB read + 512 MiB written a launch
  const double copy_us = launch_us([&](int r) {
    copy_all<<<sms * 8, 256>>>(reinterpret_cast<const uint4*>(buf + (r % 2) * (512ll << 20)),
                               reinterpret_cast<uint4*>(out + (r % 2) * (512ll << 20)), copy_n);
  });
  const double copy_gbs = (1ll << 30) / copy_us * 1e-3;
  std::printf("%s, %d SMs: 1 GiB copy (read + write) %.0f GB/s\n", prop.name, sms, copy_gbs);
  std::printf("%9s %4s %2s %9s %8s %7s\n", "MB", "c/SM", "u", "us", "GB/s", "%copy");
  for (double mb : mbs) {
    const long long bytes = static_cast<long long>(mb * 1e6) / 16 * 16;
    if (bytes > region) {
      std::printf("%.1f MB: over the 128 MiB region, skipped\n", mb);
      continue;
    }
    double best = 0;
    for (int c : {2, 4, 8, 16, 32}) {
      for (int u : {1, 2, 4, 8}) {
        const int grid = sms * c;
        const double us = u == 1   ? time_read<1>(buf, region, bytes, grid, sink)
                          : u == 2 ? time_read<2>(buf, region, bytes, grid, sink)
                          : u == 4 ? time_read<4>(buf, region, bytes, grid, sink)
                                   : time_read<8>(buf, region, bytes, grid, sink);
        CK(cudaGetLastError());
        const double gbs = bytes / us * 1e-3;
        best = std::max(best, gbs);
        std::printf("%9.1f %4d %2d %9.2f %8.0f %6.1f%%\n", bytes * 1e-6, c, u, us, gbs, 100 * gbs / copy_gbs);
      }
    }
    std::printf("best read of %.1f MB: %.0f GB/s = %.1f%% of the copy\n", bytes * 1e-6, best, 100 * best / copy_gbs);
  }
  CK(cudaDeviceSynchronize());
  return 0;
}
