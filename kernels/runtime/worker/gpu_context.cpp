// The worker's CUDA context: its device and state, CUDA errors as Status (sticky ones poison the process), loaded
// images and the built-in kernels, kernels readied and their parameters packed, raw launches (timing: timing.cpp).
#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <functional>
#include <map>
#include <memory>

#include "runtime/core/log.hpp"
#include "runtime/worker/gpu.hpp"

extern "C" const unsigned char tl_builtin_fatbin[];
extern "C" const unsigned long long tl_builtin_fatbin_size;
extern "C" const unsigned char tl_hopper_fatbin[];
extern "C" const unsigned long long tl_hopper_fatbin_size;

namespace tl {

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

namespace cuda_detail {

DeviceState& state() {
  static DeviceState s;
  return s;
}

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

}  // namespace

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

Result<cudaKernel_t> builtin_kernel(const char* name, BuiltinImage image) {
  cudaLibrary_t& lib = state().builtin[static_cast<int>(image)];
  if (!lib) {
    auto loaded = load_image(builtin_kernels_image(image));
    if (!loaded) return loaded.status();
    lib = *loaded;
  }
  return get_kernel(lib, name);
}

Status launch_raw(cudaKernel_t k, Dim3 grid, Dim3 block, unsigned smem, Dim3 cluster, void** args,
                  cudaStream_t stream) {
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(grid.x, grid.y, grid.z);
  config.blockDim = dim3(block.x, block.y, block.z);
  config.dynamicSmemBytes = smem;
  config.stream = stream;
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

}  // namespace

Result<ReadyKernel> ready_kernel(cudaLibrary_t lib, const std::string& name, const LaunchSpec& spec,
                                 const DeviceInfo& info, const std::string& what) {
  auto kernel = get_kernel(lib, name);
  if (!kernel) return kernel.status().with_context(what);
  ReadyKernel r;
  r.kernel = *kernel;
  const void* fn = reinterpret_cast<const void*>(r.kernel);
  cudaFuncAttributes& fa = r.attributes;
  TL_CUDA(cudaFuncGetAttributes(&fa, fn), what + ": reading the kernel's attributes");
  LaunchGeometry& g = r.geometry = spec.geometry;
  if (g.block.volume() > static_cast<std::uint64_t>(fa.maxThreadsPerBlock))
    return make_error(ErrorCode::unsupported, what + ": a block of " + std::to_string(g.block.volume()) +
                                                  " threads exceeds the kernel's limit of " +
                                                  std::to_string(fa.maxThreadsPerBlock) + " (registers: " +
                                                  std::to_string(fa.numRegs) + " per thread)");
  std::uint64_t smem = std::uint64_t{g.dynamic_smem} + fa.sharedSizeBytes;
  if (smem > static_cast<std::uint64_t>(info.smem_per_block_optin))
    return make_error(ErrorCode::unsupported, what + ": " + std::to_string(smem) + " bytes of shared memory exceed this "
                                                  "GPU's " + std::to_string(info.smem_per_block_optin) + " per block");
  if (g.grid.x % g.cluster.x || g.grid.y % g.cluster.y || g.grid.z % g.cluster.z)
    return make_error(ErrorCode::invalid_argument, what + ": the grid is not a multiple of the cluster shape");
  TL_CUDA(cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(g.dynamic_smem)),
          what + ": allowing " + std::to_string(g.dynamic_smem) + " bytes of dynamic shared memory");
  if (g.cluster.volume() > 8)
    TL_CUDA(cudaFuncSetAttribute(fn, cudaFuncAttributeNonPortableClusterSizeAllowed, 1),
            what + ": allowing a cluster of " + std::to_string(g.cluster.volume()));
  TL_RETURN_IF_ERROR(fit_persistent_grid(fn, g, info.sm_count, what));
  TL_RETURN_IF_ERROR(check_params(r.kernel, spec));
  r.pre = spec.pre;
  if (r.pre && (r.pre->block.volume() > static_cast<std::uint64_t>(fa.maxThreadsPerBlock) ||
                r.pre->dynamic_smem > g.dynamic_smem))
    return make_error(ErrorCode::unsupported, what + ": its pre-launch's block of " +
                                                  std::to_string(r.pre->block.volume()) + " threads and " +
                                                  std::to_string(r.pre->dynamic_smem) +
                                                  " bytes of dynamic shared memory exceed the kernel's " +
                                                  std::to_string(fa.maxThreadsPerBlock) + " threads or the launch's " +
                                                  std::to_string(g.dynamic_smem) + " bytes");
  return r;
}

Status launch_ready(const ReadyKernel& r, void** params, cudaStream_t stream) {
  if (r.pre)
    TL_RETURN_IF_ERROR(launch_raw(r.kernel, r.pre->grid, r.pre->block, r.pre->dynamic_smem, {}, params, stream)
                           .with_context("the pre-launch"));
  const LaunchGeometry& g = r.geometry;
  return launch_raw(r.kernel, g.grid, g.block, g.dynamic_smem, g.cluster, params, stream);
}

std::vector<void*> KernelParams::pointers() {
  std::vector<void*> p;
  for (Slot& s : slots) p.push_back(s.bytes);
  return p;
}

Result<KernelParams> pack_params(const LaunchSpec& spec, const std::vector<void*>& ptrs, const std::string& what) {
  KernelParams params;
  params.slots.resize(spec.args.size());
  for (std::size_t i = 0; i < spec.args.size(); ++i) {
    const KernelArg& a = spec.args[i];
    unsigned char* p = params.slots[i].bytes;
    std::memset(p, 0, sizeof(KernelParams::Slot));
    switch (a.kind) {
      case KernelArg::Kind::buffer: std::memcpy(p, &ptrs[static_cast<std::size_t>(a.buffer)], 8); break;
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
        auto map = encode_tensor_map(a.tensor_map, spec.buffers[b].dtype, ptrs[b]);
        if (!map) return map.status().with_context(what);
        std::memcpy(p, map->data(), 128);
        break;
      }
    }
  }
  return params;
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


}  // namespace tl
