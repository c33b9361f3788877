// The library baseline of a launch (`--vs cublas|cudnn`): cuBLAS's GEMM or cuDNN's SDPA (cudnn_sdpa.cpp), each
// library opened at run time, on the launch's own buffers, checked against the kernel's output and timed like it.
#include <cuda_runtime_api.h>

#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "runtime/core/numeric.hpp"
#include "runtime/worker/gpu.hpp"
#include "runtime/worker/shared_library.hpp"

namespace tl::cuda_detail {

namespace {

// cuBLAS is opened at first use, not linked: `tilelab` must start where only the driver and NVRTC exist.
// The few declarations needed, with the values of cublas_api.h / library_types.h (CUDA 13).
using CublasHandle = void*;
constexpr int kCublasOpN = 0, kCublasOpT = 1;
constexpr int kCudaR32F = 0, kCudaR16F = 2, kCudaR16BF = 14;
constexpr int kCublasCompute32F = 68;
constexpr int kCublasGemmDefault = -1;

struct Cublas {
  int (*create)(CublasHandle*) = nullptr;
  int (*set_stream)(CublasHandle, cudaStream_t) = nullptr;
  int (*gemm_ex)(CublasHandle, int, int, int, int, int, const void*, const void*, int, int, const void*, int, int,
                 const void*, void*, int, int, int, int) = nullptr;
  int (*destroy)(CublasHandle) = nullptr;
  CublasHandle handle = nullptr;
  std::string error;  // why it is unusable; empty once loaded
};

Cublas& cublas() {
  static Cublas c = [] {
    Cublas c;
    const OpenedLibrary opened = open_first_library({"libcublas.so.13", "libcublas.so"}, "cublasCreate_v2", "libcublas");
    void* lib = opened.handle;
    if (!lib) {
      c.error = "cannot load libcublas.so.13 (install the CUDA 13 cuBLAS library or add its directory to "
                "LD_LIBRARY_PATH): " + opened.last_error;
      return c;
    }
    auto sym = [&](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name));
      if (!fn && c.error.empty()) c.error = std::string("libcublas has no ") + name;
    };
    sym(c.create, "cublasCreate_v2");
    sym(c.set_stream, "cublasSetStream_v2");
    sym(c.gemm_ex, "cublasGemmEx");
    sym(c.destroy, "cublasDestroy_v2");
    if (!c.error.empty()) return c;
    if (int st = c.create(&c.handle); st != 0) c.error = "cublasCreate failed (cublasStatus_t " + std::to_string(st) + ")";
    return c;
  }();
  return c;
}

Result<int> cuda_data_type(DType t) {
  switch (t) {
    case DType::f32: return kCudaR32F;
    case DType::f16: return kCudaR16F;
    case DType::bf16: return kCudaR16BF;
    default: return make_error(ErrorCode::unsupported, std::string("the cuBLAS baseline takes f32, f16 or bf16, not ") +
                                                           dtype_name(t));
  }
}

int buffer_named(const LaunchSpec& spec, const std::string& name) {
  for (std::size_t i = 0; i < spec.buffers.size(); ++i)
    if (spec.buffers[i].name == name) return static_cast<int>(i);
  return -1;
}

// Row-major C = A * op(B) as cuBLAS's column-major C^T = op(B)^T * A^T: the operands swap, no data moves.
Status cublas_gemm(const BaselineSpec& b, const void* A, const void* B, void* C, cudaStream_t stream) {
  Cublas& cb = cublas();
  if (!cb.error.empty()) return make_error(ErrorCode::unsupported, cb.error);
  if (int st = cb.set_stream(cb.handle, stream); st != 0)
    return make_error(ErrorCode::cuda, "cublasSetStream failed (cublasStatus_t " + std::to_string(st) + ")");
  auto in = cuda_data_type(b.in);
  if (!in) return in.status();
  auto out = cuda_data_type(b.out);
  if (!out) return out.status();
  const float alpha = 1.0f, beta = 0.0f;
  const bool nt = b.layout == "nt";
  int st = cb.gemm_ex(cb.handle, nt ? kCublasOpT : kCublasOpN, kCublasOpN, b.N, b.M, b.K, &alpha, B, *in,
                      nt ? b.K : b.N, A, *in, b.K, &beta, C, *out, b.N, kCublasCompute32F, kCublasGemmDefault);
  if (st != 0)
    return make_error(ErrorCode::cuda, "cublasGemmEx failed (cublasStatus_t " + std::to_string(st) + ") for " +
                                           std::to_string(b.M) + "x" + std::to_string(b.N) + "x" + std::to_string(b.K) +
                                           " " + b.layout);
  return {};
}

}  // namespace

