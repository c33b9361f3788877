// The library baseline of a launch (`--vs cublas|cudnn`): cuBLAS's GEMM or cuDNN's SDPA (cudnn_sdpa.cpp), each
// library opened at run time, on the launch's own buffers, checked against the kernel's output and timed like it.
#include <cuda_runtime_api.h>

#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>

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

// dlsym of `name` into `fn`; the first missing one is what `error` says.
template <class Fn>
void bind(void* lib, Fn& fn, const char* name, const char* library, std::string& error) {
  fn = reinterpret_cast<Fn>(dlsym(lib, name));
  if (!fn && error.empty()) error = std::string(library) + " has no " + name;
}

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
    bind(lib, c.create, "cublasCreate_v2", "libcublas", c.error);
    bind(lib, c.set_stream, "cublasSetStream_v2", "libcublas", c.error);
    bind(lib, c.gemm_ex, "cublasGemmEx", "libcublas", c.error);
    bind(lib, c.destroy, "cublasDestroy_v2", "libcublas", c.error);
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

// [SECTION] cuBLASLt's FP8 matmul (gemm.fp8's baseline)

// libcublasLt, opened at first use like libcublas. Values of cublasLt.h / library_types.h (CUDA 13).
using LtHandle = void*;
using LtDesc = void*;
using LtLayout = void*;
using LtPreference = void*;
struct LtHeuristic {  // cublasLtMatmulHeuristicResult_t
  std::uint64_t algo[8];
  std::size_t workspace_bytes;
  int state;
  float waves;
  int reserved[4];
};
constexpr int kCudaR8fE4m3 = 28;
constexpr int kLtTransA = 3, kLtTransB = 4, kLtAScalePointer = 17, kLtBScalePointer = 18, kLtFastAccum = 25,
              kLtAScaleMode = 31, kLtBScaleMode = 32;
constexpr int kLtScaleScalar = 0, kLtScaleOuterVec = 3, kLtScaleVec128 = 4, kLtScaleBlock128 = 5;
constexpr int kLtMaxWorkspace = 1;
constexpr std::size_t kLtWorkspaceBytes = 32u << 20;

struct CublasLt {
  int (*create)(LtHandle*) = nullptr;
  int (*desc_create)(LtDesc*, int, int) = nullptr;
  int (*desc_set)(LtDesc, int, const void*, std::size_t) = nullptr;
  int (*desc_destroy)(LtDesc) = nullptr;
  int (*layout_create)(LtLayout*, int, std::uint64_t, std::uint64_t, std::int64_t) = nullptr;
  int (*layout_destroy)(LtLayout) = nullptr;
  int (*pref_create)(LtPreference*) = nullptr;
  int (*pref_set)(LtPreference, int, const void*, std::size_t) = nullptr;
  int (*pref_destroy)(LtPreference) = nullptr;
  int (*heuristic)(LtHandle, LtDesc, LtLayout, LtLayout, LtLayout, LtLayout, LtPreference, int, LtHeuristic*,
                   int*) = nullptr;
  int (*matmul)(LtHandle, LtDesc, const void*, const void*, LtLayout, const void*, LtLayout, const void*, const void*,
                LtLayout, void*, LtLayout, const void*, void*, std::size_t, cudaStream_t) = nullptr;
  LtHandle handle = nullptr;
  std::string error;
};

