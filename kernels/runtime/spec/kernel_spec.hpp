// A library kernel described for the runtime: schemas, validity, name expression, launch, arguments, reference.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "runtime/core/check.hpp"
#include "runtime/core/dtype.hpp"
#include "runtime/core/geometry.hpp"
#include "runtime/core/status.hpp"
#include "runtime/device/device.hpp"
#include "runtime/jit/jit.hpp"
#include "runtime/spec/baseline.hpp"
#include "runtime/trace/model.hpp"
#include "runtime/trace/timeline.hpp"

namespace tl {

// [SECTION] schemas and values

enum class ParamType { int_, enum_, bool_ };

struct ParamSpec {
  std::string name;
  ParamType type = ParamType::int_;
  std::vector<std::string> choices;  // enum: the allowed values; int: when non-empty, the only allowed values
  std::int64_t min = 0, max = 0;     // int without choices: inclusive range
  std::string default_value;
  // When set, a value left unset takes that parameter's value ("heads_kv" follows "heads": unset means MHA);
  // default_value then holds that parameter's default. Two may follow each other (seq_q, seq_k): set one and the
  // other follows; both unset, each takes its default_value.
  std::string default_from;
  std::string help;                  // one line

  static ParamSpec integer(std::string name, std::int64_t def, std::int64_t min, std::int64_t max, std::string help);
  static ParamSpec one_of(std::string name, std::int64_t def, std::vector<std::int64_t> values, std::string help);
  static ParamSpec enumeration(std::string name, std::string def, std::vector<std::string> values, std::string help);
  static ParamSpec boolean(std::string name, bool def, std::string help);
  std::string describe_allowed() const;  // "1..1024", "one of 1, 2, 4, 8", "true or false"
  std::string describe_default() const;  // "16", or "= heads" when it follows another parameter
  // This parameter's default taken from `other` when left unset (its default_value becomes other's).
  ParamSpec follows(const ParamSpec& other) const;
};

// Validated values of one schema, every parameter present (defaults filled in), stored as canonical text.
class Values {
 public:
  std::int64_t integer(const std::string& name) const;  // throws std::out_of_range on a name not in the schema:
  bool boolean(const std::string& name) const;          // that is a bug in the spec, not a user error
  const std::string& text(const std::string& name) const;
  DType dtype(const std::string& name = "dtype") const;
  bool has(const std::string& name) const { return m_values.count(name) > 0; }
  void set(const std::string& name, std::string value) { m_values[name] = std::move(value); }
  const std::map<std::string, std::string>& map() const { return m_values; }
  std::string to_string() const;  // "block_M=128,block_N=64" in schema-independent (sorted) order

 private:
  std::map<std::string, std::string> m_values;
};

struct Schema {
  std::vector<ParamSpec> params;
  // Keys this schema does not take but a sibling kernel's does, each with where to go ("window" -> "sliding windows
  // are attn.fwd.wgmma's"): resolve() names it after the unknown key.
  std::map<std::string, std::string> elsewhere;

  Schema(std::vector<ParamSpec> p = {}, std::map<std::string, std::string> e = {})
      : params(std::move(p)), elsewhere(std::move(e)) {}

  const ParamSpec* find(const std::string& name) const;
  // Checks every given key and value, fills the rest with defaults (a default_from parameter with the value of
  // the one it follows). Errors (invalid_argument) name the key, the valid keys or the allowed range:
  // "unknown config key 'blockM' (valid: block_M, block_N, ...)".
  Result<Values> resolve(const std::map<std::string, std::string>& given, const std::string& what) const;
  // The value `name` takes with `given`: the given one, else its default (following default_from).
  std::string value_of(const std::string& name, const std::map<std::string, std::string>& given) const;
  Values defaults() const;
};

// "a=1,b=2" -> {a:1, b:2}. Errors on an item without '=' or a repeated key.
Result<std::map<std::string, std::string>> parse_key_values(const std::string& text);

// [SECTION] what a launch needs

// scratch: a workspace the kernel may use freely, zeroed before each run; neither a reference input nor verified.
enum class ArgRole { in, out, inout, scratch };

// One kernel parameter, in the order of the kernel's signature. Tensors are passed as a device pointer;
// scalars by value with `dtype` giving the C++ type (f32 -> float, i32 -> int, i64 -> long long).
// A tensor_map argument is a TMA descriptor (CUtensorMap, 128 bytes by value) over another tensor argument
// `tensor_of`, built by the worker after allocation: dimensions innermost first from that tensor's row-major
// shape, `box` the tile one TMA copy moves (innermost first), `swizzle_bytes` 0/32/64/128.
struct ArgSpec {
  enum class Kind { tensor, scalar, tensor_map } kind = Kind::tensor;
  std::string name;
  DType dtype = DType::f32;
  std::vector<std::int64_t> shape;  // tensors: row-major, contiguous
  ArgRole role = ArgRole::in;
  Fill fill;                        // inputs (the worker's seeded fill); outputs are poisoned by the runner
  double value = 0;                 // scalars
  std::string tensor_of;            // tensor_map: the tensor argument it describes
  std::vector<std::int64_t> box;    // tensor_map: box per dimension, innermost first
  int swizzle_bytes = 0;            // tensor_map
  // tensor_map: the row-major shape the map sees instead of the tensor's own (same element count), e.g. [rows, 576]
  // over a [batch, seq, heads, 576] tensor whose rows are contiguous; empty: the tensor's shape.
  std::vector<std::int64_t> map_shape;
  bool is_param = true;             // false: a tensor reached only through a tensor_map, not a kernel parameter
  std::vector<unsigned char> data;  // fill.kind == data: the tensor's bytes (small tables: sequence offsets)

