// The cupti timer: kernels' GPU start and end from CUPTI activity records, attributed to runs by external ids.
#include "runtime/worker/kernel_activity.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <string>

#include "runtime/worker/cupti_library.hpp"

#if __has_include(<cupti_activity.h>)
#define TL_HAVE_CUPTI_ACTIVITY 1
#include <dlfcn.h>

#include <cstddef>
#include <cstdlib>
#include <mutex>
#include <type_traits>

#include <cupti_activity.h>
#endif

namespace tl {

Result<std::vector<double>> run_times_ms(const std::vector<KernelSpan>& kernels,
                                         const std::vector<RunCorrelation>& correlations, std::size_t runs) {
  std::map<std::uint32_t, std::uint64_t> run_of;  // correlation id -> run id
  for (const RunCorrelation& c : correlations) run_of[c.correlation] = c.run;
  constexpr std::uint64_t kNone = std::numeric_limits<std::uint64_t>::max();
  std::vector<std::uint64_t> first(runs, kNone), last(runs, 0);
  for (const KernelSpan& k : kernels) {
    auto it = run_of.find(k.correlation);
    if (it == run_of.end() || it->second == 0 || it->second > runs) continue;  // not launched inside a run
    if (k.end_ns < k.start_ns)
      return make_error(ErrorCode::internal, "CUPTI: a kernel of timed run " + std::to_string(it->second) +
                                                 " ends before it starts (" + std::to_string(k.start_ns) + " to " +
                                                 std::to_string(k.end_ns) + " ns)");
    const std::size_t i = it->second - 1;
    first[i] = std::min(first[i], k.start_ns);
    last[i] = std::max(last[i], k.end_ns);
  }
  std::vector<double> ms(runs);
  for (std::size_t i = 0; i < runs; ++i) {
    if (first[i] == kNone)
      return make_error(ErrorCode::internal, "CUPTI recorded no kernel for timed run " + std::to_string(i + 1) + " of " +
                                                 std::to_string(runs) + " (activity records dropped?)");
    ms[i] = static_cast<double>(last[i] - first[i]) * 1e-6;
  }
  return ms;
}

#ifndef TL_HAVE_CUPTI_ACTIVITY

Result<std::unique_ptr<KernelActivity>> KernelActivity::start() {
  return make_error(ErrorCode::unsupported, "the cupti timer: this TileLab was built without the CUPTI headers "
                                            "(cupti_activity.h)");
}
KernelActivity::~KernelActivity() = default;
Status KernelActivity::begin_run(std::size_t) { return {}; }
Status KernelActivity::end_run() { return {}; }
Result<std::vector<double>> KernelActivity::run_times(std::size_t) {
  return make_error(ErrorCode::unsupported, "no CUPTI headers");
}

#else

namespace {

// The record layouts of CUPTI 13's headers; a kernel record's head (start, end, correlationId) has had these offsets
// since CUpti_ActivityKernel4, so a newer libcupti's records read the same.
using KernelRecord = CUpti_ActivityKernel10;
static_assert(offsetof(KernelRecord, start) == offsetof(CUpti_ActivityKernel4, start) &&
              offsetof(KernelRecord, end) == offsetof(CUpti_ActivityKernel4, end) &&
              offsetof(KernelRecord, correlationId) == offsetof(CUpti_ActivityKernel4, correlationId));

constexpr CUpti_ActivityKind kKinds[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_RUNTIME,
                                         CUPTI_ACTIVITY_KIND_DRIVER, CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION};
constexpr CUpti_ExternalCorrelationKind kRunKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0;
constexpr std::size_t kBufferBytes = 8u << 20;

// Entry points resolved from libcupti (typed by the headers' declarations), and the records CUPTI hands back on
// its own thread.
struct Activity {
  std::string error;
  decltype(&cuptiActivityRegisterCallbacks) register_callbacks = nullptr;
  decltype(&cuptiActivityEnable) enable = nullptr;
  decltype(&cuptiActivityDisable) disable = nullptr;
  decltype(&cuptiActivityFlushAll) flush_all = nullptr;
  decltype(&cuptiActivityGetNextRecord) next_record = nullptr;
  decltype(&cuptiActivityPushExternalCorrelationId) push_id = nullptr;
  decltype(&cuptiActivityPopExternalCorrelationId) pop_id = nullptr;
  bool registered = false;
  std::mutex mutex;
  std::vector<KernelSpan> kernels;
  std::vector<RunCorrelation> correlations;
};

Activity& activity() {
  static Activity a;
  static const bool resolved = [] {
    const CuptiLibrary& lib = cupti_library();
    if (!lib.handle) {
      a.error = lib.error;
      return false;
    }
    auto sym = [&](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib.handle, name));
      if (!fn && a.error.empty()) a.error = lib.path + " has no " + name + " (the cupti timer needs CUPTI 11.0+)";
    };
    sym(a.register_callbacks, "cuptiActivityRegisterCallbacks");
    sym(a.enable, "cuptiActivityEnable");
    sym(a.disable, "cuptiActivityDisable");
    sym(a.flush_all, "cuptiActivityFlushAll");
    sym(a.next_record, "cuptiActivityGetNextRecord");
    sym(a.push_id, "cuptiActivityPushExternalCorrelationId");
    sym(a.pop_id, "cuptiActivityPopExternalCorrelationId");
    return a.error.empty();
  }();
  (void)resolved;
  return a;
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *size = kBufferBytes;
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));  // records are 8-byte aligned
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  Activity& a = activity();
  {
    std::lock_guard lock(a.mutex);
    CUpti_Activity* record = nullptr;
    while (a.next_record(buffer, valid, &record) == CUPTI_SUCCESS) {
      if (record->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || record->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
        const auto* k = reinterpret_cast<const KernelRecord*>(record);
        a.kernels.push_back({k->correlationId, k->start, k->end});
      } else if (record->kind == CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION) {
        const auto* e = reinterpret_cast<const CUpti_ActivityExternalCorrelation*>(record);
        if (e->externalKind == kRunKind) a.correlations.push_back({e->correlationId, e->externalId});
      }
    }
  }
  std::free(buffer);
}

