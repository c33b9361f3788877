// to_launch_spec and run_instance: one kernel instance run, checked against its reference and timed.
#include "runtime/measure/bench.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <regex>

#include <nlohmann/json.hpp>

#include "runtime/core/log.hpp"
#include "runtime/core/parallel.hpp"
#include "runtime/worker/client.hpp"

namespace tl {

Result<LaunchSpec> to_launch_spec(const KernelInstance& instance, const CompiledKernel& compiled, TimingOptions timing) {
  LaunchSpec s;
  s.label = (instance.spec ? instance.spec->name : std::string("kernel")) + " " + instance.config.to_string() + " " +
            instance.problem.to_string();
  if (!compiled.cubin.empty()) {
    s.image.assign(compiled.cubin.begin(), compiled.cubin.end());
  } else {
    s.image.assign(compiled.ptx.begin(), compiled.ptx.end());
    s.image.push_back(0);  // the loader takes PTX as a NUL-terminated string
  }
  s.kernel = compiled.lowered_name;
  s.geometry = instance.launch;
  s.pre = instance.pre_launch;
  s.timing = timing;
  // Every tensor gets a buffer (also those reached only through a tensor map); then the kernel's parameters
  // are laid out in the spec's order.
  std::map<std::string, int> buffer_of;
  for (const ArgSpec& a : instance.args) {
    if (a.kind != ArgSpec::Kind::tensor) continue;
    BufferRole role = a.role == ArgRole::in ? BufferRole::input
                      : a.role == ArgRole::out   ? BufferRole::output
                      : a.role == ArgRole::scratch ? BufferRole::scratch
                                                 : BufferRole::inout;
    BufferSpec b = BufferSpec::make(a.name, a.dtype, static_cast<std::uint64_t>(a.numel()), role);
    b.fill = a.fill;
    if (a.fill.kind == Fill::Kind::data) {
      b.data.assign(a.data.begin(), a.data.end());
      b.data.resize(b.bytes());
    }
    buffer_of[a.name] = static_cast<int>(s.buffers.size());
    s.buffers.push_back(std::move(b));
  }
  for (const ArgSpec& a : instance.args) {
    if (a.kind == ArgSpec::Kind::tensor) {
      if (a.is_param) s.args.push_back(KernelArg::of_buffer(buffer_of.at(a.name)));
      continue;
    }
    if (a.kind == ArgSpec::Kind::tensor_map) {
      auto it = std::find_if(instance.args.begin(), instance.args.end(), [&](const ArgSpec& t) {
        return t.kind == ArgSpec::Kind::tensor && t.name == a.tensor_of;
      });
      if (it == instance.args.end())
        return make_error(ErrorCode::internal, "tensor map '" + a.name + "' names no tensor '" + a.tensor_of + "'");
      TensorMapSpec t;
      t.buffer = buffer_of.at(a.tensor_of);
      // Row-major shape -> dimensions innermost first; stride of dimension d = bytes of one step along it.
      std::uint64_t stride = dtype_size(it->dtype);
      const std::vector<std::int64_t>& shape = a.map_shape.empty() ? it->shape : a.map_shape;
      if (!a.map_shape.empty() && it->numel() != [&] { std::int64_t n = 1; for (auto d : shape) n *= d; return n; }())
        return make_error(ErrorCode::internal, "tensor map '" + a.name + "': its shape does not cover tensor '" + a.tensor_of + "'");
      for (auto d = shape.rbegin(); d != shape.rend(); ++d) {
        if (!t.dims.empty()) t.strides_bytes.push_back(stride);
        t.dims.push_back(static_cast<std::uint64_t>(*d));
        stride *= static_cast<std::uint64_t>(*d);
      }
      for (auto b : a.box) t.box.push_back(static_cast<std::uint32_t>(b));
      t.swizzle_bytes = a.swizzle_bytes;
      t.l2_promotion_bytes = 256;
      s.args.push_back(KernelArg::of_tensor_map(std::move(t)));
      continue;
    }
    switch (a.dtype) {
      case DType::f32: s.args.push_back(KernelArg::of_f32(static_cast<float>(a.value))); break;
      case DType::f64: s.args.push_back(KernelArg::of_f64(a.value)); break;
      case DType::i32: s.args.push_back(KernelArg::of_i32(static_cast<std::int32_t>(a.value))); break;
      case DType::u32: s.args.push_back(KernelArg::of_u32(static_cast<std::uint32_t>(a.value))); break;
      case DType::i64: s.args.push_back(KernelArg::of_i64(static_cast<std::int64_t>(a.value))); break;
      case DType::u64: s.args.push_back(KernelArg::of_u64(static_cast<std::uint64_t>(a.value))); break;
      default:
        return make_error(ErrorCode::unsupported, "scalar argument '" + a.name + "' of type " + dtype_name(a.dtype) +
                                                      " cannot be passed by value: use f32, f64, i32, u32, i64 or u64");
    }
  }
  // The kernel's own parameter list, from its PTX: the worker then needs no probe past the last parameter.
  if (!compiled.ptx.empty()) {
    auto sizes = ptx_entry_param_sizes(compiled.ptx, compiled.lowered_name);
    if (sizes) TL_RETURN_IF_ERROR(check_param_sizes(s.label, s.args, *sizes));
  }
  return s;
}

std::string baseline_of(const KernelInstance& instance) {
  if (!instance.spec || !instance.spec->baseline) return "";
  const std::optional<BaselineSpec> b = instance.spec->baseline(instance.problem, instance.config);
  return b ? baseline_library(b->kind) : "";
}

namespace {

// baseline_for's and baseline_available's first checks; the spec's baseline on success.
Result<BaselineSpec> available_baseline(const KernelSpec* spec, const Values& problem, const Values& config,
                                        const std::string& vs) {
  if (vs != "cublas" && vs != "cudnn")
    return make_error(ErrorCode::invalid_argument, "unknown baseline '" + vs + "' (valid: cublas, cudnn)");
  const std::string name = spec ? spec->name : std::string("this kernel");
  std::optional<BaselineSpec> b;
  if (spec && spec->baseline) b = spec->baseline(problem, config);
  if (!b || baseline_library(b->kind) != vs)
    return make_error(ErrorCode::unsupported, "--vs " + vs + ": " + name + " has no " + library_title(vs) +
                                                  " equivalent (`tilelab kernels` names each kernel's: \"baseline: --vs " +
                                                  vs + "\")");
  return *b;
}

}  // namespace

Status baseline_available(const KernelSpec& spec, const Values& problem, const Values& config, const std::string& vs) {
  return available_baseline(&spec, problem, config, vs).status();
}

Result<BaselineSpec> baseline_for(const KernelInstance& instance, const std::string& vs) {
  auto b = available_baseline(instance.spec, instance.problem, instance.config, vs);
  if (!b) return b.status();
  const std::string name = instance.spec ? instance.spec->name : std::string("this kernel");
  const std::string library = library_title(vs);
  // The launch's tensor of that name as the baseline reads it: its dtype, and its shape (exact), or for varlen
  // sequences rows of `row` = (heads, dim) covering at least `elements` (packed sequences or a padded cache).
  auto expect = [&](const std::string& tensor, DType dt, const std::vector<std::int64_t>& shape,
                    const std::vector<std::int64_t>& row = {}, std::int64_t elements = 0) -> Status {
    for (const ArgSpec& a : instance.args) {
      if (a.kind != ArgSpec::Kind::tensor || a.name != tensor) continue;
      std::int64_t count = 1;
      for (std::int64_t v : a.shape) count *= v;
      const bool rows_ok = a.shape.size() >= row.size() && std::equal(row.rbegin(), row.rend(), a.shape.rbegin()) &&
                           count >= elements;
      if (a.dtype != dt || (row.empty() ? a.shape != shape : !rows_ok)) {
        std::string dims;
        for (std::int64_t v : row.empty() ? shape : row) {
          if (!dims.empty()) dims += ',';
          dims += std::to_string(v);
        }
        return make_error(ErrorCode::internal, name + ": the " + library + " baseline expects " + tensor + " as " +
                                                   dtype_name(dt) + (row.empty() ? " [" : " [rows, ") + dims + "]" +
                                                   (row.empty() ? "" : " of at least " + std::to_string(elements) +
                                                                           " elements"));
      }
      return Status::success();
    }
    return make_error(ErrorCode::internal, name + ": the " + library + " baseline names no tensor '" + tensor + "'");
  };
  if (b->kind == "cudnn_sdpa") {
    // Q, K, V, O, Stats (our LSE backward, cuDNN's own forward), then dO, dQ and cuDNN's own dK, dV.
    const std::vector<SdpaTensor> t = sdpa_tensors(b->sdpa);
    const SdpaBaseline& a = b->sdpa;
    // A refused problem is the worker's row to report; its lengths may not even fit.
    if (!sdpa_refusal(a).empty()) return *b;
    const SdpaVarlen lengths = sdpa_varlen(a);
    const std::string buffers[] = {a.q, a.k, a.v, a.o, a.backward ? a.lse : "", a.d_o, a.dq};
    for (std::size_t i = 0; i < std::min<std::size_t>(t.size(), 7); ++i) {
      if (buffers[i].empty()) continue;
      const std::vector<std::int64_t>& d = t[i].dims;  // (batch, heads, seq, dim) over our [batch, seq, heads, dim]
      const DType dt = i == 4 ? DType::f32 : (a.backward ? i == 6 : i == 3) ? b->out : b->in;
      const std::vector<std::int64_t> dense = i == 4 ? std::vector{d[0], d[1], d[2]} : std::vector{d[0], d[2], d[1], d[3]};
      if (!a.varlen()) TL_RETURN_IF_ERROR(expect(buffers[i], dt, dense));
      else if (i == 4) TL_RETURN_IF_ERROR(expect(buffers[i], dt, {}, {d[1], t[i].strides[1]}, d[1] * t[i].strides[1]));
      else TL_RETURN_IF_ERROR(expect(buffers[i], dt, {}, {d[1], d[3]}, lengths.ragged[i].back()));
    }
    return *b;
  }
  if (b->layout != "nt" && b->layout != "nn")
    return make_error(ErrorCode::internal, name + ": baseline layout '" + b->layout + "' is neither nt nor nn");
  const bool nt = b->layout == "nt";
  TL_RETURN_IF_ERROR(expect(b->a, b->in, {b->M, b->K}));
  TL_RETURN_IF_ERROR(expect(b->b, b->in, {nt ? b->N : b->K, nt ? b->K : b->N}));
  TL_RETURN_IF_ERROR(expect(b->c, b->out, {b->M, b->N}));
  if (b->kind == "cublaslt_fp8") {
    const std::int64_t kb = (b->K + 127) / 128;
    if (b->scaling == "block") {
      if (b->scale_a_mn) TL_RETURN_IF_ERROR(expect(b->scale_a, DType::f32, {kb, b->M}));
      else TL_RETURN_IF_ERROR(expect(b->scale_a, DType::f32, {b->M, kb}));
      TL_RETURN_IF_ERROR(expect(b->scale_b, DType::f32, {(b->N + 127) / 128, kb}));
    } else if (b->scaling == "row") {
      TL_RETURN_IF_ERROR(expect(b->scale_a, DType::f32, {b->M}));
      TL_RETURN_IF_ERROR(expect(b->scale_b, DType::f32, {b->N}));
    } else if (b->scaling == "tensor") {
      TL_RETURN_IF_ERROR(expect(b->scale_a, DType::f32, {1}));
      TL_RETURN_IF_ERROR(expect(b->scale_b, DType::f32, {1}));
    } else {
      return make_error(ErrorCode::internal, name + ": FP8 baseline scaling '" + b->scaling + "' is none of tensor, row, block");
    }
  }
  return *b;
}

// [SECTION] run_instance

// Threads pay off: a float64 GEMM reference of 65536 samples at K = 4096 is a quarter of a billion multiply-adds,
// in every sweep's first run.
Result<std::vector<double>> compute_reference(const KernelInstance& inst, const ReferenceInputs& inputs,
                                              const std::string& output, const std::vector<std::int64_t>& idx) {
  const KernelSpec& spec = *inst.spec;
  // A spec that says how to sample an output has a costly reference per element (whole attention rows): chunks of
  // one sampling unit are worth a thread. Others: at least 1024 elements per thread.
  std::uint64_t unit = 1, min_chunk = 1024;
  if (spec.sampling) min_chunk = unit = std::max<std::uint64_t>(1, spec.sampling(inst.problem, output).unit);
  std::vector<double> values(idx.size());
  std::mutex failed_mutex;
  std::optional<Status> failed;
  parallel_chunks(
      idx.size(), min_chunk,
      [&](std::uint64_t begin, std::uint64_t end) {
        const std::vector<std::int64_t> part(idx.begin() + static_cast<std::ptrdiff_t>(begin),
                                             idx.begin() + static_cast<std::ptrdiff_t>(end));
        auto r = spec.reference(inst.problem, inputs, output, part);
        if (r && r->size() == part.size()) {
          std::copy(r->begin(), r->end(), values.begin() + static_cast<std::ptrdiff_t>(begin));
          return;
        }
        std::lock_guard lock(failed_mutex);
        if (!failed)
          failed = r ? make_error(ErrorCode::internal, "the reference of " + output + " gave " + std::to_string(r->size()) +
                                                           " values for " + std::to_string(part.size()) + " positions")
                     : r.status();
      },
      spec.reference_thread_safe ? 0 : 1, unit);  // a throw reaches run_instance: the run's failure
  if (failed) return *failed;
  return values;
}

namespace {

// What the reference inputs of a run depend on. Made once per run: for MLA it is a JSON dump of a block table.
std::string reference_key(const KernelInstance& inst) {
  // Tensor maps carry the config's tile boxes and are no reference input: they stay out of the key.
  std::string key = inst.spec->name;
  key += '|';
  key += inst.problem.to_string();
  for (const ArgSpec& a : inst.args)
    if (a.kind != ArgSpec::Kind::tensor_map) {
      key += '|';
      key += nlohmann::json(a).dump();
    }
  return key;
}

// The reference inputs of this problem (`key` from reference_key) in `cache`, made unless it already holds them.
void ensure_inputs(const KernelInstance& inst, const std::string& key, ReferenceCache& cache) {
  if (cache.key == key) return;
  cache = ReferenceCache{};
  cache.key = key;
  for (const ArgSpec& a : inst.args) {
    if (a.kind == ArgSpec::Kind::scalar) cache.inputs.scalars[a.name] = a.value;
    else if (a.role == ArgRole::in || a.role == ArgRole::inout) cache.inputs.tensors[a.name] = make_host_tensor(a);
  }
}

// Output `name`'s reference at `positions` in `cache` (computed unless it already holds them).
Status ensure_reference(const KernelInstance& inst, ReferenceCache& cache, const std::string& name,
                        const std::vector<std::uint64_t>& positions) {
  ReferenceCache::Output& known = cache.outputs[name];
  if (known.positions == positions && known.reference.size() == positions.size()) return {};
  std::vector<std::int64_t> idx(positions.begin(), positions.end());
  auto values = compute_reference(inst, cache.inputs, name, idx);
  if (!values) return values.status().with_context("reference of " + name);
  known.positions = positions;
  known.reference = std::move(*values);
  return {};
}

// The reference of every output at the positions the worker will sample (the same sample_positions call), into
// `cache`: run on a thread while the worker runs the kernel, a sweep's first run does not wait for the float64
// reference after its kernel. Errors are left for check_outputs to meet again.
void prepare_reference(const KernelInstance& inst, const std::string& key, const LaunchSpec& spec,
                       ReferenceCache& cache) {
  ensure_inputs(inst, key, cache);
  for (const BufferSpec& b : spec.buffers)
    if (b.is_output()) (void)ensure_reference(inst, cache, b.name, sample_positions(b.count, b.max_samples, b.sample_seed, b.sample_unit));
}

Status check_outputs(const KernelInstance& inst, const std::string& key, const LaunchResult& result,
                     const RunOptions& options, ReferenceCache& cache, RunRecord& r) {
  ensure_inputs(inst, key, cache);
  const ReferenceInputs& inputs = cache.inputs;
  if (options.keep_data)
    for (const ArgSpec& a : inst.args)
      if (a.kind != ArgSpec::Kind::scalar && (a.role == ArgRole::in || a.role == ArgRole::inout))
        r.inputs.push_back(inputs.tensor(a.name));
  r.verified = !result.outputs.empty();
  for (const OutputResult& out : result.outputs) {
    OutputCheck check;
    check.name = out.name;
    check.dtype = out.dtype;
    for (const ArgSpec& a : inst.args)
      if (a.name == out.name) check.shape = a.shape;
    if (check.shape.empty()) check.shape = {static_cast<std::int64_t>(out.count)};
    TL_RETURN_IF_ERROR(ensure_reference(inst, cache, out.name, out.positions));
    const ReferenceCache::Output& known = cache.outputs[out.name];
    const std::vector<double>* ref = &known.reference;
    check.comparison = compare_samples(out.samples.data(), out.dtype, *ref, out.positions, inst.tolerance,
                                       out.unwritten.count);
    if (options.keep_data) {
      check.positions = out.positions;
      check.reference = *ref;
      check.samples.resize(out.positions.size());
      for (std::size_t i = 0; i < out.positions.size(); ++i) check.samples[i] = load_element(out.samples.data(), out.dtype, i);
      check.data = out.data;
    }
    r.verified = r.verified && check.comparison.passed;
    r.outputs.push_back(std::move(check));
  }
  return Status::success();
}

}  // namespace

int built_stages(const KernelInstance& inst) {
  if (!inst.config.has("num_stages")) return 0;
  if (const std::int64_t n = inst.config.integer("num_stages"); n > 0) return static_cast<int>(n);
  static const std::regex field(R"(\.num_stages = (\d+))");
  std::smatch m;
  return std::regex_search(inst.name_expression, m, field) ? std::stoi(m[1].str()) : 0;
}

Status add_timeline_build(const Jit& jit, PreparedKernel& kernel, JitOptions options) {
  const KernelInstance& inst = kernel.instance;
  if (!inst.spec || inst.spec->probes.empty())
    return make_error(ErrorCode::unsupported, (inst.spec ? inst.spec->name : std::string("this kernel")) +
                                                  " records no timeline (its spec lists no probes)");
  options.arch = kernel.compiled.arch.empty() ? options.arch : kernel.compiled.arch;
  options.defines.push_back("TL_TIMELINE=1");
  auto compiled = jit.compile(compile_request(inst, std::move(options)));
  if (!compiled) return compiled.status().with_context("the probe build");
  kernel.timeline = std::move(*compiled);
  return Status::success();
}

namespace {

void attach_timeline(const KernelInstance& inst, const LaunchResult& result, RunRecord& r) {
  if (!result.timeline) {
    r.timeline_error = "the worker returned no timeline";
    return;
  }
  const TimelineCapture& c = *result.timeline;
  r.timeline_time_ms = c.time_ms;
  if (!c.error.empty()) {
    r.timeline_error = c.error;
    return;
  }
  DecodeOptions o;
  o.regions = inst.spec->probes;
  o.num_stages = built_stages(inst);
  auto t = decode_timeline(c.buffer.data(), c.buffer.size(), o);
  if (!t) {
    r.timeline_error = t.status().message();
    return;
  }
  t->kernel = r.kernel;
  t->label = inst.problem.to_string() + "  " + inst.config.to_string();
  t->device = r.device;
  r.timeline = std::move(*t);
}

}  // namespace

RunRecord run_instance(WorkerClient& worker, const PreparedKernel& kernel, const RunOptions& options) {
  const KernelInstance& inst = kernel.instance;
  RunRecord r;
  try {
    r.kernel = inst.spec ? inst.spec->name : "";
    r.family = inst.spec ? inst.spec->family : "";
    r.tensor_cores = inst.spec && inst.spec->tensor_cores;
    r.name_expression = inst.name_expression;
    r.arch = kernel.compiled.arch;
    r.problem = inst.problem.map();
    r.config = inst.config.map();
    r.launch = inst.launch;
    r.resources = kernel.compiled.resources;
    r.flops = inst.flops;
    r.min_bytes = inst.min_bytes;
    r.tolerance = inst.tolerance;
    for (const ArgSpec& a : inst.args)
      if (a.kind == ArgSpec::Kind::tensor && a.role != ArgRole::out) {
        r.input_dtype = dtype_name(a.dtype);
        break;
      }
    r.timer = options.timing.timer;
    r.l2_flushed = options.timing.flush_l2;
    if (!inst.spec) {
      r.failure = RunFailure{ErrorCode::internal, "kernel instance without a spec", std::nullopt};
      return r;
    }
    if (Status timing = check_timing(options.timing); !timing.ok()) {
      r.failure = RunFailure{timing.code(), timing.message(), std::nullopt};
      return r;
    }

    auto spec = to_launch_spec(inst, kernel.compiled, options.timing);
    if (!spec) {
      r.failure = RunFailure{spec.status().code(), spec.status().message(), std::nullopt};
      return r;
    }
    spec->device = options.device;
    if (!options.vs.empty()) {
      auto b = baseline_for(inst, options.vs);
      if (!b) {
        r.failure = RunFailure{b.status().code(), b.status().message(), std::nullopt};
        return r;
      }
      spec->baseline = *b;
    }
    for (auto& b : spec->buffers) {
      b.max_samples = options.max_samples;
      if (inst.spec->sampling && b.is_output()) {
        const OutputSampling s = inst.spec->sampling(inst.problem, b.name);
        b.sample_unit = s.unit;
        if (s.max_samples && b.max_samples != 0 && s.max_samples < b.max_samples) b.max_samples = s.max_samples;
      }
      b.return_all = options.keep_data && b.is_output();
    }
    if (options.timeline) {
      if (!kernel.timeline) {
        r.failure = RunFailure{ErrorCode::invalid_argument,
                               "a timeline run needs the probe build: call add_timeline_build first", std::nullopt};
        return r;
      }
      TimelineLaunch t;
      const CompiledKernel& probes = *kernel.timeline;
      if (!probes.cubin.empty()) {
        t.image.assign(probes.cubin.begin(), probes.cubin.end());
      } else {
        t.image.assign(probes.ptx.begin(), probes.ptx.end());
        t.image.push_back(0);
      }
      t.kernel = probes.lowered_name;
      t.capacity = options.timeline_capacity;
      if (!t.capacity && inst.spec->probe_capacity) t.capacity = inst.spec->probe_capacity(inst.problem, inst.config, inst.limits);
      t.timed = options.timeline_timed;
      spec->timeline = std::move(t);
    }

    ReferenceCache local;
    ReferenceCache& cache = options.reference_cache ? *options.reference_cache : local;
    const std::string key = reference_key(inst);
    std::future<void> reference;  // joined before check_outputs touches the cache
    if (inst.spec->reference && inst.spec->reference_thread_safe)
      reference = std::async(std::launch::async, [&] { prepare_reference(inst, key, *spec, cache); });
    const auto call0 = std::chrono::steady_clock::now();
    r.gpu = options.device;
    auto result = run_launch(worker, *spec, options.timeout);
    const auto call1 = std::chrono::steady_clock::now();
    if (reference.valid()) {
      // A throwing reference is the run's failure only when the run itself worked (a fault says more).
      try {
        reference.get();
      } catch (...) {
        if (result) throw;
      }
    }
    if (!result) {
      RunFailure f{result.status().code(), result.status().message(), std::nullopt};
      if (worker.last_error().code == f.code) f.worker = worker.last_error();
      r.failure = std::move(f);
      return r;
    }
    r.device = result->device_name;
    r.attributes = result->attributes;
    r.time_ms = result->time_ms;
    r.times_ms = result->times_ms;
    r.graph_launches = result->graph_launches;
    r.baseline = result->baseline;
    r.dram = result->dram;
    if (r.time_ms.count > 0 && r.time_ms.median > 0) {
      const double seconds = r.time_ms.median * 1e-3;
      r.tflops = r.flops / seconds * 1e-12;
      r.gbps = r.min_bytes / seconds * 1e-9;
      if (options.ceilings) {
        const DType in = parse_dtype(r.input_dtype).value_or(DType::f32);
        r.efficiency = roofline_efficiency(r.tensor_cores, in, r.flops, r.min_bytes, seconds, *options.ceilings);
      }
    }
    if (options.timeline) attach_timeline(inst, *result, r);
    Status checked = check_outputs(inst, key, *result, options, cache, r);
    if (!checked.ok()) r.failure = RunFailure{checked.code(), checked.message(), std::nullopt};
    // With the worker's own phases (same level), where a run's time outside the kernel goes.
    log::debug("run ", inst.name_expression, ": worker call ",
               std::chrono::duration<double, std::milli>(call1 - call0).count(), " ms, check ",
               std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - call1).count(), " ms");
  } catch (const std::exception& e) {
    // A spec's reference or fill is user code (later also Lua): a throw is that run's failure, not the caller's.
    r.failure = RunFailure{ErrorCode::internal, std::string("while checking the run: ") + e.what(), std::nullopt};
  }
  return r;
}

}  // namespace tl
