// The cuDNN baseline of attention (`--vs cudnn`): cuDNN's SDPA forward or backward graph, built with the
// cudnn-frontend headers over the launch's own buffers into an O (dQ) of its own; libcudnn is opened at run time
// (cudnn_library.hpp).
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

// One SDPA graph built for a problem, its plan chosen, with the outputs of cuDNN's own (forward: Stats; backward: dK,
// dV) and its workspace. A tensor's uid is 1 + its index in sdpa_tensors' order.
struct SdpaRun {
  cudnnHandle_t handle = nullptr;
  fe::graph::Graph graph;
  std::unordered_map<std::int64_t, void*> pack;
  Buffers own;    // cuDNN's own outputs, then the workspace
  Buffers index;  // varlen: the sequence lengths and ragged offsets (int32)
};

Status cannot_run(const std::string& step, fe::error_t e) {
  return make_error(ErrorCode::unsupported, "cudnn cannot run this: " + step + ": " + e.get_message());
}

Result<LaunchFn> build(const BaselineSpec& b, const std::vector<const void*>& in, void* out) {
  auto handle = cudnn_handle();
  if (!handle) return handle.status();
  if (b.in != b.out || (b.in != DType::bf16 && b.in != DType::f16))
    return make_error(ErrorCode::unsupported, std::string("cudnn cannot run this: its SDPA takes bf16 or f16 tensors, "
                                                          "not ") + dtype_name(b.in) + " in, " + dtype_name(b.out) + " out");
  const SdpaBaseline& a = b.sdpa;
  const bool sinks = !a.backward && !a.sinks.empty();
  if (in.size() != (a.backward ? 6u : sinks ? 4u : 3u))
    return make_error(ErrorCode::internal, "cuDNN's SDPA got " + std::to_string(in.size()) + " input buffers");
  auto run = std::make_shared<SdpaRun>();
  run->handle = *handle;
  fe::graph::Graph& g = run->graph;
  g.set_io_data_type(b.in == DType::bf16 ? fe::DataType_t::BFLOAT16 : fe::DataType_t::HALF)
      .set_intermediate_data_type(fe::DataType_t::FLOAT)
      .set_compute_data_type(fe::DataType_t::FLOAT);
  const std::vector<SdpaTensor> t = sdpa_tensors(a);
  auto uid = [](std::size_t i) { return static_cast<std::int64_t>(i + 1); };
  // Varlen: int32 index tensors [n, 1, 1, 1] copied to the device once, under uids after every tensor of t and the
  // sink logits: the two sequence lengths, then each tensor's ragged offsets.
  const SdpaVarlen lengths = sdpa_varlen(a);
  std::int64_t next_uid = static_cast<std::int64_t>(t.size()) + 2;
  using TensorPtr = std::shared_ptr<fe::graph::Tensor_attributes>;
  auto index = [&](const std::string& name, const std::vector<std::int32_t>& values) -> Result<TensorPtr> {
    const auto n = static_cast<std::int64_t>(values.size());
    const std::size_t bytes = values.size() * sizeof(std::int32_t);
    run->index.ptrs.push_back(nullptr);
    TL_CUDA(cudaMalloc(&run->index.ptrs.back(), bytes), "allocating cuDNN's " + name);
    TL_CUDA(cudaMemcpy(run->index.ptrs.back(), values.data(), bytes, cudaMemcpyHostToDevice), "copying cuDNN's " + name);
    run->pack[next_uid] = run->index.ptrs.back();
    return g.tensor(fe::graph::Tensor_attributes()
                        .set_name(name)
                        .set_uid(next_uid++)
                        .set_dim({n, 1, 1, 1})
                        .set_stride({1, 1, 1, 1})
                        .set_data_type(fe::DataType_t::INT32));
  };
  auto ragged = [&](const TensorPtr& x, std::size_t i) -> Status {
    if (!a.varlen() || lengths.ragged[i].empty()) return Status::success();
    auto offsets = index(t[i].name + " offsets", lengths.ragged[i]);
    if (!offsets) return offsets.status();
    x->set_ragged_offset(*offsets);
    return Status::success();
  };
  auto input = [&](std::size_t i) -> Result<TensorPtr> {
    auto x = g.tensor(fe::graph::Tensor_attributes().set_name(t[i].name).set_uid(uid(i)).set_dim(t[i].dims).set_stride(t[i].strides));
    if (t[i].name == "Stats") x->set_data_type(fe::DataType_t::FLOAT);
    TL_RETURN_IF_ERROR(ragged(x, i));
    return x;
  };
  auto output = [&](const TensorPtr& x, std::size_t i) -> Status {
    x->set_output(true).set_uid(uid(i)).set_dim(t[i].dims).set_stride(t[i].strides);
    if (t[i].name == "Stats") x->set_data_type(fe::DataType_t::FLOAT);
    return ragged(x, i);
  };
  std::vector<TensorPtr> ins(t.size());  // by index in t: Q, K, V (backward: O, Stats, dO too)
  for (std::size_t i = 0; i < (a.backward ? 6u : 3u); ++i) {
    auto x = input(i);
    if (!x) return x.status();
    ins[i] = *x;
  }
  TensorPtr seq_len_q, seq_len_kv;
  if (a.varlen()) {
    auto lq = index("seq_len_q", lengths.seq_len_q);
    if (!lq) return lq.status();
    auto lk = index("seq_len_kv", lengths.seq_len_kv);
    if (!lk) return lk.status();
    seq_len_q = *lq, seq_len_kv = *lk;
  }
  // Equal lengths: the top-left mask is the same one, and older cuDNN releases take it on more shapes.
  // Varlen sequences are bottom-right aligned each by its own lengths (cuDNN's padding mask).
  auto mask = [&](auto& options) {
    if (a.causal && a.seq_q == a.seq_k && !a.varlen()) options.set_causal_mask(true);
    else if (a.causal) options.set_causal_mask_bottom_right(true);
    if (a.window > 0) options.set_diagonal_band_left_bound(static_cast<int>(a.window));
    if (a.varlen()) options.set_padding_mask(true).set_seq_len_q(seq_len_q).set_seq_len_kv(seq_len_kv);
  };
  // Where each tensor lives: ours (`in`, `out`) or cuDNN's own (allocated below, after the plan).
  std::vector<std::size_t> own;  // indices into t
  if (!a.backward) {
    auto options = fe::graph::SDPA_attributes()
                       .set_name("sdpa")
                       .set_generate_stats(true)  // the LSE our kernels write too
                       .set_attn_scale(static_cast<float>(a.scale));
    mask(options);
    // The sink logits (1, heads, 1, 1) f32, under a uid after every tensor of sdpa_tensors.
    const std::int64_t sink_uid = static_cast<std::int64_t>(t.size()) + 1;
    if (sinks)
      options.set_sink_token(g.tensor(fe::graph::Tensor_attributes()
                                          .set_name("sinks")
                                          .set_uid(sink_uid)
                                          .set_dim({1, a.heads, 1, 1})
                                          .set_stride({a.heads, 1, 1, 1})
                                          .set_data_type(fe::DataType_t::FLOAT)));
    auto [O, stats] = g.sdpa(ins[0], ins[1], ins[2], options);
    TL_RETURN_IF_ERROR(output(O, 3));
    TL_RETURN_IF_ERROR(output(stats, 4));
    for (std::size_t i : {0, 1, 2}) run->pack[uid(i)] = const_cast<void*>(in[i]);
    run->pack[uid(3)] = out;
    if (sinks) run->pack[sink_uid] = const_cast<void*>(in[3]);
    own = {4};
  } else {
    auto options = fe::graph::SDPA_backward_attributes().set_name("sdpa_backward").set_attn_scale(static_cast<float>(a.scale));
    mask(options);
    auto [dQ, dK, dV] = g.sdpa_backward(ins[0], ins[1], ins[2], ins[3], ins[5], ins[4], options);
    TL_RETURN_IF_ERROR(output(dQ, 6));
    TL_RETURN_IF_ERROR(output(dK, 7));
    TL_RETURN_IF_ERROR(output(dV, 8));
    // in: Q, K, V, O, dO, LSE; t: Q, K, V, O, Stats, dO, dQ, dK, dV
    for (auto [i, p] : {std::pair{0, in[0]}, {1, in[1]}, {2, in[2]}, {3, in[3]}, {5, in[4]}, {4, in[5]}})
      run->pack[uid(static_cast<std::size_t>(i))] = const_cast<void*>(p);
    run->pack[uid(6)] = out;
    own = {7, 8};
  }

  if (auto e = g.validate(); !e.is_good()) return cannot_run("validating the graph", e);
  if (auto e = g.build_operation_graph(run->handle); !e.is_good()) return cannot_run("building the graph", e);
  if (auto e = g.create_execution_plans({fe::HeurMode_t::A}); !e.is_good()) return cannot_run("finding plans", e);
  if (auto e = g.check_support(run->handle); !e.is_good()) return cannot_run("checking support", e);
  if (auto e = g.build_plans(run->handle); !e.is_good()) return cannot_run("building a plan", e);
  std::int64_t workspace = 0;
  if (auto e = g.get_workspace_size(workspace); !e.is_good()) return cannot_run("sizing the workspace", e);

  for (std::size_t i : own) {
    const std::vector<std::int64_t>& d = t[i].dims;
    const std::size_t bytes =
        static_cast<std::size_t>(d[0] * d[1] * d[2] * d[3]) * (t[i].name == "Stats" ? sizeof(float) : dtype_size(b.in));
    run->own.ptrs.push_back(nullptr);
    TL_CUDA(cudaMalloc(&run->own.ptrs.back(), bytes), "allocating cuDNN's " + t[i].name);
    run->pack[uid(i)] = run->own.ptrs.back();
  }
  run->own.ptrs.push_back(nullptr);
  if (workspace > 0)
    TL_CUDA(cudaMalloc(&run->own.ptrs.back(), static_cast<std::size_t>(workspace)), "allocating cuDNN's workspace");
  return LaunchFn([run](cudaStream_t stream) -> Status {
    try {
      if (cudnnSetStream(run->handle, stream) != CUDNN_STATUS_SUCCESS)
        return make_error(ErrorCode::cuda, "cuDNN's SDPA: cudnnSetStream failed");
      if (auto e = run->graph.execute(run->handle, run->pack, run->own.ptrs.back()); !e.is_good())
        return make_error(ErrorCode::cuda, "cuDNN's SDPA failed: " + e.get_message());
    } catch (const std::exception& e) {
      return make_error(ErrorCode::cuda, std::string("cuDNN's SDPA failed: ") + e.what());
    }
    return Status::success();
  });
}

}  // namespace

Result<LaunchFn> cudnn_sdpa_launch(const BaselineSpec& b, const std::vector<const void*>& in, void* out) {
  // The frontend throws on some misuse and on missing backend features; none of it may cross into the worker loop.
  try {
    return build(b, in, out);
  } catch (const std::exception& e) {
    return make_error(ErrorCode::unsupported, std::string("cudnn cannot run this: ") + e.what());
  }
}

#else

Result<LaunchFn> cudnn_sdpa_launch(const BaselineSpec&, const std::vector<const void*>&, void*) {
  return make_error(ErrorCode::unsupported,
                    "this tilelab was built without the cuDNN baseline: cudnn.h or the cudnn-frontend headers were "
                    "missing when it was built (see README, --vs cudnn)");
}

#endif

}  // namespace tl::cuda_detail
