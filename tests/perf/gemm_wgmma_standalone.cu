// Standalone check + timing of kernels/gemm/gemm_wgmma.cuh against cuBLAS (nvcc build; used before the
// runtime path existed, kept to iterate on the kernel). Build:
//   nvcc -std=c++20 -O3 -gencode arch=compute_90a,code=sm_90a -I kernels tests/perf/gemm_wgmma_standalone.cu \
//        -lcublas -lcuda -o gemm_wgmma_standalone
// Run: ./gemm_wgmma_standalone [M N K ...]   (default: the four target shapes)
#include <cublas_v2.h>
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "gemm/gemm_mma.cuh"
#include "gemm/gemm_wgmma.cuh"

#define CHECK_CUDA(x)                                                                          \
  do {                                                                                         \
    cudaError_t e = (x);                                                                       \
    if (e != cudaSuccess) {                                                                    \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e)); \
      std::exit(1);                                                                            \
    }                                                                                          \
  } while (0)

static tl::TmaDescriptor make_map(const void* ptr, int rows, int cols_k, int box_rows, int box_cols = 64) {
  tl::TmaDescriptor d{};
  cuuint64_t dims[2] = {static_cast<cuuint64_t>(cols_k), static_cast<cuuint64_t>(rows)};
  cuuint64_t strides[1] = {static_cast<cuuint64_t>(cols_k) * 2};
  cuuint32_t box[2] = {static_cast<cuuint32_t>(box_cols), static_cast<cuuint32_t>(box_rows)};
  cuuint32_t estr[2] = {1, 1};
  CUresult r = cuTensorMapEncodeTiled(reinterpret_cast<CUtensorMap*>(&d), CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2,
                                      const_cast<void*>(ptr), dims, strides, box, estr,
                                      CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                      CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) {
    std::fprintf(stderr, "cuTensorMapEncodeTiled failed: %d\n", r);
    std::exit(1);
  }
  return d;
}

