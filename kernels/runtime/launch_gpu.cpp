// The worker's CUDA path: load images, fill and poison buffers, launch, time with events, map CUDA errors.
#include <cuda.h>  // types only (CUtensorMap); the driver is reached through cudaGetDriverEntryPoint
#include <cuda_runtime_api.h>
#include <cudaTypedefs.h>

#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <type_traits>

#include <nlohmann/json.hpp>

#include "runtime/cuda_util.hpp"
#include "runtime/device.hpp"
#include "runtime/launch.hpp"
#include "runtime/log.hpp"
#include "runtime/timeline.hpp"
#include "runtime/worker.hpp"

extern "C" const unsigned char tl_builtin_fatbin[];
extern "C" const unsigned long long tl_builtin_fatbin_size;
extern "C" const unsigned char tl_hopper_fatbin[];
extern "C" const unsigned long long tl_hopper_fatbin_size;

namespace tl {

namespace detail {
Status parse_launch(const nlohmann::json& j, const Message& m, LaunchSpec& s);
nlohmann::json write_result(const LaunchResult& r, Message& m);
}  // namespace detail

namespace {

std::atomic<bool> g_poisoned{false};

// Errors a faulting kernel leaves behind.
bool kernel_fault(cudaError_t e) {
  switch (e) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchTimeout:
    case cudaErrorAssert:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorLaunchFailure:
    case cudaErrorTensorMemoryLeak:
      return true;
    default:
      return false;
  }
}

// Errors after which the context is unusable: documented as "the process must be terminated and relaunched".
bool sticky_error(cudaError_t e) {
  return kernel_fault(e) || e == cudaErrorContained || e == cudaErrorECCUncorrectable || e == cudaErrorExternalDevice;
}

ErrorCode classify(cudaError_t e) {
  if (kernel_fault(e)) return ErrorCode::fault;
  switch (e) {
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
    case cudaErrorDevicesUnavailable:
    case cudaErrorInvalidDevice:
    case cudaErrorSystemDriverMismatch:
    case cudaErrorCompatNotSupportedOnDevice:
      return ErrorCode::no_device;
    case cudaErrorNoKernelImageForDevice:
    case cudaErrorInvalidKernelImage:
    case cudaErrorUnsupportedPtxVersion:
    case cudaErrorInvalidPtx:
    case cudaErrorJitCompilerNotFound:
      return ErrorCode::unsupported;
    default:
      return ErrorCode::cuda;
  }
}

const char* hint(cudaError_t e) {
  switch (e) {
    case cudaErrorIllegalAddress: return " (a kernel read or wrote outside its buffers)";
    case cudaErrorLaunchFailure: return " (a kernel faulted or executed a trap)";
    case cudaErrorMisalignedAddress: return " (a kernel accessed memory at an address its width does not align with)";
    case cudaErrorMemoryAllocation: return " (out of device memory)";
    case cudaErrorLaunchOutOfResources: return " (too many registers or threads for this block size)";
    case cudaErrorNoKernelImageForDevice: return " (the image has no code for this GPU's architecture)";
    default: return "";
  }
}

}  // namespace

#define TL_CUDA(call, during)                                         \
  do {                                                                \
    cudaError_t tl_err_ = (call);                                     \
    if (tl_err_ != cudaSuccess) return cuda_status(tl_err_, during);  \
  } while (0)

