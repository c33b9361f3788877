// DRAM bytes of one launch through CUPTI's range profiler (CUDA 12.6+ API), with libcupti opened at run time.
#include "runtime/worker/dram_counters.hpp"

#include "runtime/worker/cupti_library.hpp"

#include <nlohmann/json.hpp>

#if __has_include(<cupti_range_profiler.h>) && __has_include(<cupti_profiler_host.h>)
#define TL_HAVE_CUPTI_HEADERS 1
#include <cuda.h>  // types only (CUcontext); the driver is reached through cudaGetDriverEntryPoint
#include <cuda_runtime_api.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_result.h>
#include <cupti_target.h>
#include <dlfcn.h>

#include <cstdint>
#include <vector>
#endif

namespace tl {

void to_json(nlohmann::json& j, const DramTraffic& d) {
  if (d.measured)
    j = {{"measured", true}, {"read_bytes", d.read_bytes}, {"write_bytes", d.write_bytes}, {"source", "cupti"}};
  else
    j = {{"measured", false}, {"reason", d.reason}};
}

void from_json(const nlohmann::json& j, DramTraffic& d) {
  d.measured = j.value("measured", false);
  d.read_bytes = j.value("read_bytes", 0.0);
  d.write_bytes = j.value("write_bytes", 0.0);
  d.reason = j.value("reason", std::string());
}

#ifndef TL_HAVE_CUPTI_HEADERS

DramTraffic measure_dram_traffic(const std::function<Status()>&) {
  DramTraffic d;
  d.reason = "this TileLab was built without the CUPTI headers (cupti_range_profiler.h)";
  return d;
}

#else

namespace {

// The entry points used, typed from the headers (decltype) and resolved with dlsym: libcupti is never linked.
struct Cupti {
  void* lib = nullptr;
  std::string error;  // why it cannot be used
  decltype(&cuptiProfilerInitialize) initialize = nullptr;
  decltype(&cuptiDeviceGetChipName) chip_name = nullptr;
  decltype(&cuptiProfilerGetCounterAvailability) counter_availability = nullptr;
  decltype(&cuptiProfilerHostInitialize) host_initialize = nullptr;
  decltype(&cuptiProfilerHostDeinitialize) host_deinitialize = nullptr;
  decltype(&cuptiProfilerHostConfigAddMetrics) host_add_metrics = nullptr;
  decltype(&cuptiProfilerHostGetConfigImageSize) host_config_size = nullptr;
  decltype(&cuptiProfilerHostGetConfigImage) host_config_image = nullptr;
  decltype(&cuptiProfilerHostEvaluateToGpuValues) host_evaluate = nullptr;
  decltype(&cuptiRangeProfilerEnable) enable = nullptr;
  decltype(&cuptiRangeProfilerDisable) disable = nullptr;
  decltype(&cuptiRangeProfilerGetCounterDataSize) counter_data_size = nullptr;
  decltype(&cuptiRangeProfilerCounterDataImageInitialize) counter_data_init = nullptr;
  decltype(&cuptiRangeProfilerSetConfig) set_config = nullptr;
  decltype(&cuptiRangeProfilerStart) start = nullptr;
  decltype(&cuptiRangeProfilerStop) stop = nullptr;
  decltype(&cuptiRangeProfilerDecodeData) decode = nullptr;
  decltype(&cuptiRangeProfilerGetCounterDataInfo) counter_data_info = nullptr;
  bool initialized = false;
};

Cupti& cupti() {
  static Cupti c = [] {
    Cupti c;
    const CuptiLibrary& lib = cupti_library();
    if (!lib.handle) {
      c.error = lib.error;
      return c;
    }
    c.lib = lib.handle;
    auto sym = [&](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(c.lib, name));
      if (!fn && c.error.empty()) c.error = std::string("libcupti has no ") + name + " (the range profiler needs CUDA 12.6+)";
    };
    sym(c.initialize, "cuptiProfilerInitialize");
    sym(c.chip_name, "cuptiDeviceGetChipName");
    sym(c.counter_availability, "cuptiProfilerGetCounterAvailability");
    sym(c.host_initialize, "cuptiProfilerHostInitialize");
    sym(c.host_deinitialize, "cuptiProfilerHostDeinitialize");
    sym(c.host_add_metrics, "cuptiProfilerHostConfigAddMetrics");
    sym(c.host_config_size, "cuptiProfilerHostGetConfigImageSize");
    sym(c.host_config_image, "cuptiProfilerHostGetConfigImage");
    sym(c.host_evaluate, "cuptiProfilerHostEvaluateToGpuValues");
    sym(c.enable, "cuptiRangeProfilerEnable");
    sym(c.disable, "cuptiRangeProfilerDisable");
    sym(c.counter_data_size, "cuptiRangeProfilerGetCounterDataSize");
    sym(c.counter_data_init, "cuptiRangeProfilerCounterDataImageInitialize");
    sym(c.set_config, "cuptiRangeProfilerSetConfig");
    sym(c.start, "cuptiRangeProfilerStart");
    sym(c.stop, "cuptiRangeProfilerStop");
    sym(c.decode, "cuptiRangeProfilerDecodeData");
    sym(c.counter_data_info, "cuptiRangeProfilerGetCounterDataInfo");
    return c;
  }();
  return c;
}

// "cuptiX failed: CUPTI_ERROR_INSUFFICIENT_PRIVILEGES (...)", with a hint for the one users can fix.
std::string failure(const char* call, CUptiResult r) {
  std::string s = cupti_call_failed(call, static_cast<int>(r));
  if (r == CUPTI_ERROR_INSUFFICIENT_PRIVILEGES)
    s += " (GPU performance counters are restricted to admin users on this machine: NVreg_RestrictProfilingToAdminUsers)";
  return s;
}

#define TL_CUPTI(call, params)                                              \
  do {                                                                       \
    if (CUptiResult r_ = cupti().call(&(params)); r_ != CUPTI_SUCCESS)      \
      return failure(#call, r_);                                             \
  } while (0)

Result<CUcontext> current_context() {
  using CtxGetCurrent = CUresult (*)(CUcontext*);
  static CtxGetCurrent get = [] {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult q{};
    if (cudaGetDriverEntryPointByVersion("cuCtxGetCurrent", &fn, 12000, cudaEnableDefault, &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess)
      return CtxGetCurrent{nullptr};
    return reinterpret_cast<CtxGetCurrent>(fn);
  }();
  if (!get) return make_error(ErrorCode::unsupported, "the driver has no cuCtxGetCurrent");
  if (cudaFree(nullptr) != cudaSuccess) return make_error(ErrorCode::cuda, "no CUDA context");  // makes the primary one current
  CUcontext ctx = nullptr;
  if (get(&ctx) != CUDA_SUCCESS || !ctx) return make_error(ErrorCode::cuda, "no current CUDA context");
  return ctx;
}

const char* kMetrics[] = {"dram__bytes_read.sum", "dram__bytes_write.sum"};
constexpr std::size_t kNumMetrics = 2;

// Profiles one launch; returns "" and fills `values` on success, else what failed.
std::string profile_launch(const std::function<Status()>& launch, double values[kNumMetrics]) {
  Cupti& c = cupti();
  if (!c.error.empty()) return c.error;
  auto ctx = current_context();
  if (!ctx) return ctx.status().message();
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) return "no current CUDA device";

  if (!c.initialized) {
    CUpti_Profiler_Initialize_Params init{CUpti_Profiler_Initialize_Params_STRUCT_SIZE, nullptr};
    TL_CUPTI(initialize, init);
    c.initialized = true;
  }
  CUpti_Device_GetChipName_Params chip{CUpti_Device_GetChipName_Params_STRUCT_SIZE, nullptr,
                                       static_cast<size_t>(device), nullptr};
  TL_CUPTI(chip_name, chip);

  CUpti_Profiler_GetCounterAvailability_Params avail{CUpti_Profiler_GetCounterAvailability_Params_STRUCT_SIZE,
                                                      nullptr, *ctx, 0, nullptr};
  TL_CUPTI(counter_availability, avail);
  std::vector<std::uint8_t> availability(avail.counterAvailabilityImageSize);
  avail.pCounterAvailabilityImage = availability.data();
  TL_CUPTI(counter_availability, avail);

  // Host side: the configuration image for the two metrics, and later their evaluation.
  CUpti_Profiler_Host_Initialize_Params host{CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE, nullptr,
                                             CUPTI_PROFILER_TYPE_RANGE_PROFILER, chip.pChipName, availability.data(),
                                             nullptr};
  TL_CUPTI(host_initialize, host);
  struct HostGuard {
    CUpti_Profiler_Host_Object* object;
    ~HostGuard() {
      CUpti_Profiler_Host_Deinitialize_Params p{CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE, nullptr, object};
      cupti().host_deinitialize(&p);
    }
  } host_guard{host.pHostObject};
  CUpti_Profiler_Host_ConfigAddMetrics_Params add{CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE, nullptr,
                                                  host.pHostObject, kMetrics, kNumMetrics};
  TL_CUPTI(host_add_metrics, add);
  CUpti_Profiler_Host_GetConfigImageSize_Params config_size{CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE,
                                                            nullptr, host.pHostObject, 0};
  TL_CUPTI(host_config_size, config_size);
  std::vector<std::uint8_t> config(config_size.configImageSize);
  CUpti_Profiler_Host_GetConfigImage_Params config_image{CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE, nullptr,
                                                         host.pHostObject, config.size(), config.data()};
  TL_CUPTI(host_config_image, config_image);

  // Target side: enable on the context, one auto range (the launch), kernel replay.
  CUpti_RangeProfiler_Enable_Params enable{CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE, nullptr, *ctx, nullptr};
  TL_CUPTI(enable, enable);
  struct EnableGuard {
    CUpti_RangeProfiler_Object* object;
    ~EnableGuard() {
      CUpti_RangeProfiler_Disable_Params p{CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE, nullptr, object};
      cupti().disable(&p);
    }
  } enable_guard{enable.pRangeProfilerObject};
  CUpti_RangeProfiler_GetCounterDataSize_Params data_size{CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE,
                                                          nullptr, enable.pRangeProfilerObject, kMetrics, kNumMetrics,
                                                          1, 1, 0};
  TL_CUPTI(counter_data_size, data_size);
  std::vector<std::uint8_t> counter_data(data_size.counterDataSize);
  CUpti_RangeProfiler_CounterDataImage_Initialize_Params data_init{
      CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE, nullptr, enable.pRangeProfilerObject,
      counter_data.size(), counter_data.data()};
  TL_CUPTI(counter_data_init, data_init);
  CUpti_RangeProfiler_SetConfig_Params set{};
  set.structSize = CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE;
  set.pRangeProfilerObject = enable.pRangeProfilerObject;
  set.configSize = config.size();
  set.pConfig = config.data();
  set.counterDataImageSize = counter_data.size();
  set.pCounterDataImage = counter_data.data();
  set.range = CUPTI_AutoRange;
  set.replayMode = CUPTI_KernelReplay;
  set.maxRangesPerPass = 1;
  set.numNestingLevels = 1;
  set.minNestingLevel = 1;
  set.passIndex = 0;
  set.targetNestingLevel = 1;
  TL_CUPTI(set_config, set);

  CUpti_RangeProfiler_Start_Params start{CUpti_RangeProfiler_Start_Params_STRUCT_SIZE, nullptr,
                                         enable.pRangeProfilerObject};
  TL_CUPTI(start, start);
  Status launched = launch();
  cudaError_t synced = cudaDeviceSynchronize();
  CUpti_RangeProfiler_Stop_Params stop{CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE, nullptr,
                                       enable.pRangeProfilerObject, 0, 0, 0};
  TL_CUPTI(stop, stop);
  if (!launched.ok()) return "the profiled launch failed: " + launched.message();
  if (synced != cudaSuccess) return std::string("the profiled launch failed: ") + cudaGetErrorString(synced);
  CUpti_RangeProfiler_DecodeData_Params decode{CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE, nullptr,
                                               enable.pRangeProfilerObject, 0};
  TL_CUPTI(decode, decode);
  CUpti_RangeProfiler_GetCounterDataInfo_Params info{CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE,
                                                     nullptr, counter_data.data(), counter_data.size(), 0};
  TL_CUPTI(counter_data_info, info);
  if (info.numTotalRanges < 1) return "CUPTI recorded no range for the launch";

  CUpti_Profiler_Host_EvaluateToGpuValues_Params eval{CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE,
                                                      nullptr, host.pHostObject, counter_data.data(),
                                                      counter_data.size(), 0, kMetrics, kNumMetrics, values};
  TL_CUPTI(host_evaluate, eval);
  return "";
}

}  // namespace

DramTraffic measure_dram_traffic(const std::function<Status()>& launch) {
  DramTraffic d;
  double values[kNumMetrics] = {0, 0};
  std::string why = profile_launch(launch, values);
  if (!why.empty()) {
    d.reason = "CUPTI: " + why;
    return d;
  }
  d.measured = true;
  d.read_bytes = values[0];
  d.write_bytes = values[1];
  return d;
}

#endif

}  // namespace tl
