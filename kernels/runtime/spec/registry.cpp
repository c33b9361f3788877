// Registry: add with checks, find with a did-you-mean, list sorted.
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

Result<PreparedKernel> prepare_kernel(const Registry& registry, const Jit& jit, const std::string& name,
                                      const std::map<std::string, std::string>& problem,
                                      const std::map<std::string, std::string>& config, const DeviceLimits& limits,
                                      JitOptions options) {
  auto spec = registry.find(name);
  if (!spec) return spec.status();
  auto inst = instantiate(**spec, problem, config, limits);
  if (!inst) return inst.status();
  options.arch = limits.arch;
  auto compiled = jit.compile(compile_request(*inst, std::move(options)));
  if (!compiled) return compiled.status();
  return PreparedKernel{std::move(*inst), std::move(*compiled), std::nullopt};
}

Registry& kernel_registry() {
  static Registry registry;
  return registry;
}

}  // namespace tl