namespace cuda_detail {
namespace {

// --- device state, kept for the worker's lifetime ---

struct DeviceState {
  int index = -1;
  DeviceInfo info;
  void* flush = nullptr;  // twice the L2, written before each timed run
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

DeviceState& state() {
  static DeviceState s;
  return s;
}

}  // namespace

Status use_device(int index) {
  DeviceState& s = state();
  if (s.index == index) return {};
  if (s.index >= 0)
    return make_error(ErrorCode::unsupported, "this worker already uses device " + std::to_string(s.index) +
                                                  "; one worker serves one device");
  auto dev = query_device(index);
  if (!dev) return dev.status();
  TL_CUDA(cudaSetDevice(index), "selecting device " + std::to_string(index));
  TL_CUDA(cudaFree(nullptr), "creating the CUDA context");
  s.index = index;
  s.info = *dev;
  return {};
}

const DeviceInfo& current_device() { return state().info; }

namespace {

std::uint64_t fnv1a(const Blob& b) {
  std::uint64_t h = 1469598103934665603ull;
  for (std::uint8_t c : b) h = (h ^ c) * 1099511628211ull;
  return h;
}

// Fatbins start with 0xBA55ED50, cubins with an ELF header; anything else is taken for PTX, which must be
// NUL-terminated.
Result<cudaLibrary_t> load_image(const Blob& image) {
  if (image.empty()) return make_error(ErrorCode::invalid_argument, "the launch has an empty code image");
  static const std::uint8_t fatbin_magic[4] = {0x50, 0xED, 0x55, 0xBA};
  bool binary = image.size() >= 4 && (std::memcmp(image.data(), "\x7f" "ELF", 4) == 0 ||
                                      std::memcmp(image.data(), fatbin_magic, 4) == 0);
  Blob storage;
  const void* code = image.data();
  if (!binary && image.back() != 0) {
    storage = image;
    storage.push_back(0);
    code = storage.data();
  }
  cudaLibrary_t lib = nullptr;
  TL_CUDA(cudaLibraryLoadData(&lib, code, nullptr, nullptr, 0, nullptr, nullptr, 0), "loading the code image");
  return lib;
}

// Launch images, loaded once per worker (a sweep relaunches the same cubin many times).
Result<cudaLibrary_t> load_library(const Blob& image) {
  DeviceState& s = state();
  auto key = std::make_pair(fnv1a(image), image.size());
  if (auto it = s.libraries.find(key); it != s.libraries.end()) return it->second;
  if (s.libraries.size() >= 512) {
    // A long sweep: drop the loaded modules rather than grow without bound.
    for (auto& [k, lib] : s.libraries) cudaLibraryUnload(lib);
    s.libraries.clear();
  }
  auto lib = load_image(image);
  if (lib) s.libraries[key] = *lib;
  return lib;
}

Result<cudaKernel_t> get_kernel(cudaLibrary_t lib, const std::string& name) {
  cudaKernel_t k = nullptr;
  cudaError_t e = cudaLibraryGetKernel(&k, lib, name.c_str());
  if (e != cudaSuccess) {
    cudaGetLastError();
    unsigned int count = 0;
    std::string known;
    if (cudaLibraryGetKernelCount(&count, lib) == cudaSuccess && count > 0 && count < 64) {
      std::vector<cudaKernel_t> all(count);
      if (cudaLibraryEnumerateKernels(all.data(), count, lib) == cudaSuccess) {
        for (auto kk : all) {
          const char* n = nullptr;
          if (cudaFuncGetName(&n, reinterpret_cast<const void*>(kk)) == cudaSuccess && n)
            known += (known.empty() ? "" : ", ") + std::string(n);
        }
      }
    }
    return make_error(ErrorCode::not_found, "the code image has no kernel named '" + name + "'" +
                                                (known.empty() ? "" : " (it has: " + known + ")"));
  }
  return k;
}

}  // namespace

Result<cudaKernel_t> builtin_kernel(const char* name, BuiltinImage image) {
  cudaLibrary_t& lib = state().builtin[static_cast<int>(image)];
  if (!lib) {
    auto loaded = load_image(builtin_kernels_image(image));
    if (!loaded) return loaded.status();
    lib = *loaded;
  }
  return get_kernel(lib, name);
}

Status launch_raw(cudaKernel_t k, Dim3 grid, Dim3 block, unsigned smem, Dim3 cluster, void** args) {
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(grid.x, grid.y, grid.z);
  config.blockDim = dim3(block.x, block.y, block.z);
  config.dynamicSmemBytes = smem;
  cudaLaunchAttribute attr[1];
  if (cluster.volume() > 1) {
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = cluster.x;
    attr[0].val.clusterDim.y = cluster.y;
    attr[0].val.clusterDim.z = cluster.z;
    config.attrs = attr;
    config.numAttrs = 1;
  }
  TL_CUDA(cudaLaunchKernelExC(&config, reinterpret_cast<const void*>(k), args), "launching the kernel");
  return {};
}

namespace {

// A persistent grid (LaunchGeometry::persistent, 1-D) shrunk to what this GPU runs at once: whole clusters
// (cudaOccupancyMaxActiveClusters) or blocks per SM x SMs. Call after the dynamic shared memory is allowed.
// Measured on the H100: gemm.wgmma's 66 pairs of CTAs (132 SMs) ran at half the speed of 132 single CTAs, as
// when a few pairs cannot start until others have finished their whole share.
Status fit_persistent_grid(const void* fn, LaunchGeometry& g, int sm_count, const std::string& what) {
  if (!g.persistent || g.grid.y * g.grid.z != 1 || g.cluster.y * g.cluster.z != 1) return {};
  std::uint32_t fit = 0;
  if (g.cluster.x > 1) {
    cudaLaunchConfig_t config{};
    config.gridDim = dim3(g.grid.x, 1, 1);
    config.blockDim = dim3(g.block.x, g.block.y, g.block.z);
    config.dynamicSmemBytes = g.dynamic_smem;
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = g.cluster.x;
    attr[0].val.clusterDim.y = attr[0].val.clusterDim.z = 1;
    config.attrs = attr;
    config.numAttrs = 1;
    int clusters = 0;
    TL_CUDA(cudaOccupancyMaxActiveClusters(&clusters, fn, &config), what + ": counting the clusters that fit at once");
    if (clusters <= 0)
      return make_error(ErrorCode::unsupported, what + ": no cluster of " + std::to_string(g.cluster.x) + " CTAs of " +
                                                    std::to_string(g.dynamic_smem) + " bytes of shared memory fits this GPU");
    fit = static_cast<std::uint32_t>(clusters) * g.cluster.x;
  } else {
    int per_sm = 0;
    TL_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, fn, static_cast<int>(g.block.volume()), g.dynamic_smem),
            what + ": counting the blocks that fit at once");
    if (per_sm <= 0) return {};  // the launch itself will say why
    fit = static_cast<std::uint32_t>(per_sm * std::max(sm_count, 1));
  }
  if (fit < g.grid.x) {
    log::debug(what, ": persistent grid ", g.grid.x, " -> ", fit, " CTAs (what runs at once)");
    g.grid.x = fit;
  } else {
    log::debug(what, ": persistent grid ", g.grid.x, " CTAs fits (", fit, " run at once)");
  }
  return {};
}

Dim3 grid_for(std::uint64_t count) {
  std::uint64_t blocks = (count + 255) / 256;
  std::uint64_t cap = static_cast<std::uint64_t>(std::max(state().info.sm_count, 1)) * 32;
  return {static_cast<std::uint32_t>(std::clamp<std::uint64_t>(blocks, 1, cap)), 1, 1};
}

Status fill_device(void* ptr, const BufferSpec& b) {
  if (b.count == 0) return {};
  auto fill_pattern = [&](std::uint64_t bits) -> Status {
    auto k = builtin_kernel("tl_fill_pattern");
    if (!k) return k.status();
    unsigned long long count = b.count, pattern = bits;
    unsigned size = static_cast<unsigned>(dtype_size(b.dtype));
    void* args[] = {&ptr, &count, &size, &pattern};
    return launch_raw(*k, grid_for(b.count), {256, 1, 1}, 0, {}, args);
  };
  if (b.role == BufferRole::output) return fill_pattern(poison_bits(b.dtype));
  if (b.role == BufferRole::scratch || b.fill.kind == Fill::Kind::zeros) {
    TL_CUDA(cudaMemset(ptr, 0, b.bytes()), "clearing buffer '" + b.name + "'");
    return {};
  }
  switch (b.fill.kind) {
    case Fill::Kind::uniform: {
      auto k = builtin_kernel("tl_fill_uniform");
      if (!k) return k.status();
      unsigned long long count = b.count, seed = b.fill.seed;
      int dtype = static_cast<int>(b.dtype);
      double lo = b.fill.lo, hi = b.fill.hi;
      void* args[] = {&ptr, &count, &dtype, &seed, &lo, &hi};
      return launch_raw(*k, grid_for(b.count), {256, 1, 1}, 0, {}, args);
    }
    case Fill::Kind::constant: {
      std::uint64_t bits = 0;
      store_element(&bits, b.dtype, 0, b.fill.value);
      return fill_pattern(bits);
    }
    case Fill::Kind::data:
      TL_CUDA(cudaMemcpy(ptr, b.data.data(), b.bytes(), cudaMemcpyHostToDevice), "uploading buffer '" + b.name + "'");
      return {};
    case Fill::Kind::zeros: break;
  }
  return {};
}

// Device allocations of one launch; freed on every path (failures after a sticky error are ignored).
struct Buffers {
  std::vector<void*> ptrs;
  ~Buffers() {
    for (void* p : ptrs)
      if (p) cudaFree(p);
  }
};

// Catches a spec that does not match the kernel's signature before it runs with garbage parameters. Only the
// parameters the launch passes are probed: a probe past the last one would fail, and every failed call shows up as
// an error under compute-sanitizer. A kernel taking more parameters than passed is caught on the host, from its PTX
// (to_launch_spec).
Status check_params(cudaKernel_t k, const LaunchSpec& spec) {
  std::vector<std::size_t> sizes;
  for (std::size_t n = 0; n < spec.args.size(); ++n) {
    std::size_t offset = 0, size = 0;
    if (cudaFuncGetParamInfo(reinterpret_cast<const void*>(k), n, &offset, &size) != cudaSuccess) {
      cudaGetLastError();  // not sticky
      if (n == 0) return {};  // no parameter information at all: nothing to compare (the PTX check stands)
      break;                  // the kernel takes only n parameters: reported below
    }
    sizes.push_back(size);
  }
  return check_param_sizes(spec.kernel, spec.args, sizes);
}

// A buffer kept across launches, grown (contents not kept) to at least `bytes` with `alloc` / `release`.
template <typename Alloc, typename Release>
Status grow_kept(unsigned char*& p, std::size_t& have, std::size_t bytes, Alloc alloc, Release release, const std::string& what) {
  if (bytes <= have) return {};
  if (p) release(p);
  p = nullptr;
  have = 0;
  void* fresh = nullptr;
  TL_CUDA(alloc(&fresh, bytes), "allocating " + std::to_string(bytes) + " bytes of " + what);
  p = static_cast<unsigned char*>(fresh);
  have = bytes;
  return {};
}

// At least `bytes` of the pinned read-back buffer.
Result<unsigned char*> staging_buffer(std::size_t bytes) {
  DeviceState& s = state();
  TL_RETURN_IF_ERROR(grow_kept(s.staging, s.staging_bytes, bytes, [](void** q, std::size_t len) { return cudaMallocHost(q, len); },
                               [](void* q) { cudaFreeHost(q); }, "pinned read-back memory"));
  return s.staging;
}

// An output checked where it lies: its poison counted (outputs only) and its sampled positions gathered on the
// device, then only the counters and the samples copied back. o.positions must be set.
Status check_on_device(const void* data, const BufferSpec& b, OutputResult& o) {
  DeviceState& s = state();
  const std::size_t n = o.positions.size(), size = dtype_size(b.dtype);
  const std::size_t pos_off = 16, sample_off = pos_off + n * 8, bytes = sample_off + n * size;
  TL_RETURN_IF_ERROR(grow_kept(s.check, s.check_bytes, bytes, [](void** q, std::size_t len) { return cudaMalloc(q, len); },
                               [](void* q) { cudaFree(q); }, "device memory for the output check"));
  auto* result = reinterpret_cast<unsigned long long*>(s.check);
  auto* positions = reinterpret_cast<unsigned long long*>(s.check + pos_off);
  void* samples = s.check + sample_off;
  static_assert(sizeof(unsigned long long) == sizeof(std::uint64_t));
  TL_CUDA(cudaMemcpy(positions, o.positions.data(), n * 8, cudaMemcpyHostToDevice), "uploading the sample positions");
  const bool poisoned = b.role == BufferRole::output;
  if (poisoned) {
    TL_CUDA(cudaMemset(result, 0, 8), "clearing the poison counter");
    TL_CUDA(cudaMemset(result + 1, 0xFF, 8), "clearing the poison counter");
    auto k = builtin_kernel("tl_count_pattern");
    if (!k) return k.status();
    unsigned long long count = b.count, bits = poison_bits(b.dtype);
    unsigned sz = static_cast<unsigned>(size);
    void* args[] = {const_cast<void**>(&data), &count, &sz, &bits, &result};
    TL_RETURN_IF_ERROR(launch_raw(*k, grid_for(b.count), {256, 1, 1}, 0, {}, args));
  }
  if (n > 0) {
    auto k = builtin_kernel("tl_gather");
    if (!k) return k.status();
    unsigned long long count = n;
    unsigned sz = static_cast<unsigned>(size);
    void* args[] = {const_cast<void**>(&data), &positions, &count, &sz, &samples};
    TL_RETURN_IF_ERROR(launch_raw(*k, grid_for(n), {256, 1, 1}, 0, {}, args));
  }
  unsigned long long counters[2] = {0, 0};
  if (poisoned) TL_CUDA(cudaMemcpy(counters, result, sizeof(counters), cudaMemcpyDeviceToHost), "reading the poison count");
  o.unwritten.count = counters[0];
  o.unwritten.first = counters[0] > 0 ? counters[1] : 0;
  o.samples.resize(n * size);
  if (n > 0) TL_CUDA(cudaMemcpy(o.samples.data(), samples, n * size, cudaMemcpyDeviceToHost), "reading the samples");
  return {};
}

Status flush_l2() {
  DeviceState& s = state();
  if (!s.flush) {
    s.flush_bytes = std::max<std::size_t>(2 * s.info.l2_bytes, 32u << 20);
    TL_CUDA(cudaMalloc(&s.flush, s.flush_bytes), "allocating the L2 flush buffer");
  }
  static unsigned char value = 0;
  TL_CUDA(cudaMemsetAsync(s.flush, ++value, s.flush_bytes), "flushing L2");
  return {};
}

struct EventPair {
  cudaEvent_t start = nullptr, stop = nullptr;
  ~EventPair() {
    if (start) cudaEventDestroy(start);
    if (stop) cudaEventDestroy(stop);
  }
};

}  // namespace