CublasLt& cublas_lt() {
  static CublasLt c = [] {
    CublasLt c;
    std::vector<std::string> tries = {"libcublasLt.so.13", "libcublasLt.so"};
    for (std::string& p : wheel_library_paths("libcublasLt.so.13", {"cublas", "cu13"})) tries.push_back(std::move(p));
    const OpenedLibrary opened = open_first_library(tries, "cublasLtMatmul", "libcublasLt");
    void* lib = opened.handle;
    if (!lib) {
      c.error = "cannot load libcublasLt.so.13 (install the CUDA 13 cuBLAS library or add its directory to "
                "LD_LIBRARY_PATH): " + opened.last_error;
      return c;
    }
    bind(lib, c.create, "cublasLtCreate", "libcublasLt", c.error);
    bind(lib, c.desc_create, "cublasLtMatmulDescCreate", "libcublasLt", c.error);
    bind(lib, c.desc_set, "cublasLtMatmulDescSetAttribute", "libcublasLt", c.error);
    bind(lib, c.desc_destroy, "cublasLtMatmulDescDestroy", "libcublasLt", c.error);
    bind(lib, c.layout_create, "cublasLtMatrixLayoutCreate", "libcublasLt", c.error);
    bind(lib, c.layout_destroy, "cublasLtMatrixLayoutDestroy", "libcublasLt", c.error);
    bind(lib, c.pref_create, "cublasLtMatmulPreferenceCreate", "libcublasLt", c.error);
    bind(lib, c.pref_set, "cublasLtMatmulPreferenceSetAttribute", "libcublasLt", c.error);
    bind(lib, c.pref_destroy, "cublasLtMatmulPreferenceDestroy", "libcublasLt", c.error);
    bind(lib, c.heuristic, "cublasLtMatmulAlgoGetHeuristic", "libcublasLt", c.error);
    bind(lib, c.matmul, "cublasLtMatmul", "libcublasLt", c.error);
    if (!c.error.empty()) return c;
    if (int st = c.create(&c.handle); st != 0) c.error = "cublasLtCreate failed (cublasStatus_t " + std::to_string(st) + ")";
    return c;
  }();
  return c;
}

// One FP8 matmul set up for a problem: its descriptors, the algorithm cuBLASLt's heuristic chose, its workspace and
// the block scales as cuBLASLt reads them.
struct LtFp8Run {
  LtDesc desc = nullptr;
  LtLayout a = nullptr, b = nullptr, d = nullptr;
  LtHeuristic heuristic{};
  Buffers own;  // the workspace, then rearranged scales
  ~LtFp8Run() {
    CublasLt& lt = cublas_lt();
    for (LtLayout l : {a, b, d})
      if (l) lt.layout_destroy(l);
    if (desc) lt.desc_destroy(desc);
  }
};

Status lt_cannot(const BaselineSpec& b, const std::string& why) {
  return make_error(ErrorCode::unsupported, "cublasLt cannot run this: " + why + " (" + std::to_string(b.M) + "x" +
                                                std::to_string(b.N) + "x" + std::to_string(b.K) + ", scaling=" +
                                                b.scaling + ")");
}

