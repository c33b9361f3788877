// The roofline model of one device (memory and compute ceilings, ridge points) and where each run sits on it.
#pragma once

// Pure model, no drawing (viz/roofline_scene draws it). Everything is built from the measured Ceilings, never
// from a datasheet. A run's roofline time bound is max(flops / compute ceiling, min_bytes / HBM bandwidth);
// its efficiency is that bound over the measured time, which equals achieved / binding ceiling on both sides
// of the ridge (below it bytes/s over HBM, above it flop/s over the compute rate).
//
// Runs come in as RunRecord JSON objects (what `tilelab bench --json` writes, and what the results store
// returns), so any source of records — files, the store, the GUI's workspace — feeds the same code.

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/core/dtype.hpp"
#include "runtime/core/status.hpp"
#include "runtime/device/ceilings.hpp"

namespace tl {

// [SECTION] the model

enum class CeilingKind { memory, compute };

struct RooflineCeiling {
  std::string name;   // "hbm_copy", "l2_read", "smem_read", "fp32_fma", "bf16_tensor", "bf16_tensor_sustained",
                      // "fp16_tensor", "fp8_tensor"
  std::string label;  // for plots: "HBM", "L2", "shared memory", "FP32 FMA", "bf16 tensor", ...
  CeilingKind kind = CeilingKind::memory;
  double value = 0;   // bytes/s (memory) or flop/s (compute)
};

// Where a memory ceiling meets a compute ceiling: bandwidth * intensity = rate.
struct RidgePoint {
  std::string memory, compute;  // ceiling names
  double intensity = 0;         // flop/byte
  double flops = 0;             // flop/s (the compute ceiling's value)
};

class Roofline {
 public:
  // Needs at least the HBM bandwidth and the FP32 rate; ceilings that were not measured (0) are left out.
  static Result<Roofline> from_ceilings(const Ceilings& c);

  const Ceilings& ceilings() const { return m_ceilings; }
  // Memory ceilings in the order HBM, L2, shared memory; compute ceilings FP32, bf16, bf16 sustained,
  // fp16, fp8 (those measured).
  const std::vector<RooflineCeiling>& memory() const { return m_memory; }
  const std::vector<RooflineCeiling>& compute() const { return m_compute; }
  const RooflineCeiling* find(std::string_view name) const;
  const RooflineCeiling& hbm() const { return m_memory.front(); }
  const RooflineCeiling& top_compute() const;  // the highest compute rate
  const RooflineCeiling& top_memory() const;   // the highest bandwidth

  // Every (memory, compute) pair, memory-major.
  std::vector<RidgePoint> ridges() const;
  // Attainable flop/s at `intensity` under `compute` and `memory` (names): min(rate, bandwidth * intensity).
  double attainable(double intensity, std::string_view compute, std::string_view memory = "hbm_copy") const;

 private:
  Ceilings m_ceilings;
  std::vector<RooflineCeiling> m_memory, m_compute;
};

// The compute ceiling a kernel is held to: the tensor-core rate of its input type for a kernel whose math runs on
// the tensor cores (KernelSpec::tensor_cores) on 16-bit or fp8 inputs, when that rate was measured; FP32 FMA
// otherwise.
std::string compute_ceiling_for(const Roofline& r, bool tensor_cores, DType input_dtype);

// The roofline bound of a problem of `flops` and `min_bytes` (HBM traffic) against `compute` (a ceiling name).
struct RooflineBound {
  std::string bound;         // "memory" or "compute"
  std::string ceiling;       // the binding ceiling's name
  double ceiling_value = 0;  // bytes/s or flop/s
  double intensity = 0;      // flops / min_bytes (0 with no flops)
  double attainable_flops = 0;
  double predicted_s = 0;    // max(flops / rate, min_bytes / HBM): no run can be faster
};
// Errors (invalid_argument) when both flops and min_bytes are 0, or `compute` is not a ceiling of `r`.
Result<RooflineBound> roofline_bound(const Roofline& r, std::string_view compute, double flops, double min_bytes);

// [SECTION] runs as points

struct RooflinePoint {
  std::string kernel, family, device, input_dtype;
  std::map<std::string, std::string> config, problem;
  double flops = 0, min_bytes = 0;
  double intensity = 0;       // ideal: flops / min_bytes
  double flops_per_s = 0;     // achieved (flops / median time)
  double bytes_per_s = 0;     // min_bytes / median time
  std::string bound, ceiling; // as in RooflineBound
  double ceiling_value = 0;
  double attainable_flops = 0;
  double efficiency = 0;      // predicted / measured time, 0..1
  double predicted_ms = 0, measured_ms = 0;
  // Measured DRAM traffic (CUPTI), read + write; absent where the platform could not measure it.
  std::optional<double> dram_bytes;
  std::string dram_note;      // why there is no measurement, when the record says

  // flops / dram_bytes (the actual intensity), or 0 without a measurement.
  double actual_intensity() const;
  std::string config_text() const;   // "block_M=128,block_N=256"
  std::string problem_text() const;  // "K=4096,M=4096,N=4096,dtype=bf16"
  std::string label() const;         // "gemm.wgmma block_M=128,block_N=256 [M=4096,...]"
};

// Checks that `record` is a RunRecord JSON object the roofline can read: a string "kernel"; and unless it
// carries a non-null "failure", numbers "flops" and "min_bytes" and an object "time_ms" with a number "median".
// The message names the field and what it holds instead.
Status validate_run_record(const nlohmann::json& record);

// The point of one record. Errors: a malformed record (as validate_run_record), or a record that cannot be
// drawn — failed, never timed, no flops and no bytes — with the reason (callers list these as skipped).
Result<RooflinePoint> roofline_point(const Roofline& r, const nlohmann::json& record);

// [SECTION] sources

// Run records from a file: one RunRecord object, an array of them, or JSON lines (one object per line; blank
// lines ignored). Each record is validated; errors name the file, the record (index or line) and the field.
Result<std::vector<nlohmann::json>> load_run_records(const std::string& path);
// The same from text (`source` names it in messages).
Result<std::vector<nlohmann::json>> parse_run_records(const std::string& text, const std::string& source);

struct RooflineSet {
  std::vector<RooflinePoint> points;
  std::vector<std::string> skipped;  // "gemm.simt block_M=16: failed: unsupported: ..." per record left out
};
// Points of `records` whose kernel is in `kernels` (all when empty).
RooflineSet roofline_points(const Roofline& r, const std::vector<nlohmann::json>& records,
                            const std::vector<std::string>& kernels = {});

// [SECTION] export

// {"format": "tilelab.roofline", "version": 1, "device", "ceilings": [{name, label, kind, value}],
//  "ridges": [...], "points": [...]} — the points with every field of RooflinePoint.
nlohmann::json roofline_to_json(const Roofline& r, const std::vector<RooflinePoint>& points);
nlohmann::json point_to_json(const RooflinePoint& p);
Result<RooflinePoint> point_from_json(const nlohmann::json& j);
// The "points" of a roofline_to_json document.
Result<std::vector<RooflinePoint>> points_from_json(const nlohmann::json& doc);

// RFC 4180 CSV, one row per point, header first: kernel, family, config, problem, device, input_dtype, intensity,
// flops_per_s, bound, ceiling, ceiling_value, efficiency, predicted_ms, measured_ms, flops, min_bytes,
// dram_bytes (empty when unmeasured), actual_intensity. Numbers round-trip exactly.
std::string points_to_csv(const std::vector<RooflinePoint>& points);
Result<std::vector<RooflinePoint>> points_from_csv(const std::string& text);

}  // namespace tl