Result<Stats> time_runs(const std::function<Status()>& launch, int warmup, int repeat) {
  for (int i = 0; i < warmup; ++i) TL_RETURN_IF_ERROR(launch());
  TL_CUDA(cudaDeviceSynchronize(), "warm-up runs");
  std::vector<EventPair> events(static_cast<std::size_t>(std::max(repeat, 1)));
  for (auto& e : events) {
    TL_CUDA(cudaEventCreate(&e.start), "creating CUDA events");
    TL_CUDA(cudaEventCreate(&e.stop), "creating CUDA events");
  }
  for (auto& e : events) {
    TL_CUDA(cudaEventRecord(e.start), "recording an event");
    TL_RETURN_IF_ERROR(launch());
    TL_CUDA(cudaEventRecord(e.stop), "recording an event");
  }
  TL_CUDA(cudaDeviceSynchronize(), "timed runs");
  std::vector<double> ms;
  for (auto& e : events) {
    float t = 0;
    TL_CUDA(cudaEventElapsedTime(&t, e.start, e.stop), "reading an event");
    ms.push_back(t);
  }
  return compute_stats(std::move(ms));
}

}  // namespace cuda_detail

using namespace cuda_detail;

bool cuda_context_poisoned() { return g_poisoned.load(); }

Status cuda_status(int error, const std::string& during) {
  auto e = static_cast<cudaError_t>(error);
  if (e == cudaSuccess) return {};
  bool sticky = sticky_error(e);
  if (!sticky && classify(e) != ErrorCode::no_device) {
    // Not a documented sticky error: clear it, and see whether the context still works.
    cudaGetLastError();
    if (state().index >= 0 && cudaDeviceSynchronize() != cudaSuccess) sticky = true;
  }
  if (sticky) g_poisoned = true;
  std::string msg = during + ": " + cudaGetErrorString(e) + " (" + cudaGetErrorName(e) + ")" + hint(e);
  return make_error(classify(e), msg);
}