Result<BaselineResult> run_baseline(const LaunchSpec& spec, const TimingOptions& timing, const std::vector<void*>& ptrs,
                                    const Blob& kernel_out) {
  const BaselineSpec& b = *spec.baseline;
  BaselineResult r;
  r.name = baseline_library(b.kind);
  if (r.name.empty()) return make_error(ErrorCode::unsupported, "unknown baseline kind '" + b.kind + "'");
  // A problem cuDNN is known to refuse (packed varlen sequences) is said so before its buffers are looked at.
  if (b.kind == "cudnn_sdpa")
    if (const std::string why = sdpa_refusal(b.sdpa); !why.empty())
      return make_error(ErrorCode::unsupported, "cudnn cannot run this: " + why);
  auto buffer = [&](const std::string& name) -> Result<void*> {
    const int i = buffer_named(spec, name);
    if (i < 0) return make_error(ErrorCode::invalid_argument, "the baseline names a buffer '" + name + "' the launch lacks");
    return ptrs[static_cast<std::size_t>(i)];
  };
  const int ic = buffer_named(spec, b.compared_output());
  if (ic < 0 || spec.buffers[static_cast<std::size_t>(ic)].dtype != b.out ||
      kernel_out.size() != spec.buffers[static_cast<std::size_t>(ic)].bytes())
    return make_error(ErrorCode::invalid_argument, "the baseline's output does not match buffer '" + b.compared_output() + "'");
  const BufferSpec& c = spec.buffers[static_cast<std::size_t>(ic)];
  Buffers out;
  out.ptrs.push_back(nullptr);
  TL_CUDA(cudaMalloc(&out.ptrs[0], c.bytes()), "allocating the baseline's output");
  TL_CUDA(cudaMemset(out.ptrs[0], 0xFF, c.bytes()), "poisoning the baseline's output");

  LaunchFn launch;
  if (b.kind == "cublas_gemm") {
    if (b.layout != "nt" && b.layout != "nn")
      return make_error(ErrorCode::invalid_argument, "baseline layout '" + b.layout + "' is neither nt nor nn");
    auto A = buffer(b.a);
    if (!A) return A.status();
    auto B = buffer(b.b);
    if (!B) return B.status();
    launch = [&b, A = *A, B = *B, C = out.ptrs[0]](cudaStream_t stream) { return cublas_gemm(b, A, B, C, stream); };
  } else {
    const SdpaBaseline& a = b.sdpa;
    std::vector<std::string> names = {a.q, a.k, a.v};
    if (a.backward) names.insert(names.end(), {a.o, a.d_o, a.lse});
    if (!a.backward && !a.sinks.empty()) names.push_back(a.sinks);
    std::vector<const void*> in;
    for (const std::string& name : names) {
      auto p = buffer(name);
      if (!p) return p.status();
      in.push_back(*p);
    }
    auto l = cudnn_sdpa_launch(b, in, out.ptrs[0]);
    if (!l) return l.status();
    launch = std::move(*l);
  }
  const std::string what = library_title(r.name);
  TL_RETURN_IF_ERROR(launch(nullptr));
  TL_CUDA(cudaDeviceSynchronize(), "running " + what);
  Blob host(c.bytes());
  TL_CUDA(cudaMemcpy(host.data(), out.ptrs[0], host.size(), cudaMemcpyDeviceToHost), "reading back " + what + "'s output");
  // Normwise: the largest difference against the largest baseline magnitude (elementwise ratios blow up near 0).
  double diff = 0, scale = 0;
  for (std::uint64_t i = 0; i < c.count; ++i) {
    const double x = load_element(host.data(), b.out, i), y = load_element(kernel_out.data(), b.out, i);
    if (std::isnan(x) || std::isnan(y)) {
      diff = std::numeric_limits<double>::infinity();
      continue;
    }
    diff = std::max(diff, std::abs(x - y));
    scale = std::max(scale, std::abs(x));
  }
  r.rel_vs_kernel = scale > 0 ? diff / scale : diff;
  if (timing.repeat > 0) {
    auto times = timed_runs(launch, timing, what);
    if (!times) return times.status();
    r.times_ms = std::move(*times);
    r.time_ms = compute_stats(r.times_ms);
  }
  return r;
}

}  // namespace tl::cuda_detail