template <int BM, int BN, int WM, int WN, int STAGES, bool SW, int PANEL, int MINB = 1>
struct MmaConfig {
  static constexpr int smem = tl::gemm_mma_smem_bytes<BM, BN, WM, WN, STAGES>();
  static const char* name() {
    static char buf[64];
    std::snprintf(buf, sizeof(buf), "mma %dx%d w%dx%d s%d b%d%s", BM, BN, WM, WN, STAGES, MINB, SW ? "" : " nosw");
    return buf;
  }
  static void launch(const __nv_bfloat16* A, const __nv_bfloat16* B, __nv_bfloat16* C, int M, int N, int K) {
    auto kernel = tl::gemm_mma<BM, BN, WM, WN, STAGES, SW, PANEL, true, true, tl::gemm_detail::kOutBf16, MINB>;
    static bool set = false;
    if (!set) {
      CHECK_CUDA(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
      set = true;
    }
    int tiles = ((M + BM - 1) / BM) * ((N + BN - 1) / BN);
    kernel<<<tiles, WM * WN * 32, smem>>>(reinterpret_cast<const unsigned short*>(A),
                                          reinterpret_cast<const unsigned short*>(B),
                                          reinterpret_cast<unsigned short*>(C), M, N, K);
  }
};

template <class F>
static double median_ms(F&& f, int reps) {
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  for (int i = 0; i < 3; ++i) f();
  std::vector<float> t;
  for (int i = 0; i < reps; ++i) {
    cudaEventRecord(a);
    f();
    cudaEventRecord(b);
    cudaEventSynchronize(b);
    float ms;
    cudaEventElapsedTime(&ms, a, b);
    t.push_back(ms);
  }
  CHECK_CUDA(cudaGetLastError());
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

template <int BM, int BN, int STAGES, int PANEL, bool TS>
struct Config {
  static constexpr tl::GemmWgmmaConfig cfg{.block_M = BM, .block_N = BN, .num_stages = STAGES, .panel = PANEL, .tma_store = TS};
  static constexpr int smem = tl::make_plan(cfg).bytes;
  static const char* name() {
    static char buf[64];
    std::snprintf(buf, sizeof(buf), "%dx%dx64 s%d p%d%s", BM, BN, STAGES, PANEL, TS ? " tma" : "");
    return buf;
  }
  static void launch(const tl::TmaDescriptor& ta, const tl::TmaDescriptor& tb, const tl::TmaDescriptor& tc,
                     __nv_bfloat16* C, int M, int N, int K, int sms) {
    auto kernel = tl::gemm_wgmma<cfg>;
    static bool set = false;
    if (!set) {
      CHECK_CUDA(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
      set = true;
    }
    int tiles = ((M + BM - 1) / BM) * ((N + BN - 1) / BN);
    kernel<<<std::min(tiles, sms), (BM / 64 + 1) * 128, smem>>>(ta, tb, tc, reinterpret_cast<unsigned short*>(C), M,
                                                                 N, K);
  }
};

int main(int argc, char** argv) {
  std::vector<std::array<int, 3>> shapes;
  for (int i = 1; i + 2 < argc; i += 3) shapes.push_back({atoi(argv[i]), atoi(argv[i + 1]), atoi(argv[i + 2])});
  if (shapes.empty()) shapes = {{8192, 8192, 8192}, {4096, 4096, 4096}, {8192, 8192, 1024}, {4096, 4096, 512},
                                {1000, 1000, 520}};
  int sms = 0;
  CHECK_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  cublasHandle_t handle;
  cublasCreate(&handle);
  std::mt19937 rng(1234);
  std::uniform_real_distribution<float> uni(-1.f, 1.f);

  for (auto [M, N, K] : shapes) {
    std::vector<__nv_bfloat16> hA(size_t(M) * K), hB(size_t(N) * K);
    for (auto& v : hA) v = __float2bfloat16(uni(rng));
    for (auto& v : hB) v = __float2bfloat16(uni(rng));
    __nv_bfloat16 *dA, *dB, *dC, *dRef;
    CHECK_CUDA(cudaMalloc(&dA, hA.size() * 2));
    CHECK_CUDA(cudaMalloc(&dB, hB.size() * 2));
    CHECK_CUDA(cudaMalloc(&dC, size_t(M) * N * 2));
    CHECK_CUDA(cudaMalloc(&dRef, size_t(M) * N * 2));
    CHECK_CUDA(cudaMemcpy(dA, hA.data(), hA.size() * 2, cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(dB, hB.data(), hB.size() * 2, cudaMemcpyHostToDevice));
    float alpha = 1.f, beta = 0.f;
    auto cublas = [&] {
      cublasGemmEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, N, M, K, &alpha, dB, CUDA_R_16BF, K, dA, CUDA_R_16BF, K, &beta,
                   dRef, CUDA_R_16BF, N, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    };
    double cublas_ms = median_ms(cublas, 30);
    std::vector<__nv_bfloat16> hRef(size_t(M) * N), hC(size_t(M) * N);
    CHECK_CUDA(cudaMemcpy(hRef.data(), dRef, hRef.size() * 2, cudaMemcpyDeviceToHost));
    double flops = 2.0 * M * N * K;
    std::printf("%5d x %5d x %5d  cublas            %8.3f ms %7.1f TFLOP/s\n", M, N, K, cublas_ms,
                flops / cublas_ms / 1e9);

    auto check_and_time = [&](const char* name, int BMv, int BNv, auto launch) {
      CHECK_CUDA(cudaMemset(dC, 0xFF, size_t(M) * N * 2));  // poison: 0xFFFF is a NaN in bf16
      auto ta = make_map(dA, M, K, BMv);
      auto tb = make_map(dB, N, K, BNv);
      auto tc = make_map(dC, M, N, 64, 64);
      launch(ta, tb, tc);
      CHECK_CUDA(cudaDeviceSynchronize());
      CHECK_CUDA(cudaMemcpy(hC.data(), dC, hC.size() * 2, cudaMemcpyDeviceToHost));
      double num = 0, den = 0, maxabs = 0;
      size_t unwritten = 0;
      for (size_t i = 0; i < hC.size(); ++i) {
        double c = __bfloat162float(hC[i]), r = __bfloat162float(hRef[i]);
        if (std::isnan(c)) ++unwritten;
        num += (c - r) * (c - r);
        den += r * r;
        maxabs = std::max(maxabs, std::fabs(c - r));
      }
      // float64 reference at sampled positions
      double snum = 0, sden = 0;
      std::mt19937 pick(7);
      for (int s = 0; s < 64; ++s) {
        int i = pick() % M, j = pick() % N;
        double acc = 0;
        for (int k = 0; k < K; ++k)
          acc += double(__bfloat162float(hA[size_t(i) * K + k])) * double(__bfloat162float(hB[size_t(j) * K + k]));
        double c = __bfloat162float(hC[size_t(i) * N + j]);
        snum += (c - acc) * (c - acc);
        sden += acc * acc;
      }
      double ms = median_ms([&] { launch(ta, tb, tc); }, 30);
      std::printf("%5d x %5d x %5d  %-17s %8.3f ms %7.1f TFLOP/s  %.3fx cublas  rel_vs_cublas %.2e  "
                  "rel_vs_f64 %.2e  unwritten %zu\n",
                  M, N, K, name, ms, flops / ms / 1e9, cublas_ms / ms, std::sqrt(num / den), std::sqrt(snum / sden),
                  unwritten);
    };
#define CASE(BM_, BN_, ST_, P_, TS_)                                                                        \
  check_and_time(Config<BM_, BN_, ST_, P_, TS_>::name(), BM_, BN_,                                          \
                 [&](const tl::TmaDescriptor& ta, const tl::TmaDescriptor& tb, const tl::TmaDescriptor& tc) { \
                   Config<BM_, BN_, ST_, P_, TS_>::launch(ta, tb, tc, dC, M, N, K, sms);                     \
                 })
#define CASE_MMA(BM_, BN_, WM_, WN_, ST_, SW_, MB_)                                                         \
  check_and_time(MmaConfig<BM_, BN_, WM_, WN_, ST_, SW_, 8, MB_>::name(), 64, 64,                            \
                 [&](const tl::TmaDescriptor&, const tl::TmaDescriptor&, const tl::TmaDescriptor&) {          \
                   MmaConfig<BM_, BN_, WM_, WN_, ST_, SW_, 8, MB_>::launch(dA, dB, dC, M, N, K);             \
                 })
    if (getenv("MMA")) {
      CASE_MMA(128, 128, 2, 4, 4, true, 1);
      CASE_MMA(128, 128, 2, 4, 3, true, 2);
      CASE_MMA(128, 128, 2, 2, 3, true, 2);
      CASE_MMA(128, 128, 4, 2, 3, true, 2);
      CASE_MMA(128, 256, 2, 4, 3, true, 1);
      CASE_MMA(128, 64, 2, 2, 4, true, 3);
      CASE_MMA(128, 128, 2, 4, 4, false, 1);
    }
    if (!getenv("WGMMA")) {
      cudaFree(dA); cudaFree(dB); cudaFree(dC); cudaFree(dRef);
      continue;
    }
    CASE(128, 256, 3, 8, false);
    CASE(128, 256, 3, 8, true);
    CASE(128, 256, 3, 16, true);
    CASE(128, 128, 6, 8, true);
    CASE(128, 128, 4, 8, true);
    cudaFree(dA);
    cudaFree(dB);
    cudaFree(dC);
    cudaFree(dRef);
  }
  return 0;
}