const Blob& builtin_kernels_image(BuiltinImage image) {
  static const Blob portable(tl_builtin_fatbin, tl_builtin_fatbin + tl_builtin_fatbin_size);
  static const Blob sm90a(tl_hopper_fatbin, tl_hopper_fatbin + tl_hopper_fatbin_size);
  return image == BuiltinImage::sm90a ? sm90a : portable;
}

Result<std::array<std::uint8_t, 128>> encode_tensor_map(const TensorMapSpec& t, DType dtype, void* global) {
  static PFN_cuTensorMapEncodeTiled_v12000 encode = nullptr;
  if (!encode) {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult q{};
    cudaError_t e = cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &q);
    if (e != cudaSuccess || q != cudaDriverEntryPointSuccess || !fn)
      return make_error(ErrorCode::unsupported, "the driver has no cuTensorMapEncodeTiled (TMA needs CUDA 12 and sm_90)");
    encode = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(fn);
  }
  CUtensorMapDataType type;
  switch (dtype) {
    case DType::f32: type = CU_TENSOR_MAP_DATA_TYPE_FLOAT32; break;
    case DType::f16: type = CU_TENSOR_MAP_DATA_TYPE_FLOAT16; break;
    case DType::bf16: type = CU_TENSOR_MAP_DATA_TYPE_BFLOAT16; break;
    case DType::f64: type = CU_TENSOR_MAP_DATA_TYPE_FLOAT64; break;
    case DType::i32: type = CU_TENSOR_MAP_DATA_TYPE_INT32; break;
    case DType::u32: type = CU_TENSOR_MAP_DATA_TYPE_UINT32; break;
    case DType::i64: type = CU_TENSOR_MAP_DATA_TYPE_INT64; break;
    case DType::u64: type = CU_TENSOR_MAP_DATA_TYPE_UINT64; break;
    default: type = CU_TENSOR_MAP_DATA_TYPE_UINT8; break;  // i8, u8 and fp8 move as bytes
  }
  std::size_t rank = t.dims.size();
  if (rank < 1 || rank > 5 || t.box.size() != rank || t.strides_bytes.size() + 1 != rank ||
      (!t.element_strides.empty() && t.element_strides.size() != rank))
    return make_error(ErrorCode::invalid_argument,
                      "tensor map: rank " + std::to_string(rank) + " needs 1..5 dims, as many box sizes, and rank-1 strides");
  std::vector<cuuint32_t> es = t.element_strides.empty() ? std::vector<cuuint32_t>(rank, 1)
                                                         : std::vector<cuuint32_t>(t.element_strides.begin(),
                                                                                   t.element_strides.end());
  CUtensorMapSwizzle swizzle = t.swizzle_bytes == 128 ? CU_TENSOR_MAP_SWIZZLE_128B
                               : t.swizzle_bytes == 64 ? CU_TENSOR_MAP_SWIZZLE_64B
                               : t.swizzle_bytes == 32 ? CU_TENSOR_MAP_SWIZZLE_32B
                                                       : CU_TENSOR_MAP_SWIZZLE_NONE;
  CUtensorMapL2promotion l2 = t.l2_promotion_bytes == 256 ? CU_TENSOR_MAP_L2_PROMOTION_L2_256B
                              : t.l2_promotion_bytes == 128 ? CU_TENSOR_MAP_L2_PROMOTION_L2_128B
                              : t.l2_promotion_bytes == 64 ? CU_TENSOR_MAP_L2_PROMOTION_L2_64B
                                                           : CU_TENSOR_MAP_L2_PROMOTION_NONE;
  CUtensorMap map;
  std::vector<cuuint64_t> dims(t.dims.begin(), t.dims.end()), strides(t.strides_bytes.begin(), t.strides_bytes.end());
  std::vector<cuuint32_t> box(t.box.begin(), t.box.end());
  CUresult r = encode(&map, type, static_cast<cuuint32_t>(rank), global, dims.data(), strides.data(), box.data(),
                      es.data(), CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle, l2,
                      t.oob_fill_nan ? CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA
                                     : CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    return make_error(ErrorCode::invalid_argument,
                      "cuTensorMapEncodeTiled refused the tensor map (CUresult " + std::to_string(static_cast<int>(r)) +
                          "): check alignment (16-byte address and strides), box sizes (<= 256) and the swizzle vs "
                          "the box's inner size");
  std::array<std::uint8_t, 128> out;
  std::memcpy(out.data(), &map, sizeof(map));
  return out;
}