  std::int64_t numel() const;
  std::size_t bytes() const { return static_cast<std::size_t>(numel()) * dtype_size(dtype); }

  static ArgSpec tensor(std::string name, DType dtype, std::vector<std::int64_t> shape, ArgRole role, Fill fill = {});
  // An input with the given contents (one int32 per element).
  static ArgSpec i32_data(std::string name, const std::vector<std::int32_t>& values);
  static ArgSpec scalar(std::string name, DType dtype, double value);
  static ArgSpec tensor_map(std::string name, std::string tensor_of, std::vector<std::int64_t> box, int swizzle_bytes);
};

// A tensor's data on the host, in its own dtype.
struct HostTensor {
  std::string name;
  DType dtype = DType::f32;
  std::vector<std::int64_t> shape;
  std::vector<unsigned char> data;

  std::int64_t numel() const;
  double at(std::int64_t i) const { return load_element(data.data(), dtype, static_cast<std::uint64_t>(i)); }
};

// Fills per arg.fill with fill_host, so the bits are the ones the worker's device fill writes; outputs get zeros.
HostTensor make_host_tensor(const ArgSpec& arg);

// The inputs (and scalars) by name, as the kernel saw them.
struct ReferenceInputs {
  std::map<std::string, HostTensor> tensors;
  std::map<std::string, double> scalars;
  const HostTensor& tensor(const std::string& name) const { return tensors.at(name); }
};

// Expected values of output `output` at the given linear (row-major) element indices, in float64.
using ReferenceFn =
    std::function<Result<std::vector<double>>(const Values& problem, const ReferenceInputs& inputs,
                                              const std::string& output, const std::vector<std::int64_t>& indices)>;

// How an output is sampled for the reference check: whole runs of `unit` contiguous elements (a row the reference
// computes at once), at most `max_samples` elements (0: the run's own limit). For references costly per element.
struct OutputSampling {
  std::uint64_t unit = 1;
  std::uint64_t max_samples = 0;
};

struct LayoutInfo {
  std::string name;  // "smem_A", "thread_tile_C"
  std::string spec;  // a layout SPEC string for the viewer
};

// What can_implement compares against: the device's limits, or an arch's documented ones when there is no GPU.
struct DeviceLimits {
  std::string arch = "sm_90a";
  int cc = 90;                          // 10 * major + minor
  int smem_per_block_optin = 232448;    // bytes
  int max_threads_per_block = 1024;
  int regs_per_block = 65536;
  int sm_count = 132;                   // SMs: persistent grids and split schedules are sized for them
  std::int64_t l2_bytes = 50 << 20;     // L2: rasterization rules size the operand panels they keep resident by it
};
// Documented limits of an arch ("sm_80" -> 163 KiB opt-in shared memory, ...); unknown archs get sm_80's.
DeviceLimits limits_for_arch(const std::string& arch);
// A real device's limits; `arch` is what to compile for it (sm_90 -> sm_90a, sm_100 -> sm_100a, so the
// arch-specific Hopper/Blackwell instructions are available; others as they are).
DeviceLimits limits_for_device(const DeviceInfo& device);

// [SECTION] the spec

struct KernelInstance;

struct KernelSpec {
  std::string name;     // "gemm.simt"
  std::string family;   // "gemm", "memory", "test"
  // Its math runs on the tensor cores: on 16- or 8-bit inputs the roofline holds it to their rate, else to FP32 FMA.
  bool tensor_cores = false;
  std::string summary;  // one line
  bool hidden = false;  // test kernels: listed only with --all
  int min_cc = 80;      // oldest compute capability it compiles for
  std::vector<std::string> archs = {"sm_90a", "sm_80"};  // what CI compiles it for
  std::string source;   // file of the SourceSet: "gemm/gemm_simt.cuh"
  Schema config;
  Schema problem;

