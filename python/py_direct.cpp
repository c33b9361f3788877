// The direct call: a library kernel run in this process on the caller's DLPack tensors (torch, JAX, CuPy) and CUDA
// stream, no worker: the problem inferred from the tensors' shapes and dtypes, every tensor checked against the
// spec's arguments, the kernel compiled once per problem, config and device, then launched asynchronously.
#include <cinttypes>
#include <mutex>

#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "library/library.hpp"
#include "py_common.hpp"
#include "runtime/measure/bench.hpp"
#include "runtime/worker/launch.hpp"

namespace tl::py {

namespace {

using nb::literals::operator""_a;
using Array = nb::ndarray<nb::ro>;

// What the checks need of a tensor handed over through DLPack.
struct TensorDesc {
  std::vector<std::int64_t> shape;
  std::optional<DType> dtype;  // empty: a type TileLab has no name for
  std::string dtype_text;      // as DLPack names it ("float32", "bfloat16", "complex64")
  int device_type = 0, device_id = 0;
  bool contiguous = true;
  std::uintptr_t address = 0;
};

std::string dlpack_dtype_text(nb::dlpack::dtype t) {
  using C = nb::dlpack::dtype_code;
  std::string base;
  switch (static_cast<C>(t.code)) {
    case C::Int: base = "int"; break;
    case C::UInt: base = "uint"; break;
    case C::Float: base = "float"; break;
    case C::Bfloat: base = "bfloat"; break;
    case C::Complex: base = "complex"; break;
    case C::Bool: return "bool";
    case C::Float8_E4M3FN: return "float8_e4m3fn";
    case C::Float8_E5M2: return "float8_e5m2";
    default: base = "dtype" + std::to_string(t.code) + "_"; break;
  }
  return base + std::to_string(t.bits) + (t.lanes != 1 ? "x" + std::to_string(t.lanes) : "");
}

std::optional<DType> dtype_of(nb::dlpack::dtype t) {
  using C = nb::dlpack::dtype_code;
  if (t.lanes != 1) return std::nullopt;
  switch (static_cast<C>(t.code)) {
    case C::Float:
      if (t.bits == 16) return DType::f16;
      if (t.bits == 32) return DType::f32;
      if (t.bits == 64) return DType::f64;
      break;
    case C::Bfloat:
      if (t.bits == 16) return DType::bf16;
      break;
    case C::Int:
      if (t.bits == 8) return DType::i8;
      if (t.bits == 32) return DType::i32;
      if (t.bits == 64) return DType::i64;
      break;
    case C::UInt:
      if (t.bits == 8) return DType::u8;
      if (t.bits == 32) return DType::u32;
      if (t.bits == 64) return DType::u64;
      break;
    case C::Float8_E4M3FN: return DType::e4m3;
    case C::Float8_E5M2: return DType::e5m2;
    default: break;
  }
  return std::nullopt;
}

TensorDesc describe(const Array& a) {
  TensorDesc d;
  d.dtype = dtype_of(a.dtype());
  d.dtype_text = dlpack_dtype_text(a.dtype());
  d.device_type = a.device_type();
  d.device_id = a.device_id();
  d.address = reinterpret_cast<std::uintptr_t>(a.data());
  std::int64_t expected = 1;
  for (std::size_t i = a.ndim(); i-- > 0;) {
    const auto n = static_cast<std::int64_t>(a.shape(i));
    if (a.stride_ptr() && n != 1 && a.stride(i) != expected) d.contiguous = false;
    expected *= n;
  }
  for (std::size_t i = 0; i < a.ndim(); ++i) d.shape.push_back(static_cast<std::int64_t>(a.shape(i)));
  return d;
}

// fp8 tensors may come as their bytes (torch: t.view(torch.uint8)), since not every framework exports fp8 by DLPack.
bool dtype_matches(const TensorDesc& t, DType want) {
  if (t.dtype == want) return true;
  return (want == DType::e4m3 || want == DType::e5m2) && (t.dtype == DType::u8 || t.dtype == DType::i8);
}

std::string shape_text(const std::vector<std::int64_t>& s) {
  std::string t = "[";
  for (std::size_t i = 0; i < s.size(); ++i) t += (i ? ", " : "") + std::to_string(s[i]);
  return t + "]";
}

std::string device_text(int type, int id) {
  switch (type) {
    case 1: return "the CPU";
    case 2: return "cuda:" + std::to_string(id);
    case 3: return "pinned host memory";
    case 13: return "CUDA managed memory";
    default: return "DLPack device type " + std::to_string(type);
  }
}

// Tensors the caller passes (inputs; outputs through out=) rather than TileLab allocating them: inputs and inouts,
// except tables the problem defines (Fill::Kind::data: sequence offsets), which the caller may pass too.
bool caller_input(const ArgSpec& a) { return a.role == ArgRole::in || a.role == ArgRole::inout; }

std::vector<ArgSpec> tensor_args(const std::vector<ArgSpec>& args) {
  std::vector<ArgSpec> t;
  for (const ArgSpec& a : args)
    if (a.kind == ArgSpec::Kind::tensor) t.push_back(a);
  return t;
}

// The spec's tensors for unvalidated values (an inference probe), or none when its args function refuses them.
std::optional<std::vector<ArgSpec>> probe_args(const KernelSpec& spec, const Values& p, const Values& c,
                                               const DeviceLimits& limits) {
  try {
    return tensor_args(spec.args(p, c, limits));
  } catch (...) {
    return std::nullopt;
  }
}

using Descs = std::map<std::string, TensorDesc>;

// How well the given tensors fit the spec's tensors at these values: a point for each matching shape and each
// matching dtype, so that parameters which act on one or the other (a head size, a dtype) are found one at a time.
int match_score(const KernelSpec& spec, const Values& p, const Values& c, const DeviceLimits& limits, const Descs& given) {
  auto args = probe_args(spec, p, c, limits);
  if (!args) return -1;
  int score = 0;
  for (const ArgSpec& a : *args)
    if (auto it = given.find(a.name); it != given.end())
      score += (it->second.shape == a.shape) + dtype_matches(it->second, a.dtype);
  return score;
}

// Distinct primes above 1024, so that no dimension the spec derives otherwise (tiles, head sizes, products of
// powers of two) takes one of their values by chance.
constexpr std::int64_t k_sentinels[] = {1031, 1033, 1039, 1049, 1051, 1061, 1063, 1069, 1087, 1091, 1093, 1097,
                                        1103, 1109, 1117, 1123, 1129, 1151, 1153, 1163, 1171, 1181, 1187, 1193};

// The problem the tensors imply, on top of what the caller gave: each integer parameter left unset that a tensor
// dimension equals (found by evaluating the spec's arguments with a distinct prime in each), then each choice
// (dtype, a head size of a few allowed values) that makes the most tensors match, the default on a tie.
std::map<std::string, std::string> infer_problem(const KernelSpec& spec, const std::map<std::string, std::string>& given,
                                                 const Values& config, const Descs& tensors, const DeviceLimits& limits) {
  std::map<std::string, std::string> problem = given;
  Values probe = take(spec.problem.resolve(given, spec.name + " problem"));
  std::vector<std::pair<std::string, std::int64_t>> free;
  for (const ParamSpec& p : spec.problem.params) {
    if (p.type != ParamType::int_ || !p.choices.empty() || given.count(p.name)) continue;
    if (free.size() == std::size(k_sentinels)) break;
    free.emplace_back(p.name, k_sentinels[free.size()]);
    probe.set(p.name, std::to_string(free.back().second));
  }
  if (auto args = probe_args(spec, probe, config, limits)) {
    for (const auto& [name, sentinel] : free) {
      bool found = false;
      for (const ArgSpec& a : *args) {
        auto t = tensors.find(a.name);
        if (found || t == tensors.end() || t->second.shape.size() != a.shape.size()) continue;
        for (std::size_t d = 0; d < a.shape.size() && !found; ++d)
          if (a.shape[d] == sentinel) {
            problem[name] = std::to_string(t->second.shape[d]);
            found = true;
          }
      }
    }
  }
  auto current = spec.problem.resolve(problem, spec.name + " problem");
  if (!current) return problem;  // the caller's checks say what is wrong with it
  for (const ParamSpec& p : spec.problem.params) {
    if (p.choices.empty() || p.type == ParamType::bool_ || given.count(p.name)) continue;
    std::string best = current->text(p.name);
    int best_score = match_score(spec, *current, config, limits, tensors);
    for (const std::string& choice : p.choices) {
      Values v = *current;
      v.set(p.name, choice);
      if (int s = match_score(spec, v, config, limits, tensors); s > best_score) {
        best_score = s;
        best = choice;
      }
    }
    if (best != current->text(p.name)) {
      current->set(p.name, best);
      problem[p.name] = best;
    }
  }
  return problem;
}

Array array_of(const std::string& name, nb::handle v) {
  Array a;
  if (!nb::try_cast(v, a))
    throw nb::type_error(("tensor '" + name + "' is a " + nb::cast<std::string>(nb::str(v.type().attr("__name__"))) +
                          ", not a DLPack tensor (torch, CuPy, JAX or NumPy arrays)").c_str());
  return a;
}

Descs describe_all(nb::dict tensors) {
  Descs d;
  for (auto [k, v] : tensors) {
    const std::string name = nb::cast<std::string>(k);
    d[name] = describe(array_of(name, v));
  }
  return d;
}

// The caller's tensors against the instance's: names, dtypes, shapes, contiguity, device, alignment. `complete`:
// every tensor must be there (the launch); otherwise only the inputs (the plan, before outputs are allocated).
void check_tensors(const KernelInstance& inst, const Descs& tensors, bool complete) {
  const std::string& kernel = inst.spec->name;
  const std::vector<ArgSpec> args = tensor_args(inst.args);
  std::string names;
  for (const ArgSpec& a : args) names += (names.empty() ? "" : ", ") + a.name;
  for (const auto& [name, t] : tensors) {
    if (std::none_of(args.begin(), args.end(), [&](const ArgSpec& a) { return a.name == name; }))
      raise(ErrorCode::invalid_argument, kernel + ": it has no tensor '" + name + "' (its tensors: " + names + ")");
  }
  const std::string at = " for " + inst.problem.to_string();
  // Every tensor's type and shape first, then where they are: a wrong shape is named even on a machine without a GPU.
  for (const ArgSpec& a : args) {
    auto it = tensors.find(a.name);
    const std::string want = std::string(dtype_name(a.dtype)) + " " + shape_text(a.shape);
    if (it == tensors.end()) {
      if ((complete || caller_input(a)) && a.fill.kind != Fill::Kind::data)
        raise(ErrorCode::invalid_argument, kernel + ": missing tensor '" + a.name + "' (" + want + at + ")");
      continue;
    }
    const TensorDesc& t = it->second;
    const std::string what = kernel + ": tensor '" + a.name + "'";
    if (!dtype_matches(t, a.dtype))
      raise(ErrorCode::invalid_argument, what + " is " + t.dtype_text + "; it must be " + want + at);
    if (t.shape != a.shape)
      raise(ErrorCode::invalid_argument, what + " has shape " + shape_text(t.shape) + "; it must be " + want + at);
    if (!t.contiguous)
      raise(ErrorCode::invalid_argument, what + " is not contiguous (row-major): pass a contiguous copy (torch: .contiguous())");
  }
  std::optional<std::pair<std::string, int>> first_device;
  for (const ArgSpec& a : args) {
    auto it = tensors.find(a.name);
    if (it == tensors.end()) continue;
    const TensorDesc& t = it->second;
    const std::string what = kernel + ": tensor '" + a.name + "'";
    if (t.device_type != 2)
      raise(ErrorCode::invalid_argument, what + " is on " + device_text(t.device_type, t.device_id) +
                                             ": the direct call runs on CUDA tensors (torch: .cuda(); or use run() "
                                             "to run the kernel on its own inputs in the worker)");
    if (!first_device) first_device = {a.name, t.device_id};
    else if (first_device->second != t.device_id)
      raise(ErrorCode::invalid_argument, what + " is on cuda:" + std::to_string(t.device_id) + " but '" +
                                             first_device->first + "' is on cuda:" + std::to_string(first_device->second));
    if (t.address % 16 != 0) {
      char addr[32];
      std::snprintf(addr, sizeof addr, "0x%" PRIxPTR, t.address);
      raise(ErrorCode::invalid_argument, what + " starts at " + addr + ", not 16-byte aligned (a view at an offset?): "
                                             "pass a copy (torch: .clone())");
    }
  }
}

// A kernel compiled and loaded for one problem, config and device; shared by the plans that resolve to it.
struct Loaded {
  KernelInstance instance;
  InProcessKernel kernel;
};

std::shared_ptr<const Loaded> load(const std::string& kernel, const KernelInstance& inst, int device,
                                   const DeviceLimits& limits) {
  static std::mutex mutex;
  static std::map<std::string, std::shared_ptr<const Loaded>> loaded;
  const std::string key = kernel + "|" + inst.problem.to_string() + "|" + inst.config.to_string() + "|" + std::to_string(device);
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = loaded.find(key); it != loaded.end()) return it->second;
  PreparedKernel prepared = take(prepare_kernel(library_registry(), session().jit(), kernel, inst.problem.map(),
                                                inst.config.map(), limits));
  LaunchSpec spec = take(to_launch_spec(prepared.instance, prepared.compiled, {}));
  InProcessKernel k = take(InProcessKernel::load(std::move(spec), device));
  auto entry = std::make_shared<const Loaded>(Loaded{std::move(prepared.instance), std::move(k)});
  loaded[key] = entry;
  return entry;
}

Result<DeviceLimits> device_limits(int device) {
  static std::map<int, DeviceLimits> known;
  if (auto it = known.find(device); it != known.end()) return it->second;
  auto info = query_device(device);
  if (!info) return info.status();
  return known[device] = limits_for_device(*info);
}

// What the Python side gets: the resolved problem and config, the tensors it must allocate, and the launch.
struct Plan {
  std::shared_ptr<const Loaded> loaded;
  int device = 0;
};

nb::dict arg_dict(const ArgSpec& a) {
  nb::dict d;
  d["name"] = a.name;
  d["dtype"] = dtype_name(a.dtype);
  d["shape"] = nb::tuple(nb::cast(a.shape));
  d["role"] = a.fill.kind == Fill::Kind::data && caller_input(a) ? "table"
              : a.role == ArgRole::in                            ? "in"
              : a.role == ArgRole::out                           ? "out"
              : a.role == ArgRole::inout                         ? "inout"
                                                                 : "scratch";
  d["data"] = a.fill.kind == Fill::Kind::data ? nb::object(nb::bytes(a.data.data(), a.data.size())) : nb::none();
  return d;
}

// direct_tensors(kernel, problem, config) -> the tensors of the kernel at these values (defaults for the rest, no
// inference): what a direct call takes and returns, in the kernel's order.
nb::list direct_tensors(const std::string& kernel, nb::handle problem, nb::handle config) {
  const KernelSpec& spec = find_kernel(kernel);
  const Values p = take(spec.problem.resolve(param_map(problem, "problem"), spec.name + " problem"));
  const Values c = take(spec.config.resolve(param_map(config, "config"), spec.name + " config"));
  nb::list l;
  for (const ArgSpec& a : tensor_args(spec.args(p, c, session().target().limits))) l.append(arg_dict(a));
  return l;
}

nb::dict infer(const std::string& kernel, nb::handle problem, nb::handle config, nb::dict tensors) {
  const KernelSpec& spec = find_kernel(kernel);
  const Values c = take(spec.config.resolve(param_map(config, "config"), spec.name + " config"));
  const auto p = infer_problem(spec, param_map(problem, "problem"), c, describe_all(tensors), session().target().limits);
  return typed_values(spec.problem, take(spec.problem.resolve(p, spec.name + " problem")));
}

// direct_plan(kernel, problem, config, tensors, device) -> Plan: the problem inferred, the inputs checked, the
// kernel compiled and loaded on the tensors' device (`device` when no tensor is given).
Plan direct_plan(const std::string& kernel, nb::handle problem, nb::handle config, nb::dict tensors, int device) {
  const KernelSpec& spec = find_kernel(kernel);
  const auto given_problem = param_map(problem, "problem");
  const auto given_config = param_map(config, "config");
  const Values c = take(spec.config.resolve(given_config, spec.name + " config"));
  const Descs descs = describe_all(tensors);
  for (const auto& [name, t] : descs)
    if (t.device_type == 2) {
      device = t.device_id;
      break;
    }
  // Shapes are checked against the tensors' GPU when there is one, else against the session's target (sm_90a's
  // limits without a GPU), so that a mistake is named before the device is.
  DeviceLimits limits = session().target().limits;
  bool on_gpu = false;
  if (device >= 0) {
    if (auto l = device_limits(device)) {
      limits = *l;
      on_gpu = true;
    }
  }
  const auto p = infer_problem(spec, given_problem, c, descs, limits);
  auto inst = instantiate(spec, p, given_config, limits);
  if (!inst) {
    std::string inferred;
    for (const auto& [k, v] : p)
      if (!given_problem.count(k)) inferred += (inferred.empty() ? "" : ",") + k + "=" + v;
    raise(inst.status().code(), "invalid problem/config: " + inst.status().message() +
                                    (inferred.empty() ? "" : " (from the tensors: " + inferred + ")"));
  }
  check_tensors(*inst, descs, false);
  if (!on_gpu) {
    auto why = query_device(device < 0 ? 0 : device);
    raise(ErrorCode::no_device, "cannot run " + kernel + ": no GPU: " +
                                    (why ? "device " + std::to_string(device) + " is not usable" : why.status().message()));
  }
  return Plan{load(kernel, *inst, device, limits), device};
}

void launch(const Plan& plan, nb::dict tensors, std::uintptr_t stream) {
  const KernelInstance& inst = plan.loaded->instance;
  std::vector<Array> arrays;  // keeps each DLPack tensor alive until the launch is queued
  Descs descs;
  for (auto [k, v] : tensors) {
    const std::string name = nb::cast<std::string>(k);
    arrays.push_back(array_of(name, v));
    descs[name] = describe(arrays.back());
  }
  check_tensors(inst, descs, true);
  std::vector<void*> ptrs;
  for (const ArgSpec& a : tensor_args(inst.args)) ptrs.push_back(reinterpret_cast<void*>(descs.at(a.name).address));
  Status s = plan.loaded->kernel.launch(ptrs, reinterpret_cast<void*>(stream));
  if (!s && s.code() == ErrorCode::fault)
    raise(s.code(), s.message() + " (the kernel ran in this process: its CUDA context is lost; restart Python)");
  if (!s) raise(s);
}

}  // namespace