// [SECTION] cuBLAS baseline

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
    void* lib = nullptr;
    for (const char* name : {"libcublas.so.13", "libcublas.so"})
      if ((lib = dlopen(name, RTLD_NOW | RTLD_LOCAL))) break;
    if (!lib) {
      const char* why = dlerror();
      c.error = std::string("cannot load libcublas.so.13 (install the CUDA 13 cuBLAS library or add its directory to "
                            "LD_LIBRARY_PATH): ") + (why ? why : "not found");
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
    else if (int st2 = c.set_stream(c.handle, nullptr); st2 != 0)
      c.error = "cublasSetStream failed (cublasStatus_t " + std::to_string(st2) + ")";
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
Status cublas_gemm(const BaselineSpec& b, const void* A, const void* B, void* C) {
  Cublas& cb = cublas();
  if (!cb.error.empty()) return make_error(ErrorCode::unsupported, cb.error);
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

namespace {

// Warm-up, then `repeat` runs each between its own events, L2 flushed before each (outside the events).
// Timed runs of several launches, alternated run by run (A, B, A, B, ...), each after its own L2 flush: launches
// compared with each other (a kernel and its probe build) see the same clocks and temperature, which drift over a
// long run (an H100 at 8192^3 slows by ~10% within a few hundred launches).
Result<std::vector<std::vector<double>>> timed_runs(const std::vector<std::function<Status()>>& launches,
                                                    const TimingOptions& timing, const std::string& what) {
  for (int i = 0; i < timing.warmup; ++i)
    for (const auto& launch : launches) TL_RETURN_IF_ERROR(launch().with_context(what));
  TL_CUDA(cudaDeviceSynchronize(), what + ": warm-up runs");
  const std::size_t n = launches.size(), repeat = static_cast<std::size_t>(timing.repeat);
  std::vector<EventPair> events(repeat * n);
  for (auto& e : events) {
    TL_CUDA(cudaEventCreate(&e.start), "creating CUDA events");
    TL_CUDA(cudaEventCreate(&e.stop), "creating CUDA events");
  }
  for (std::size_t r = 0; r < repeat; ++r)
    for (std::size_t l = 0; l < n; ++l) {
      EventPair& e = events[r * n + l];
      if (timing.flush_l2) TL_RETURN_IF_ERROR(flush_l2());
      TL_CUDA(cudaEventRecord(e.start), "recording an event");
      TL_RETURN_IF_ERROR(launches[l]().with_context(what));
      TL_CUDA(cudaEventRecord(e.stop), "recording an event");
    }
  TL_CUDA(cudaDeviceSynchronize(), what + ": timed runs");
  std::vector<std::vector<double>> times(n);
  for (std::size_t i = 0; i < events.size(); ++i) {
    float ms = 0;
    TL_CUDA(cudaEventElapsedTime(&ms, events[i].start, events[i].stop), "reading an event");
    times[i % n].push_back(ms);
  }
  return times;
}

Result<std::vector<double>> timed_runs(const std::function<Status()>& launch, const TimingOptions& timing,
                                       const std::string& what) {
  auto times = timed_runs(std::vector<std::function<Status()>>{launch}, timing, what);
  if (!times) return times.status();
  return std::move(times->front());
}

// The baseline on the launch's input buffers into an output of its own: checked against the kernel's output
// (`kernel_out`, read back before the kernel's timed runs), then timed like the kernel.
Result<BaselineResult> run_baseline(const LaunchSpec& spec, const std::vector<void*>& ptrs, const Blob& kernel_out) {
  const BaselineSpec& b = *spec.baseline;
  BaselineResult r;
  r.name = b.kind == "cublas_gemm" ? "cublas" : b.kind;
  if (b.kind != "cublas_gemm") return make_error(ErrorCode::unsupported, "unknown baseline kind '" + b.kind + "'");
  if (b.layout != "nt" && b.layout != "nn")
    return make_error(ErrorCode::invalid_argument, "baseline layout '" + b.layout + "' is neither nt nor nn");
  const int ia = buffer_named(spec, b.a), ib = buffer_named(spec, b.b), ic = buffer_named(spec, b.c);
  if (ia < 0 || ib < 0 || ic < 0)
    return make_error(ErrorCode::invalid_argument, "the baseline names buffers " + b.a + ", " + b.b + ", " + b.c +
                                                       " the launch does not all have");
  const std::uint64_t mn = static_cast<std::uint64_t>(b.M) * static_cast<std::uint64_t>(b.N);
  const BufferSpec& c = spec.buffers[static_cast<std::size_t>(ic)];
  if (c.dtype != b.out || c.count != mn || kernel_out.size() != c.bytes())
    return make_error(ErrorCode::invalid_argument, "the baseline's output does not match buffer '" + b.c + "'");
  Buffers out;
  out.ptrs.push_back(nullptr);
  TL_CUDA(cudaMalloc(&out.ptrs[0], c.bytes()), "allocating the baseline's output");
  TL_CUDA(cudaMemset(out.ptrs[0], 0xFF, c.bytes()), "poisoning the baseline's output");
  const void* A = ptrs[static_cast<std::size_t>(ia)];
  const void* B = ptrs[static_cast<std::size_t>(ib)];
  auto launch = [&]() { return cublas_gemm(b, A, B, out.ptrs[0]); };
  TL_RETURN_IF_ERROR(launch());
  TL_CUDA(cudaDeviceSynchronize(), "running cuBLAS");
  Blob host(c.bytes());
  TL_CUDA(cudaMemcpy(host.data(), out.ptrs[0], host.size(), cudaMemcpyDeviceToHost), "reading back cuBLAS's output");
  // Normwise: the largest difference against the largest baseline magnitude (elementwise ratios blow up near 0).
  double diff = 0, scale = 0;
  for (std::uint64_t i = 0; i < mn; ++i) {
    const double x = load_element(host.data(), b.out, i), y = load_element(kernel_out.data(), b.out, i);
    if (std::isnan(x) || std::isnan(y)) {
      diff = std::numeric_limits<double>::infinity();
      continue;
    }
    diff = std::max(diff, std::abs(x - y));
    scale = std::max(scale, std::abs(x));
  }
  r.rel_vs_kernel = scale > 0 ? diff / scale : diff;
  if (spec.timing.repeat > 0) {
    auto times = timed_runs(launch, spec.timing, "cuBLAS");
    if (!times) return times.status();
    r.times_ms = std::move(*times);
    r.time_ms = compute_stats(r.times_ms);
  }
  return r;
}

// The probe build of the kernel, launched with the same parameters into a zeroed probe buffer that its
// `tl_timeline_buffer` global points to. With `timed`, it is first timed alternately with the kernel itself
// (`plain`; same warm-up, repeats and L2 flushes: the probe overhead), whose times go to `kernel_times`; the
// buffer kept is that of one more clean run after an L2 flush.
Result<TimelineCapture> run_timeline(const LaunchSpec& spec, void** params, const std::string& what,
                                     const std::function<Status()>& plain, std::vector<double>& kernel_times) {
  const TimelineLaunch& tl = *spec.timeline;
  LaunchGeometry g = spec.geometry;  // a persistent grid may shrink to what fits
  auto lib = load_library(tl.image);
  if (!lib) return lib.status().with_context(what + ": the probe build");
  auto kernel = get_kernel(*lib, tl.kernel);
  if (!kernel) return kernel.status().with_context(what + ": the probe build");
  const void* fn = reinterpret_cast<const void*>(*kernel);
  TL_CUDA(cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(g.dynamic_smem)),
          what + ": the probe build's dynamic shared memory");
  if (g.cluster.volume() > 8) TL_CUDA(cudaFuncSetAttribute(fn, cudaFuncAttributeNonPortableClusterSizeAllowed, 1), what);
  TL_RETURN_IF_ERROR(fit_persistent_grid(fn, g, state().info.sm_count, what + ": the probe build"));
  TL_RETURN_IF_ERROR(check_params(*kernel, spec));
  void* global = nullptr;
  std::size_t global_bytes = 0;
  if (cudaLibraryGetGlobal(&global, &global_bytes, *lib, "tl_timeline_buffer") != cudaSuccess ||
      global_bytes != sizeof(void*)) {
    cudaGetLastError();
    return make_error(ErrorCode::unsupported, what + ": the probe build has no tl_timeline_buffer: its source must "
                                                     "include tile/probe.hpp and be compiled with -DTL_TIMELINE=1");
  }
  const auto blocks = static_cast<std::uint32_t>(g.grid.volume());
  const auto warps = static_cast<std::uint32_t>((g.block.volume() + 31) / 32);
  const std::uint32_t capacity = tl.capacity ? tl.capacity : probe::kDefaultCapacity;
  const std::uint64_t clock_hz = tl.clock_hz ? tl.clock_hz : static_cast<std::uint64_t>(state().info.clock_khz) * 1000;
  probe::ProbeHeader h{};
  h.magic = probe::kMagic;
  h.version = probe::kVersion;
  h.num_blocks = blocks;
  h.warps_per_block = warps;
  h.capacity = capacity;
  h.clock_hz = clock_hz;
  const std::uint64_t bytes = probe::buffer_bytes(blocks, warps, capacity);
  Buffers buf;
  buf.ptrs.push_back(nullptr);
  TL_CUDA(cudaMalloc(&buf.ptrs[0], bytes), what + ": allocating the " + std::to_string(bytes >> 20) +
                                               " MiB timeline buffer (" + std::to_string(blocks) + " blocks x " +
                                               std::to_string(warps) + " warps x " + std::to_string(capacity) + " marks)");
  auto reset = [&]() -> Status {
    TL_CUDA(cudaMemset(buf.ptrs[0], 0, bytes), "clearing the timeline buffer");
    TL_CUDA(cudaMemcpy(buf.ptrs[0], &h, sizeof h, cudaMemcpyHostToDevice), "writing the timeline header");
    return {};
  };
  TL_CUDA(cudaMemcpy(global, &buf.ptrs[0], sizeof(void*), cudaMemcpyHostToDevice), "pointing tl_timeline_buffer at the buffer");
  auto launch = [&]() { return launch_raw(*kernel, g.grid, g.block, g.dynamic_smem, g.cluster, params); };
  TimelineCapture capture;
  TL_RETURN_IF_ERROR(reset());
  if (tl.timed && spec.timing.repeat > 0) {
    const std::vector<std::function<Status()>> both = {plain, launch};
    auto times = timed_runs(both, spec.timing, what + " (probes off and on, alternated)");
    if (!times) return times.status();
    kernel_times = std::move((*times)[0]);
    capture.times_ms = std::move((*times)[1]);
    capture.time_ms = compute_stats(capture.times_ms);
    TL_RETURN_IF_ERROR(reset());
  }
  if (spec.timing.flush_l2) TL_RETURN_IF_ERROR(flush_l2());
  TL_RETURN_IF_ERROR(launch().with_context(what + " (probes on)"));
  TL_CUDA(cudaDeviceSynchronize(), what + ": the probe run");
  std::vector<std::uint8_t> host(bytes);
  TL_CUDA(cudaMemcpy(host.data(), buf.ptrs[0], bytes, cudaMemcpyDeviceToHost), "reading back the timeline buffer");
  void* null = nullptr;
  TL_CUDA(cudaMemcpy(global, &null, sizeof(void*), cudaMemcpyHostToDevice), "detaching the timeline buffer");
  auto compact = compact_probe_buffer(host.data(), host.size());
  if (!compact) return compact.status();
  capture.buffer = std::move(*compact);
  return capture;
}

}  // namespace

// Wall time of the worker's steps of one launch, logged at debug level (TILELAB_LOG=debug) when the launch ends
// (after its buffers are freed): where a run's time outside the kernel goes.
class Phases {
 public:
  explicit Phases(std::string what) : m_what(std::move(what)) {}
  ~Phases() {
    mark("free");
    log::debug("worker ", m_what, ":", m_text);
  }
  void mark(const char* phase) {
    const auto now = std::chrono::steady_clock::now();
    char buf[64];
    std::snprintf(buf, sizeof(buf), " %s %.2f ms", phase, std::chrono::duration<double, std::milli>(now - m_last).count());
    m_text += buf;
    m_last = now;
  }

 private:
  std::string m_what, m_text;
  std::chrono::steady_clock::time_point m_last = std::chrono::steady_clock::now();
};

Result<LaunchResult> execute_launch(const LaunchSpec& spec) {
  Phases phases(spec.label.empty() ? spec.kernel : spec.label);
  TL_RETURN_IF_ERROR(use_device(spec.device));
  const DeviceState& dev = state();
  const std::string what = spec.label.empty() ? spec.kernel : spec.label;

  auto lib = load_library(spec.image);
  if (!lib) return lib.status().with_context(what);
  auto kernel = get_kernel(*lib, spec.kernel);
  if (!kernel) return kernel.status();
  cudaKernel_t k = *kernel;
  const void* fn = reinterpret_cast<const void*>(k);

  LaunchResult result;
  result.device_name = dev.info.name;
  cudaFuncAttributes fa{};
  TL_CUDA(cudaFuncGetAttributes(&fa, fn), "reading the kernel's attributes");
  result.attributes = {fa.numRegs, static_cast<int>(fa.sharedSizeBytes), static_cast<int>(fa.localSizeBytes),
                       static_cast<int>(fa.constSizeBytes), fa.maxThreadsPerBlock, fa.binaryVersion};

  LaunchGeometry g = spec.geometry;  // a persistent grid may shrink to what fits
  if (g.block.volume() > static_cast<std::uint64_t>(fa.maxThreadsPerBlock))
    return make_error(ErrorCode::unsupported, what + ": a block of " + std::to_string(g.block.volume()) +
                                                  " threads exceeds the kernel's limit of " +
                                                  std::to_string(fa.maxThreadsPerBlock) + " (registers: " +
                                                  std::to_string(fa.numRegs) + " per thread)");
  std::uint64_t smem = std::uint64_t{g.dynamic_smem} + fa.sharedSizeBytes;
  if (smem > static_cast<std::uint64_t>(dev.info.smem_per_block_optin))
    return make_error(ErrorCode::unsupported, what + ": " + std::to_string(smem) + " bytes of shared memory exceed this "
                                                  "GPU's " + std::to_string(dev.info.smem_per_block_optin) + " per block");
  if (g.grid.x % g.cluster.x || g.grid.y % g.cluster.y || g.grid.z % g.cluster.z)
    return make_error(ErrorCode::invalid_argument, what + ": the grid is not a multiple of the cluster shape");
  TL_CUDA(cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(g.dynamic_smem)),
          what + ": allowing " + std::to_string(g.dynamic_smem) + " bytes of dynamic shared memory");
  if (g.cluster.volume() > 8)
    TL_CUDA(cudaFuncSetAttribute(fn, cudaFuncAttributeNonPortableClusterSizeAllowed, 1),
            what + ": allowing a cluster of " + std::to_string(g.cluster.volume()));
  TL_RETURN_IF_ERROR(fit_persistent_grid(fn, g, dev.info.sm_count, what));
  TL_RETURN_IF_ERROR(check_params(k, spec));
  phases.mark("load");

  Buffers buffers;
  for (const auto& b : spec.buffers) {
    void* p = nullptr;
    if (b.count > 0)
      TL_CUDA(cudaMalloc(&p, b.bytes()), what + ": allocating " + std::to_string(b.bytes()) + " bytes for '" + b.name + "'");
    buffers.ptrs.push_back(p);
  }
  for (std::size_t i = 0; i < spec.buffers.size(); ++i)
    TL_RETURN_IF_ERROR(fill_device(buffers.ptrs[i], spec.buffers[i]));
  TL_CUDA(cudaDeviceSynchronize(), what + ": filling the buffers");
  phases.mark("alloc+fill");

  // Every parameter gets a 128-byte aligned slot: tensor maps are passed by value and want 64-byte alignment.
  struct alignas(64) Slot {
    unsigned char bytes[128];
  };
  std::vector<Slot> slots(spec.args.size());
  std::vector<void*> params(spec.args.size());
  for (std::size_t i = 0; i < spec.args.size(); ++i) {
    const KernelArg& a = spec.args[i];
    unsigned char* p = slots[i].bytes;
    std::memset(p, 0, sizeof(Slot));
    switch (a.kind) {
      case KernelArg::Kind::buffer: std::memcpy(p, &buffers.ptrs[static_cast<std::size_t>(a.buffer)], 8); break;
      case KernelArg::Kind::i32: {
        auto v = static_cast<std::int32_t>(a.i);
        std::memcpy(p, &v, 4);
        break;
      }
      case KernelArg::Kind::u32: {
        auto v = static_cast<std::uint32_t>(a.i);
        std::memcpy(p, &v, 4);
        break;
      }
      case KernelArg::Kind::i64:
      case KernelArg::Kind::u64: std::memcpy(p, &a.i, 8); break;
      case KernelArg::Kind::f32: {
        auto v = static_cast<float>(a.f);
        std::memcpy(p, &v, 4);
        break;
      }
      case KernelArg::Kind::f64: std::memcpy(p, &a.f, 8); break;
      case KernelArg::Kind::tensor_map: {
        auto b = static_cast<std::size_t>(a.tensor_map.buffer);
        auto map = encode_tensor_map(a.tensor_map, spec.buffers[b].dtype, buffers.ptrs[b]);
        if (!map) return map.status().with_context(what);
        std::memcpy(p, map->data(), 128);
        break;
      }
    }
    params[i] = p;
  }

  // The checked run: inputs filled, outputs poisoned, one launch.
  auto launch = [&]() { return launch_raw(k, g.grid, g.block, g.dynamic_smem, g.cluster, params.data()); };
  TL_RETURN_IF_ERROR(launch().with_context(what));
  TL_CUDA(cudaDeviceSynchronize(), what + ": running the kernel");
  phases.mark("checked run");

  Blob baseline_reference;  // the kernel's output the baseline is compared with
  for (std::size_t i = 0; i < spec.buffers.size(); ++i) {
    const BufferSpec& b = spec.buffers[i];
    if (!b.is_output()) continue;
    OutputResult o;
    o.name = b.name;
    o.dtype = b.dtype;
    o.count = b.count;
    o.positions = sample_positions(b.count, b.max_samples, b.sample_seed, b.sample_unit);
    const bool baseline_compares = spec.baseline && b.name == spec.baseline->c;
    if (!b.return_all && !baseline_compares) {
      TL_RETURN_IF_ERROR(check_on_device(buffers.ptrs[i], b, o).with_context(what + ": checking '" + b.name + "'"));
      result.outputs.push_back(std::move(o));
      continue;
    }
    // The whole output is wanted on the host (returned, or compared with the baseline's): read it back once.
    auto host = staging_buffer(b.bytes());
    if (!host) return host.status().with_context(what);
    if (b.bytes() > 0)
      TL_CUDA(cudaMemcpy(*host, buffers.ptrs[i], b.bytes(), cudaMemcpyDeviceToHost), what + ": reading back '" + b.name + "'");
    if (b.role == BufferRole::output) o.unwritten = count_unwritten(*host, b.dtype, b.count);
    std::size_t size = dtype_size(b.dtype);
    o.samples.resize(o.positions.size() * size);
    for (std::size_t j = 0; j < o.positions.size(); ++j)
      std::memcpy(o.samples.data() + j * size, *host + o.positions[j] * size, size);
    if (baseline_compares) baseline_reference.assign(*host, *host + b.bytes());
    if (b.return_all) o.data.assign(*host, *host + b.bytes());
    result.outputs.push_back(std::move(o));
  }

  phases.mark("readback");
  // A timed timeline run times the kernel alternately with its probe build (run_timeline), not here.
  const bool timed_with_probes = spec.timeline && spec.timeline->timed;
  auto keep_times = [&](std::vector<double> times) {
    result.times_ms = std::move(times);
    result.time_ms = compute_stats(result.times_ms);
    result.l2_flushed = spec.timing.flush_l2;
  };
  if (spec.timing.repeat > 0 && !timed_with_probes) {
    auto times = timed_runs(launch, spec.timing, what);
    if (!times) return times.status();
    keep_times(std::move(*times));
  }
  phases.mark("timed runs");
  if (spec.timing.measure_dram) {
    // Cold L2 as in the timed runs, then one launch under the profiler; a platform that cannot count says why.
    if (spec.timing.flush_l2) TL_RETURN_IF_ERROR(flush_l2());
    result.dram = measure_dram_traffic(launch);
    if (cuda_context_poisoned()) return make_error(ErrorCode::fault, what + ": the profiled launch faulted");
  }
  if (spec.baseline) {
    // A baseline that cannot run (no libcublas, an unsupported type) is reported beside the kernel's result;
    // a sticky CUDA error is not: the worker has to go.
    auto b = run_baseline(spec, buffers.ptrs, baseline_reference);
    if (!b && cuda_context_poisoned()) return b.status();
    if (b) {
      result.baseline = std::move(*b);
    } else {
      result.baseline = BaselineResult{};
      result.baseline->name = "cublas";
      result.baseline->error = b.status().message();
    }
  }
  if (spec.timeline) {
    std::vector<double> kernel_times;
    auto t = run_timeline(spec, params.data(), what, launch, kernel_times);
    if (!t && cuda_context_poisoned()) return t.status();
    if (!kernel_times.empty()) keep_times(std::move(kernel_times));
    if (t) {
      result.timeline = std::move(*t);
    } else {
      result.timeline = TimelineCapture{};
      result.timeline->error = t.status().message();
    }
  }
  if (spec.timing.repeat > 0 && result.times_ms.empty()) {  // the probe build failed before its timed runs
    auto times = timed_runs(launch, spec.timing, what);
    if (!times) return times.status();
    keep_times(std::move(*times));
  }
  phases.mark("baseline/dram/timeline");
  return result;
}