// Row-major C[M,N] = (sA A[M,K]) (sB B[N,K])^T as cuBLASLt's column-major D[N,M] = op(A') op(B') with A' = our B
// (K x N column-major, transposed: the TN form its FP8 matmul takes) and B' = our A (K x M): the operands swap, and
// so do the scales (A' is scaled by scale_B, B' by scale_A). Row-wise: outer vectors (A' N long, B' M long), as ours.
// Block: A' (the 128 x 128-blocked weights) takes 128 x 128 blocks, B' (the activations) 1 x 128 blocks; cuBLASLt
// reads the 1 x 128 scales M-major (scale (m, kb) at kb M + m, PyTorch's "outer-dim-major" for _scaled_mm) and the
// 128 x 128 ones with the K blocks padded to a multiple of 4: both are copied so once, before anything is timed
// (the 1 x 128 ones not where they are M-major already: `scale_a_mn`, gemm.fp8's scale_a_layout=mn).
Result<LaunchFn> cublaslt_fp8_launch(const BaselineSpec& b, const void* A, const void* B, const void* scale_a,
                                     const void* scale_b, void* C) {
  CublasLt& lt = cublas_lt();
  if (!lt.error.empty()) return make_error(ErrorCode::unsupported, lt.error);
  auto out = cuda_data_type(b.out);
  if (!out) return out.status();
  auto run = std::make_shared<LtFp8Run>();
  const int compute = kCublasCompute32F, scale_type = kCudaR32F;
  if (int st = lt.desc_create(&run->desc, compute, scale_type); st != 0)
    return make_error(ErrorCode::cuda, "cublasLtMatmulDescCreate failed (cublasStatus_t " + std::to_string(st) + ")");
  const int trans_a = kCublasOpT, trans_b = kCublasOpN;
  int mode_a = kLtScaleScalar, mode_b = kLtScaleScalar;
  const void* sa = scale_b;  // A' is our B
  const void* sb = scale_a;
  const std::size_t kb = static_cast<std::size_t>((b.K + 127) / 128);
  auto alloc = [&](std::size_t bytes, const std::string& what) -> Result<void*> {
    void* p = nullptr;
    TL_CUDA(cudaMalloc(&p, bytes), "allocating " + what);
    run->own.ptrs.push_back(p);
    return p;
  };
  auto workspace = alloc(kLtWorkspaceBytes, "cuBLASLt's workspace");
  if (!workspace) return workspace.status();
  if (b.scaling == "row") {
    mode_a = mode_b = kLtScaleOuterVec;
  } else if (b.scaling == "block") {
    mode_a = kLtScaleBlock128;
    mode_b = kLtScaleVec128;
    const std::size_t nb = static_cast<std::size_t>((b.N + 127) / 128), kb4 = (kb + 3) / 4 * 4, M = static_cast<std::size_t>(b.M);
    auto padded = alloc(nb * kb4 * 4, "cuBLASLt's 128 x 128 block scales");
    if (!padded) return padded.status();
    void* weights = *padded;
    TL_CUDA(cudaMemset(weights, 0, nb * kb4 * 4), "clearing cuBLASLt's 128 x 128 block scales");
    TL_CUDA(cudaMemcpy2D(weights, kb4 * 4, scale_b, kb * 4, kb * 4, nb, cudaMemcpyDeviceToDevice),
            "padding the 128 x 128 block scales for cuBLASLt");
    sa = weights;
    sb = scale_a;
    if (!b.scale_a_mn) {
      auto m_major = alloc(M * kb * 4, "cuBLASLt's 1 x 128 block scales");
      if (!m_major) return m_major.status();
      void* acts = *m_major;
      for (std::size_t k = 0; k < kb; ++k)  // column k of scale_A [M, kb] becomes row k of [kb, M]
        TL_CUDA(cudaMemcpy2D(static_cast<float*>(acts) + k * M, 4, static_cast<const float*>(scale_a) + k, kb * 4, 4,
                             M, cudaMemcpyDeviceToDevice),
                "laying out the 1 x 128 block scales M-major for cuBLASLt");
      sb = acts;
    }
  } else if (b.scaling != "tensor") {
    return lt_cannot(b, "unknown scaling '" + b.scaling + "'");
  }
  auto set = [&](int attr, const void* value, std::size_t bytes) -> Status {
    if (int st = lt.desc_set(run->desc, attr, value, bytes); st != 0)
      return lt_cannot(b, "cublasLtMatmulDescSetAttribute(" + std::to_string(attr) + ") refused (cublasStatus_t " +
                              std::to_string(st) + "): this cuBLASLt lacks the scale mode");
    return Status::success();
  };
  TL_RETURN_IF_ERROR(set(kLtTransA, &trans_a, sizeof trans_a));
  TL_RETURN_IF_ERROR(set(kLtTransB, &trans_b, sizeof trans_b));
  TL_RETURN_IF_ERROR(set(kLtAScalePointer, &sa, sizeof sa));
  TL_RETURN_IF_ERROR(set(kLtBScalePointer, &sb, sizeof sb));
  if (mode_a != kLtScaleScalar) TL_RETURN_IF_ERROR(set(kLtAScaleMode, &mode_a, sizeof mode_a));
  if (mode_b != kLtScaleScalar) TL_RETURN_IF_ERROR(set(kLtBScaleMode, &mode_b, sizeof mode_b));
  const std::int8_t fast_accum = b.fast_accum ? 1 : 0;
  TL_RETURN_IF_ERROR(set(kLtFastAccum, &fast_accum, sizeof fast_accum));
  const auto M = static_cast<std::uint64_t>(b.M), N = static_cast<std::uint64_t>(b.N), K = static_cast<std::uint64_t>(b.K);
  if (lt.layout_create(&run->a, kCudaR8fE4m3, K, N, b.K) != 0 || lt.layout_create(&run->b, kCudaR8fE4m3, K, M, b.K) != 0 ||
      lt.layout_create(&run->d, *out, N, M, b.N) != 0)
    return make_error(ErrorCode::cuda, "cublasLtMatrixLayoutCreate failed");
  LtPreference pref = nullptr;
  if (int st = lt.pref_create(&pref); st != 0)
    return make_error(ErrorCode::cuda, "cublasLtMatmulPreferenceCreate failed (cublasStatus_t " + std::to_string(st) + ")");
  const std::uint64_t ws = kLtWorkspaceBytes;
  int found = 0;
  int st = lt.pref_set(pref, kLtMaxWorkspace, &ws, sizeof ws);
  if (st == 0) st = lt.heuristic(lt.handle, run->desc, run->a, run->b, run->d, run->d, pref, 1, &run->heuristic, &found);
  lt.pref_destroy(pref);
  if (st != 0 || found < 1)
    return lt_cannot(b, "cublasLtMatmulAlgoGetHeuristic found no e4m3 algorithm (cublasStatus_t " + std::to_string(st) +
                            ")");
  return LaunchFn([run, A, B, C, &lt, &b](cudaStream_t stream) -> Status {
    const float alpha = 1.0f, beta = 0.0f;
    if (int st = lt.matmul(lt.handle, run->desc, &alpha, B, run->a, A, run->b, &beta, C, run->d, C, run->d,
                           run->heuristic.algo, run->own.ptrs[0], kLtWorkspaceBytes, stream);
        st != 0)
      return lt_cannot(b, "cublasLtMatmul failed (cublasStatus_t " + std::to_string(st) + ")");
    return Status::success();
  });
}

}  // namespace