  // Everything below takes validated values (from Schema::resolve).
  // Ok, or a reason a user can act on (ErrorCode::unsupported). Called before any compile.
  std::function<Status(const Values& problem, const Values& config, const DeviceLimits& limits)> can_implement;
  std::function<std::string(const Values& problem, const Values& config)> name_expression;
  // `limits` is the device's (its SM count sizes persistent grids and schedules), else the arch's documented one.
  std::function<LaunchGeometry(const Values& problem, const Values& config, const DeviceLimits& limits)> launch;
  // A launch of the same kernel with the same arguments before each `launch` (a pre-pass the kernel tells apart by
  // its block), timed with it; unset or nullopt: none.
  std::function<std::optional<LaunchGeometry>(const Values& problem, const Values& config, const DeviceLimits& limits)>
      pre_launch;
  std::function<std::vector<ArgSpec>(const Values& problem, const Values& config, const DeviceLimits& limits)> args;
  std::function<double(const Values& problem)> flops;
  std::function<double(const Values& problem)> min_bytes;  // compulsory traffic: each input read once, each output written once
  ReferenceFn reference;
  // The reference may run on several threads at once over disjoint indices (a Lua-defined one may not).
  bool reference_thread_safe = true;
  std::function<Tolerance(const Values& problem, DType dtype)> tolerance;
  std::function<std::vector<LayoutInfo>(const Values& problem, const Values& config)> layouts;
  std::vector<std::string> probes;  // region names of its TL_PROBE marks, in region-id order (tile/probe.hpp)
  // Its pipeline modelled from the config and a device's rates (trace/model.hpp), for `tilelab timeline --model`
  // and the GUI without a GPU; unset: no model.
  std::function<Result<Timeline>(const KernelInstance& instance, const ModelDevice& device)> model_timeline;
  // Marks one warp records at most for this problem and config (sizes the timeline buffer); unset: the default.
  std::function<std::uint32_t(const Values& problem, const Values& config, const DeviceLimits& limits)> probe_capacity;
  // The library call computing the same result on the same buffers (`bench --vs cublas|cudnn`: cuBLAS's GEMM,
  // cuDNN's SDPA), in the config's mode where it has one (gemm.fp8's fast_accum: cuBLASLt's FAST_ACCUM); unset: none.
  std::function<std::optional<BaselineSpec>(const Values& problem, const Values& config)> baseline;
  // Per output: how its positions are sampled (unset: single elements, the run's max_samples).
  std::function<OutputSampling(const Values& problem, const std::string& output)> sampling;
  // Problems of `tilelab test` (dtype is added by the runner); `full` asks for the longer list. Unset: the
  // runner's sizes by parameter name (M/N/K, rows/cols, n).
  std::function<std::vector<std::map<std::string, std::string>>(bool full)> test_problems;
  // Configs `tilelab test --full` also runs on every problem, beside the one-parameter variations of the defaults:
  // combinations those miss (a switch that only runs where another is off). Unset: none.
  std::function<std::vector<std::map<std::string, std::string>>()> test_configs;
};

// A spec resolved for one problem and config: what the worker needs, apart from the compiled code.
struct KernelInstance {
  const KernelSpec* spec = nullptr;
  Values problem, config;
  std::string source, name_expression;
  LaunchGeometry launch;
  std::optional<LaunchGeometry> pre_launch;  // KernelSpec::pre_launch
  std::vector<ArgSpec> args;
  double flops = 0, min_bytes = 0;
  Tolerance tolerance;
  DeviceLimits limits;  // what it was instantiated for
};

// Validates the key=value maps against the schemas, runs can_implement, and resolves the rest.
Result<KernelInstance> instantiate(const KernelSpec& spec, const std::map<std::string, std::string>& problem,
                                   const std::map<std::string, std::string>& config, const DeviceLimits& limits);

// The JIT request for an instance (its source and name expression); messages name the kernel and its config.
CompileRequest compile_request(const KernelInstance& instance, JitOptions options);

// The spec's model timeline of `instance` (KernelSpec::model_timeline); unsupported, naming the kernels that have
// one, when its spec has none. The result has model = true.
Result<Timeline> model_timeline(const KernelInstance& instance, const ModelDevice& device);

// The library `bench --vs` compares the spec against at its default problem ("cublas", "cudnn"), "" for none.
std::string spec_baseline_library(const KernelSpec& spec);

void to_json(nlohmann::json& j, const ParamSpec& p);
void to_json(nlohmann::json& j, const KernelSpec& k);  // name, family, summary, schemas, archs, baseline
void to_json(nlohmann::json& j, const ArgSpec& a);

}  // namespace tl