Result<Message> serve_launch(const Message& request, WorkerChannel&) {
  LaunchSpec spec;
  TL_RETURN_IF_ERROR(detail::parse_launch(request.header.value("launch", nlohmann::json()), request, spec));
  auto r = execute_launch(spec);
  if (!r) return r.status();
  Message reply = make_reply(0);
  reply.header["result"] = detail::write_result(*r, reply);
  return reply;
}

Result<Message> serve_sweep(const Message& request, WorkerChannel& channel) {
  const auto& items = request.header.value("items", nlohmann::json::array());
  std::size_t ok = 0, failed = 0;
  for (std::size_t i = 0; i < items.size(); ++i) {
    LaunchSpec spec;
    Status parsed = detail::parse_launch(items[i], request, spec);
    Result<LaunchResult> r = parsed.ok() ? execute_launch(spec) : Result<LaunchResult>(parsed);
    if (!r && cuda_context_poisoned()) return r.status().with_context("sweep item " + std::to_string(i));
    Message m = make_progress(channel.id(), {{"index", i}, {"ok", r.ok()}});
    if (r) {
      m.header["result"] = detail::write_result(*r, m);
      ++ok;
    } else {
      m.header["error"] = status_to_json(r.status());
      ++failed;
    }
    TL_RETURN_IF_ERROR(channel.progress(std::move(m.header), std::move(m.blobs)));
  }
  return make_reply(0, {{"items", items.size()}, {"succeeded", ok}, {"failed", failed}});
}

Result<Message> serve_device(const Message& request, WorkerChannel&) {
  TL_RETURN_IF_ERROR(use_device(request.header.value("device", 0)));
  return make_reply(0, {{"device", state().info}});
}

}  // namespace tl
