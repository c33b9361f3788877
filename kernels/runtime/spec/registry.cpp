// Registry: add with checks, find with a did-you-mean, list sorted; validate and instantiate (kernel_spec.hpp).
#include "runtime/spec/registry.hpp"

#include <algorithm>

namespace tl {

Status Registry::add(KernelSpec spec) {
  if (spec.name.empty()) return make_error(ErrorCode::invalid_argument, "a kernel spec needs a name");
  for (const auto& s : m_specs)
    if (s->name == spec.name) return make_error(ErrorCode::invalid_argument, "kernel '" + spec.name + "' is already registered");
  std::string missing;
  if (spec.source.empty()) missing += " source";
  if (!spec.name_expression) missing += " name_expression";
  if (!spec.launch) missing += " launch";
  if (!spec.args) missing += " args";
  if (!missing.empty())
    return make_error(ErrorCode::invalid_argument, "kernel '" + spec.name + "' lacks:" + missing);
  m_specs.push_back(std::make_unique<KernelSpec>(std::move(spec)));
  return Status::success();
}

bool Registry::remove(const std::string& name) {
  for (auto it = m_specs.begin(); it != m_specs.end(); ++it)
    if ((*it)->name == name) {
      m_specs.erase(it);
      return true;
    }
  return false;
}

namespace {

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] != b[j - 1])});
      diag = up;
    }
  }
  return row[b.size()];
}

}  // namespace

Result<const KernelSpec*> Registry::find(const std::string& name) const {
  for (const auto& s : m_specs)
    if (s->name == name) return s.get();
  std::string names, best;
  std::size_t best_d = 4;  // only suggest close names
  for (const auto* s : list(true)) {
    names += (names.empty() ? "" : ", ") + s->name;
    std::size_t d = edit_distance(name, s->name);
    if (d < best_d) best_d = d, best = s->name;
  }
  std::string msg = "no kernel named '" + name + "'";
  if (!best.empty()) msg += " (did you mean '" + best + "'?)";
  msg += "; known: " + (names.empty() ? std::string("none") : names) + " (`tilelab kernels --all` lists them)";
  return make_error(ErrorCode::not_found, msg);
}

std::vector<const KernelSpec*> Registry::list(bool include_hidden) const {
  std::vector<const KernelSpec*> out;
  for (const auto& s : m_specs)
    if (include_hidden || !s->hidden) out.push_back(s.get());
  std::sort(out.begin(), out.end(), [](auto* a, auto* b) { return a->name < b->name; });
  return out;
}

// validate: the checks that build nothing; instantiate: those, then the launch, arguments and host data.

Result<ValidatedValues> validate(const KernelSpec& spec, const std::map<std::string, std::string>& problem,
                                 const std::map<std::string, std::string>& config, const DeviceLimits& limits) {
  auto ctx = [&](const Status& s) { return s.with_context(spec.name); };
  auto p = spec.problem.resolve(problem, "problem");
  if (!p) return ctx(p.status());
  auto c = spec.config.resolve(config, "config");
  if (!c) return ctx(c.status());
  if (limits.cc < spec.min_cc)
    return make_error(ErrorCode::unsupported, spec.name + " needs compute capability " + std::to_string(spec.min_cc / 10) +
                                                  "." + std::to_string(spec.min_cc % 10) + " or newer; " +
                                                  limits.arch + " is older");
  if (spec.can_implement) {
    Status s = spec.can_implement(*p, *c, limits);
    if (!s) return ctx(s);
  }
  return ValidatedValues{std::move(*p), std::move(*c)};
}

Result<KernelInstance> instantiate(const KernelSpec& spec, const std::map<std::string, std::string>& problem,
                                   const std::map<std::string, std::string>& config, const DeviceLimits& limits) {
  auto valid = validate(spec, problem, config, limits);
  if (!valid) return valid.status();
  KernelInstance k;
  k.spec = &spec;
  k.problem = std::move(valid->problem);
  k.config = std::move(valid->config);
  k.source = spec.source;
  k.name_expression = spec.name_expression(k.problem, k.config);
  k.limits = limits;
  k.launch = spec.launch(k.problem, k.config, limits);
  if (spec.pre_launch) k.pre_launch = spec.pre_launch(k.problem, k.config, limits);
  k.args = spec.args(k.problem, k.config, limits);
  k.flops = spec.flops ? spec.flops(k.problem) : 0;
  k.min_bytes = spec.min_bytes ? spec.min_bytes(k.problem) : 0;
  if (spec.tolerance) k.tolerance = spec.tolerance(k.problem, k.problem.has("dtype") ? k.problem.dtype() : DType::f32);
  const auto& b = k.launch.block;
  if (std::uint64_t(b.x) * b.y * b.z > static_cast<std::uint64_t>(limits.max_threads_per_block))
    return make_error(ErrorCode::unsupported, spec.name + ": " + std::to_string(b.x * b.y * b.z) +
                                                  " threads per block is over the limit of " +
                                                  std::to_string(limits.max_threads_per_block));
  if (k.launch.dynamic_smem > static_cast<std::size_t>(limits.smem_per_block_optin))
    return make_error(ErrorCode::unsupported, spec.name + ": needs " + std::to_string(k.launch.dynamic_smem) +
                                                  " bytes of shared memory per block; " + limits.arch + " allows " +
                                                  std::to_string(limits.smem_per_block_optin));
  return k;
}

Result<PreparedKernel> prepare_kernel(const Registry& registry, const Jit& jit, const std::string& name,
                                      const std::map<std::string, std::string>& problem,
                                      const std::map<std::string, std::string>& config, const DeviceLimits& limits,
                                      JitOptions options) {
  auto spec = registry.find(name);
  if (!spec) return spec.status();
  auto inst = instantiate(**spec, problem, config, limits);
  if (!inst) return inst.status();
  return compile_instance(jit, std::move(*inst), std::move(options));
}

Result<PreparedKernel> compile_instance(const Jit& jit, KernelInstance instance, JitOptions options) {
  options.arch = instance.limits.arch;
  auto compiled = jit.compile(compile_request(instance, std::move(options)));
  if (!compiled) return compiled.status();
  return PreparedKernel{std::move(instance), std::move(*compiled), std::nullopt};
}

Registry& kernel_registry() {
  static Registry registry;
  return registry;
}

}  // namespace tl
