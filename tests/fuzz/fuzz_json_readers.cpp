// libFuzzer target for the JSON readers (device profiles, run records, Chrome traces): nothing crashes or throws,
// every error names its source, and what is accepted keeps the ranges the readers promise.
#include <cstddef>
#include <cstdint>
#include <string>

#include "runtime/core/json_read.hpp"
#include "runtime/device/device_profile.hpp"
#include "runtime/results/roofline.hpp"
#include "runtime/trace/timeline.hpp"

namespace {

const tl::Roofline& model() {
  static const tl::Roofline r = [] {
    tl::Ceilings c;
    c.hbm_bytes_per_s = 3e12;
    c.l2_bytes_per_s = 10e12;
    c.fp32_flops = 60e12;
    c.bf16_tc_flops = 800e12;
    return *tl::Roofline::from_ceilings(c);
  }();
  return r;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);

  // Run records: one object, an array of them, or JSON lines; each accepted one becomes a point or a reason.
  auto records = tl::parse_run_records(text, "fuzz");
  if (!records) {
    if (records.status().message().rfind("fuzz", 0) != 0) __builtin_trap();
  } else {
    for (const auto& r : *records) {
      auto p = tl::roofline_point(model(), r);
      if (!p && p.status().message().empty()) __builtin_trap();
    }
  }

  auto doc = tl::parse_json(text, "fuzz");
  if (!doc) {
    if (doc.status().message().rfind("fuzz", 0) != 0) __builtin_trap();
    return 0;
  }
  // Device profiles (and bare ceilings files): accepted rates are plausible and draw a roofline.
  auto profile = tl::parse_device_profile(*doc, "fuzz");
  if (profile) {
    const tl::Ceilings& c = profile->ceilings;
    if (!(c.hbm_bytes_per_s >= 1e9 && c.hbm_bytes_per_s <= 1e16 && c.fp32_flops >= 1e9 && c.fp32_flops <= 1e18))
      __builtin_trap();
    if (!tl::Roofline::from_ceilings(c)) __builtin_trap();
  } else if (profile.status().message().rfind("fuzz", 0) != 0) {
    __builtin_trap();
  }
  // Chrome traces: events on their tracks, regions named.
  auto trace = tl::from_chrome_trace(*doc);
  if (trace) {
    for (const auto& tr : trace->tracks)
      if (std::uint64_t(tr.first) + tr.count > trace->events.size()) __builtin_trap();
    for (const auto& e : trace->events)
      if (e.region >= trace->regions.size() || e.track >= trace->tracks.size()) __builtin_trap();
  } else if (trace.status().message().empty()) {
    __builtin_trap();
  }
  return 0;
}
