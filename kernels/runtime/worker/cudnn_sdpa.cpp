// The cuDNN baseline of attention (`--vs cudnn`): cuDNN's SDPA forward graph, built with the cudnn-frontend headers
// over the launch's own Q, K, V into an O of its own; libcudnn is opened at run time (cudnn_library.hpp).
#include "runtime/worker/gpu.hpp"

#if TL_HAVE_CUDNN
// The frontend's JSON (serialization) is left out: the build keeps one nlohmann_json, the system's.
#define CUDNN_FRONTEND_SKIP_JSON_LIB
#include <cudnn_frontend.h>
#endif

#include <exception>
#include <memory>
#include <unordered_map>

#include "runtime/worker/cudnn_library.hpp"

#if TL_HAVE_CUDNN
// The libcudnn entry points the frontend calls, forwarded to the library cudnn_library() opened. The frontend's own
// dynamic-loading mode would also dlopen a second CUDA runtime (libcudart.so.12 or .13, whichever it finds first) for
// its runtime calls; compiled plainly, those go to the runtime TileLab links statically, on the worker's context.
// open_cudnn_library checks every name below exists before any is called. Hidden (this file is compiled with
// -fvisibility=hidden): a process that also loads libcudnn itself keeps calling its own.
#define TL_CUDNN_FORWARD(ret, name, params, args)                                       \
  extern "C" ret CUDNNWINAPI name params {                                              \
    static const auto fn = reinterpret_cast<decltype(&name)>(tl::cudnn_symbol(#name)); \
    return fn args;                                                                     \
  }
TL_CUDNN_FORWARD(size_t, cudnnGetVersion, (void), ())
TL_CUDNN_FORWARD(cudnnStatus_t, cudnnCreate, (cudnnHandle_t* handle), (handle))
TL_CUDNN_FORWARD(cudnnStatus_t, cudnnDestroy, (cudnnHandle_t handle), (handle))
TL_CUDNN_FORWARD(cudnnStatus_t, cudnnGetStream, (cudnnHandle_t handle, cudaStream_t* stream), (handle, stream))
TL_CUDNN_FORWARD(cudnnStatus_t, cudnnSetStream, (cudnnHandle_t handle, cudaStream_t stream), (handle, stream))
TL_CUDNN_FORWARD(const char*, cudnnGetErrorString, (cudnnStatus_t status), (status))
TL_CUDNN_FORWARD(void, cudnnGetLastErrorString, (char* message, size_t max_size), (message, max_size))
TL_CUDNN_FORWARD(cudnnStatus_t, cudnnBackendCreateDescriptor,
                 (cudnnBackendDescriptorType_t type, cudnnBackendDescriptor_t* descriptor), (type, descriptor))
TL_CUDNN_FORWARD(cudnnStatus_t, cudnnBackendDestroyDescriptor, (cudnnBackendDescriptor_t descriptor), (descriptor))
TL_CUDNN_FORWARD(cudnnStatus_t, cudnnBackendSetAttribute,
                 (cudnnBackendDescriptor_t descriptor, cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type,
                  int64_t count, const void* elements),
                 (descriptor, name, type, count, elements))
TL_CUDNN_FORWARD(cudnnStatus_t, cudnnBackendGetAttribute,
                 (cudnnBackendDescriptor_t const descriptor, cudnnBackendAttributeName_t name,
                  cudnnBackendAttributeType_t type, int64_t requested, int64_t* count, void* elements),
                 (descriptor, name, type, requested, count, elements))
TL_CUDNN_FORWARD(cudnnStatus_t, cudnnBackendFinalize, (cudnnBackendDescriptor_t descriptor), (descriptor))
TL_CUDNN_FORWARD(cudnnStatus_t, cudnnBackendExecute,
                 (cudnnHandle_t handle, cudnnBackendDescriptor_t plan, cudnnBackendDescriptor_t pack), (handle, plan, pack))
#undef TL_CUDNN_FORWARD
#endif

namespace tl::cuda_detail {

#if TL_HAVE_CUDNN

namespace {

namespace fe = cudnn_frontend;

// The worker's cuDNN handle, created once on its device (the legacy default stream, as the timed runs use).
Result<cudnnHandle_t> cudnn_handle() {
  static const Result<cudnnHandle_t> handle = []() -> Result<cudnnHandle_t> {
    const Result<CudnnLibrary>& lib = cudnn_library();
    if (!lib) return lib.status();
    cudnnHandle_t h = nullptr;
    if (cudnnStatus_t st = cudnnCreate(&h); st != CUDNN_STATUS_SUCCESS)
      return make_error(ErrorCode::cuda, "cudnnCreate failed (cudnn " + std::to_string(lib->version) + " at " +
                                             lib->path + "): " + cudnnGetErrorString(st));
    return h;
  }();
  return handle;
}

// One SDPA graph built for a problem, its plan chosen, with its Stats output and workspace; uids 1-5 are Q, K, V, O,
// Stats in sdpa_tensors' order.
struct SdpaRun {
  cudnnHandle_t handle = nullptr;
  fe::graph::Graph graph;
  std::unordered_map<std::int64_t, void*> pack;
  Buffers own;  // Stats, workspace
};

Status cannot_run(const std::string& step, fe::error_t e) {
  return make_error(ErrorCode::unsupported, "cudnn cannot run this: " + step + ": " + e.get_message());
}

Result<std::function<Status()>> build(const BaselineSpec& b, const void* q, const void* k, const void* v, void* o) {
  auto handle = cudnn_handle();
  if (!handle) return handle.status();
  if (b.in != b.out || (b.in != DType::bf16 && b.in != DType::f16))
    return make_error(ErrorCode::unsupported, std::string("cudnn cannot run this: its SDPA takes bf16 or f16 Q, K, V and "
                                                          "O, not ") + dtype_name(b.in) + " in, " + dtype_name(b.out) + " out");
  auto run = std::make_shared<SdpaRun>();
  run->handle = *handle;
  fe::graph::Graph& g = run->graph;
  g.set_io_data_type(b.in == DType::bf16 ? fe::DataType_t::BFLOAT16 : fe::DataType_t::HALF)
      .set_intermediate_data_type(fe::DataType_t::FLOAT)
      .set_compute_data_type(fe::DataType_t::FLOAT);
  const std::vector<SdpaTensor> t = sdpa_tensors(b.sdpa);
  auto input = [&](std::size_t i) {
    return g.tensor(fe::graph::Tensor_attributes()
                        .set_name(t[i].name)
                        .set_uid(static_cast<std::int64_t>(i + 1))
                        .set_dim(t[i].dims)
                        .set_stride(t[i].strides));
  };
  auto Q = input(0), K = input(1), V = input(2);
  auto options = fe::graph::SDPA_attributes()
                     .set_name("sdpa")
                     .set_generate_stats(true)  // the LSE our kernels write too
                     .set_attn_scale(static_cast<float>(b.sdpa.scale));
  // Equal lengths: the top-left mask is the same one, and older cuDNN releases take it on more shapes.
  if (b.sdpa.causal && b.sdpa.seq_q == b.sdpa.seq_k) options.set_causal_mask(true);
  else if (b.sdpa.causal) options.set_causal_mask_bottom_right(true);
  auto [O, stats] = g.sdpa(Q, K, V, options);
  O->set_output(true).set_uid(4).set_dim(t[3].dims).set_stride(t[3].strides);
  stats->set_output(true).set_uid(5).set_data_type(fe::DataType_t::FLOAT).set_dim(t[4].dims).set_stride(t[4].strides);

  if (auto e = g.validate(); !e.is_good()) return cannot_run("validating the graph", e);
  if (auto e = g.build_operation_graph(run->handle); !e.is_good()) return cannot_run("building the graph", e);
  if (auto e = g.create_execution_plans({fe::HeurMode_t::A}); !e.is_good()) return cannot_run("finding plans", e);
  if (auto e = g.check_support(run->handle); !e.is_good()) return cannot_run("checking support", e);
  if (auto e = g.build_plans(run->handle); !e.is_good()) return cannot_run("building a plan", e);
  std::int64_t workspace = 0;
  if (auto e = g.get_workspace_size(workspace); !e.is_good()) return cannot_run("sizing the workspace", e);

  const std::size_t stats_bytes = static_cast<std::size_t>(b.sdpa.batch * b.sdpa.heads * b.sdpa.seq_q) * sizeof(float);
  run->own.ptrs = {nullptr, nullptr};
  TL_CUDA(cudaMalloc(&run->own.ptrs[0], stats_bytes), "allocating cuDNN's Stats");
  if (workspace > 0)
    TL_CUDA(cudaMalloc(&run->own.ptrs[1], static_cast<std::size_t>(workspace)), "allocating cuDNN's workspace");
  run->pack = {{1, const_cast<void*>(q)}, {2, const_cast<void*>(k)}, {3, const_cast<void*>(v)}, {4, o},
               {5, run->own.ptrs[0]}};
  return std::function<Status()>([run]() -> Status {
    try {
      if (auto e = run->graph.execute(run->handle, run->pack, run->own.ptrs[1]); !e.is_good())
        return make_error(ErrorCode::cuda, "cuDNN's SDPA failed: " + e.get_message());
    } catch (const std::exception& e) {
      return make_error(ErrorCode::cuda, std::string("cuDNN's SDPA failed: ") + e.what());
    }
    return Status::success();
  });
}

}  // namespace

Result<std::function<Status()>> cudnn_sdpa_launch(const BaselineSpec& b, const void* q, const void* k, const void* v,
                                                  void* o) {
  if (const std::string why = sdpa_refusal(b.sdpa); !why.empty())
    return make_error(ErrorCode::unsupported, "cudnn cannot run this: " + why);
  // The frontend throws on some misuse and on missing backend features; none of it may cross into the worker loop.
  try {
    return build(b, q, k, v, o);
  } catch (const std::exception& e) {
    return make_error(ErrorCode::unsupported, std::string("cudnn cannot run this: ") + e.what());
  }
}

#else

Result<std::function<Status()>> cudnn_sdpa_launch(const BaselineSpec&, const void*, const void*, const void*, void*) {
  return make_error(ErrorCode::unsupported,
                    "this tilelab was built without the cuDNN baseline: cudnn.h or the cudnn-frontend headers were "
                    "missing when it was built (see README, --vs cudnn)");
}

#endif

}  // namespace tl::cuda_detail