Status failed(const char* call, CUptiResult r) {
  return make_error(ErrorCode::cuda, "the cupti timer: " + cupti_call_failed(call, static_cast<int>(r)));
}

}  // namespace

Result<std::unique_ptr<KernelActivity>> KernelActivity::start() {
  Activity& a = activity();
  if (!a.error.empty()) return make_error(ErrorCode::unsupported, a.error);
  if (!a.registered) {
    if (CUptiResult r = a.register_callbacks(buffer_requested, buffer_completed); r != CUPTI_SUCCESS)
      return failed("cuptiActivityRegisterCallbacks", r);
    a.registered = true;
  }
  {
    std::lock_guard lock(a.mutex);
    a.kernels.clear();
    a.correlations.clear();
  }
  std::unique_ptr<KernelActivity> made(new KernelActivity());  // its destructor disables whatever was enabled
  for (CUpti_ActivityKind kind : kKinds)
    if (CUptiResult r = a.enable(kind); r != CUPTI_SUCCESS) return failed("cuptiActivityEnable", r);
  return made;
}

KernelActivity::~KernelActivity() {
  Activity& a = activity();
  for (CUpti_ActivityKind kind : kKinds) a.disable(kind);
  a.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);  // buffers still out come back before the next start clears them
}

Status KernelActivity::begin_run(std::size_t index) {
  if (CUptiResult r = activity().push_id(kRunKind, index + 1); r != CUPTI_SUCCESS)
    return failed("cuptiActivityPushExternalCorrelationId", r);
  return {};
}

Status KernelActivity::end_run() {
  std::uint64_t id = 0;
  if (CUptiResult r = activity().pop_id(kRunKind, &id); r != CUPTI_SUCCESS)
    return failed("cuptiActivityPopExternalCorrelationId", r);
  return {};
}

Result<std::vector<double>> KernelActivity::run_times(std::size_t runs) {
  Activity& a = activity();
  if (CUptiResult r = a.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED); r != CUPTI_SUCCESS)
    return failed("cuptiActivityFlushAll", r);
  std::lock_guard lock(a.mutex);
  return run_times_ms(a.kernels, a.correlations, runs);
}

#endif

}  // namespace tl
