// The worker process's CUDA side: launches run in this process, request handlers, errors, TMA descriptors, the
// built-in kernels, and (in cuda_detail) the device state, raw launches and event timing its files share.
#pragma once

#include <cuda_runtime_api.h>

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <utility>
#include <vector>
#include <string>

#include "runtime/device/device.hpp"
#include "runtime/worker/channel.hpp"
#include "runtime/worker/launch.hpp"

namespace tl {

// Run a launch in this process. Needs a GPU; returns no_device with the reason when there is none.
Result<LaunchResult> execute_launch(const LaunchSpec& spec);

// Request handlers of the worker loop ("launch", "sweep", "device").
Result<Message> serve_launch(const Message& request, WorkerChannel& channel);
Result<Message> serve_sweep(const Message& request, WorkerChannel& channel);
Result<Message> serve_device(const Message& request, WorkerChannel& channel);

// True once a sticky CUDA error (illegal address, trap, misaligned access, ...) has poisoned this process's
// context: every later CUDA call fails, so the worker reports the error and exits.
bool cuda_context_poisoned();

// A CUDA runtime error (cudaError_t as int) as a Status: fault for kernel faults, no_device, unsupported for an
// image with no code for this GPU, cuda otherwise. Marks the context poisoned when the error is sticky.
Status cuda_status(int cuda_error, const std::string& during);

// Build a TMA descriptor through the driver's cuTensorMapEncodeTiled, fetched with cudaGetDriverEntryPoint
// (TileLab links no libcuda). `global` is a device address.
Result<std::array<std::uint8_t, 128>> encode_tensor_map(const TensorMapSpec& spec, DType dtype, void* global);

// The worker's own kernels (fills, micro-benchmarks), compiled by nvcc at build time into fatbins: the portable
// one (sm_80..sm_90 + PTX) and the sm_90a one (wgmma), which loads only on compute capability 9.0.
enum class BuiltinImage { portable, sm90a };
const Blob& builtin_kernels_image(BuiltinImage image = BuiltinImage::portable);

namespace cuda_detail {

// A CUDA call whose error becomes the function's Status (cuda_status: sticky errors poison the context).
#define TL_CUDA(call, during)                                         \
  do {                                                                \
    cudaError_t tl_err_ = (call);                                     \
    if (tl_err_ != cudaSuccess) return cuda_status(tl_err_, during);  \
  } while (0)

// The worker's device and what it keeps for its lifetime.
struct DeviceState {
  int index = -1;
  DeviceInfo info;
  void* flush = nullptr;  // twice the L2 (and a 16-byte sink), read before each timed run
  std::size_t flush_bytes = 0;
  // Pinned host memory the outputs are read back into, kept and grown: a fresh pageable vector per run costs its
  // zero-fill and a slower copy (tens of ms for a 32 MB output, every run of a sweep).
  unsigned char* staging = nullptr;
  std::size_t staging_bytes = 0;
  // Device memory of the on-device output check (counters, positions, gathered samples), kept and grown.
  unsigned char* check = nullptr;
  std::size_t check_bytes = 0;
  std::map<std::pair<std::uint64_t, std::size_t>, cudaLibrary_t> libraries;
  cudaLibrary_t builtin[2] = {nullptr, nullptr};  // by BuiltinImage
};
DeviceState& state();

// Device allocations of one launch; freed on every path (failures after a sticky error are ignored).
struct Buffers {
  std::vector<void*> ptrs;
  ~Buffers() {
    for (void* p : ptrs)
      if (p) cudaFree(p);
  }
};

// Selects the device once per worker process (one worker serves one device) and creates its context.
Status use_device(int index);
const DeviceInfo& current_device();
// A kernel of a built-in fatbin (fills, micro-benchmarks).
Result<cudaKernel_t> builtin_kernel(const char* name, BuiltinImage image = BuiltinImage::portable);
Status launch_raw(cudaKernel_t k, Dim3 grid, Dim3 block, unsigned smem, Dim3 cluster, void** args,
                  cudaStream_t stream = nullptr);
// A code image (cubin, fatbin or PTX) loaded once per worker, and a kernel of it by lowered name.
Result<cudaLibrary_t> load_library(const Blob& image);
Result<cudaKernel_t> get_kernel(cudaLibrary_t lib, const std::string& name);
// A kernel of a loaded image made ready to launch with spec.geometry on the current device `info`: the block and
// shared memory checked against its attributes, its dynamic shared memory allowed, a persistent grid fitted to what
// runs at once (`geometry`), its parameters checked against spec.args; spec.pre's block checked likewise.
struct ReadyKernel {
  cudaKernel_t kernel = nullptr;
  cudaFuncAttributes attributes{};
  LaunchGeometry geometry;
  std::optional<LaunchGeometry> pre;  // LaunchSpec::pre
};
Result<ReadyKernel> ready_kernel(cudaLibrary_t lib, const std::string& name, const LaunchSpec& spec,
                                 const DeviceInfo& info, const std::string& what);
// One run of a ready kernel on `stream`: its pre-launch, if any, then its launch, with the same parameters.
Status launch_ready(const ReadyKernel& r, void** params, cudaStream_t stream);
// A launch's parameters, each in a 128-byte slot aligned for a tensor map (passed by value, 64-byte aligned);
// pointers() is what cudaLaunchKernelExC takes.
struct KernelParams {
  struct alignas(64) Slot {
    unsigned char bytes[128];
  };
  std::vector<Slot> slots;
  std::vector<void*> pointers();
};
// spec.args laid out over `ptrs`, the device addresses of spec.buffers (tensor maps encoded over them).
Result<KernelParams> pack_params(const LaunchSpec& spec, const std::vector<void*>& ptrs, const std::string& what);
// Times `launch` with CUDA events: `warmup` untimed runs, then `repeat` timed ones; per-run milliseconds.
Result<Stats> time_runs(const std::function<Status()>& launch, int warmup, int repeat);
// Overwrites a buffer twice the L2's size, so the next run starts with a cold L2.
Status flush_l2();
// One launch of what is timed, on `stream` (null: the legacy default stream; the graph timer captures launches on
// a stream of its own).
using LaunchFn = std::function<Status(cudaStream_t stream)>;
// `timing` with what the timer needs settled for `launch`: Timer::graph's launches per graph when not given
// (graph_launches_for one launch's event time). Everything timed in one launch request uses the same.
Result<TimingOptions> resolve_timing(const LaunchFn& launch, TimingOptions timing, const std::string& what);
// The timed runs of resolved TimingOptions (warm-up, repeats, L2 flushes, the timer) of one launch, or of several
// alternated run by run; per-run milliseconds of each (a graph replay's time divided by its launches).
Result<std::vector<std::vector<double>>> timed_runs(const std::vector<LaunchFn>& launches, const TimingOptions& timing,
                                                    const std::string& what);
Result<std::vector<double>> timed_runs(const LaunchFn& launch, const TimingOptions& timing, const std::string& what);
// The launch's library baseline (LaunchSpec::baseline) on its input buffers `ptrs`, checked against the kernel's
// output `kernel_out` and timed like the kernel (`timing`, resolved).
Result<BaselineResult> run_baseline(const LaunchSpec& spec, const TimingOptions& timing, const std::vector<void*>& ptrs,
                                    const Blob& kernel_out);
// cuDNN's SDPA of a "cudnn_sdpa" baseline (cudnn_sdpa.cpp) over the device buffers `in` (forward: Q, K, V;
// backward: Q, K, V, O, dO, LSE) into `out` (O, or dQ): the graph is built and its plan chosen once; each call of the
// function enqueues one run on the stream it is given. Errors: "cudnn not found: ..." (no libcudnn), "cudnn cannot run
// this: ..." (a problem or shape cuDNN refuses), a build without cuDNN's headers.
Result<LaunchFn> cudnn_sdpa_launch(const BaselineSpec& b, const std::vector<const void*>& in, void* out);

}  // namespace cuda_detail
}  // namespace tl