void bind_direct(nb::module_& m) {
  nb::class_<Plan>(m, "DirectPlan", "A kernel compiled for one problem, config and device, launched on the caller's tensors.")
      .def_prop_ro("kernel", [](const Plan& p) { return p.loaded->instance.spec->name; })
      .def_prop_ro("problem", [](const Plan& p) { return typed_values(p.loaded->instance.spec->problem, p.loaded->instance.problem); })
      .def_prop_ro("config", [](const Plan& p) { return typed_values(p.loaded->instance.spec->config, p.loaded->instance.config); })
      .def_prop_ro("device", [](const Plan& p) { return p.device; })
      .def_prop_ro("tensors",
                   [](const Plan& p) {
                     nb::list l;
                     for (const ArgSpec& a : tensor_args(p.loaded->instance.args)) l.append(arg_dict(a));
                     return l;
                   })
      .def_prop_ro("name_expression", [](const Plan& p) { return p.loaded->instance.name_expression; })
      .def("launch", &launch, "tensors"_a, "stream"_a);
  m.def("direct_tensors", &direct_tensors, "kernel"_a, "problem"_a.none(), "config"_a.none());
  m.def("direct_infer", &infer, "kernel"_a, "problem"_a.none(), "config"_a.none(), "tensors"_a);
  m.def("direct_plan", &direct_plan, "kernel"_a, "problem"_a.none(), "config"_a.none(), "tensors"_a, "device"_a = -1);
}

}  // namespace tl::py