Result<BaselineResult> run_baseline(const LaunchSpec& spec, const TimingOptions& timing, const std::vector<void*>& ptrs,
                                    const Blob& kernel_out) {
  const BaselineSpec& b = *spec.baseline;
  BaselineResult r;
  r.name = baseline_library(b.kind);
  if (r.name.empty()) return make_error(ErrorCode::unsupported, "unknown baseline kind '" + b.kind + "'");
  // A problem cuDNN is known to refuse is said so before its buffers are looked at.
  if (b.kind == "cudnn_sdpa")
    if (const std::string why = sdpa_refusal(b.sdpa); !why.empty())
      return make_error(ErrorCode::unsupported, "cudnn cannot run this: " + why);
  // The launch's buffers of these names, in order.
  auto buffers = [&](const std::vector<std::string>& names) -> Result<std::vector<const void*>> {
    std::vector<const void*> in;
    for (const std::string& name : names) {
      const int i = buffer_named(spec, name);
      if (i < 0) return make_error(ErrorCode::invalid_argument, "the baseline names a buffer '" + name + "' the launch lacks");
      in.push_back(ptrs[static_cast<std::size_t>(i)]);
    }
    return in;
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
    auto in = buffers({b.a, b.b});
    if (!in) return in.status();
    launch = [&b, A = (*in)[0], B = (*in)[1], C = out.ptrs[0]](cudaStream_t stream) { return cublas_gemm(b, A, B, C, stream); };
  } else if (b.kind == "cublaslt_fp8") {
    auto in = buffers({b.a, b.b, b.scale_a, b.scale_b});
    if (!in) return in.status();
    auto l = cublaslt_fp8_launch(b, (*in)[0], (*in)[1], (*in)[2], (*in)[3], out.ptrs[0]);
    if (!l) return l.status();
    launch = std::move(*l);
  } else {
    const SdpaBaseline& a = b.sdpa;
    std::vector<std::string> names = {a.q, a.k, a.v};
    if (a.backward) names.insert(names.end(), {a.o, a.d_o, a.lse});
    if (!a.backward && !a.sinks.empty()) names.push_back(a.sinks);
    auto in = buffers(names);
    if (!in) return in.status();
    auto l = cudnn_sdpa_launch(b, *in, out.ptrs[0]);
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
