// Session: the target device, one JIT over the kernel sources, and a lazily started worker.
#include "session/session.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "library/library.hpp"
#include "runtime/core/log.hpp"
#include "runtime/device/device_profile.hpp"
#include "runtime/worker/ceilings.hpp"

namespace tl {

std::string resolve_cache_dir(const std::string& cache_dir) { return cache_dir.empty() ? default_cache_dir() : cache_dir; }

RunTarget find_run_target(const std::string& cache_dir, int index) {
  RunTarget t;
  t.limits = limits_for_arch("sm_90a");
  auto dev = query_device(index);
  if (!dev) {
    t.why_no_device = dev.status().message();
    return t;
  }
  t.device = *dev;
  t.limits = limits_for_device(*dev);
  auto c = load_ceilings(ceilings_cache_path(resolve_cache_dir(cache_dir), *dev));
  if (c) t.ceilings = *c;
  return t;
}

namespace fs = std::filesystem;

Result<CeilingsSource> find_ceilings(const std::string& profile, const std::string& cache_dir,
                                     const std::vector<nlohmann::json>& records, WorkerClient* worker) {
  if (!profile.empty()) {
    auto p = load_device_profile(profile);
    if (!p) return p.status();
    return CeilingsSource{p->ceilings, "device profile " + profile + " (" + p->device_name() + ")"};
  }
  const std::string dir = resolve_cache_dir(cache_dir);
  SystemInfo sys = query_system();
  if (!sys.devices.empty()) {
    if (!fs::exists(ceilings_cache_path(dir, sys.devices[0])))
      std::fprintf(stderr, "measuring the ceilings of GPU 0 (once; cached in %s)\n", dir.c_str());
    std::optional<WorkerClient> own;
    if (!worker) worker = &own.emplace();
    auto c = device_ceilings(*worker, sys.devices[0], dir, false);
    if (!c) return c.status().with_context("ceilings of GPU 0");
    return CeilingsSource{*c, "GPU 0 (" + sys.devices[0].name + "), " + ceilings_cache_path(dir, sys.devices[0])};
  }
  std::vector<fs::path> cached;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("ceilings-", 0) == 0 && e.path().extension() == ".json") cached.push_back(e.path());
  }
  std::sort(cached.begin(), cached.end(), [](const fs::path& x, const fs::path& y) {
    std::error_code e1, e2;
    return fs::last_write_time(x, e1) > fs::last_write_time(y, e2);  // newest first
  });
  std::string wanted;
  for (const auto& r : records)
    if (r.contains("device") && r["device"].is_string() && !r["device"].get<std::string>().empty()) {
      wanted = r["device"];
      break;
    }
  std::optional<CeilingsSource> newest;
  for (const auto& p : cached) {
    auto c = load_device_profile(p.string());
    if (!c) {
      log::debug("skipping ", p.string(), ": ", c.status().message());
      continue;
    }
    CeilingsSource s{c->ceilings, "cached ceilings " + p.string()};
    if (!wanted.empty() && c->ceilings.device_name == wanted) return s;
    if (!newest) newest = s;
  }
  if (newest) return *newest;
  return make_error(ErrorCode::not_found,
                    "no GPU here (" + sys.why_no_device + ") and no cached ceilings in " + dir);
}

Result<std::unique_ptr<Session>> Session::open(SessionOptions options) {
  auto sources = kernel_sources(options.kernels_dir);
  if (!sources) return sources.status();
  std::unique_ptr<Session> s(new Session());
  s->m_options = std::move(options);
  s->m_cache_dir = resolve_cache_dir(s->m_options.cache_dir);
  s->m_gpu0 = &s->gpu(0);
  if (s->has_device()) s->m_gpu_count = device_count().value_or(1);
  s->m_cache = std::make_unique<KernelCache>(s->m_cache_dir);
  s->m_jit = std::make_unique<Jit>(std::move(*sources), s->m_cache.get());
  return s;
}

Registry& Session::registry() { return library_registry(); }

Result<KernelInstance> Session::instantiate(const std::string& kernel, const std::map<std::string, std::string>& problem,
                                            const std::map<std::string, std::string>& config) const {
  auto spec = library_registry().find(kernel);
  if (!spec) return spec.status();
  return tl::instantiate(**spec, problem, config, target().limits);
}

Result<PreparedKernel> Session::prepare(const std::string& kernel, const std::map<std::string, std::string>& problem,
                                        const std::map<std::string, std::string>& config, JitOptions options) const {
  return prepare_kernel(library_registry(), *m_jit, kernel, problem, config, target().limits, std::move(options));
}

Session::Gpu& Session::gpu(int index) {
  std::lock_guard lock(m_gpus_mutex);
  auto [it, fresh] = m_gpus.try_emplace(index);
  if (fresh) it->second.target = find_run_target(m_cache_dir, index);
  return it->second;
}

const RunTarget& Session::target(int index) { return gpu(index).target; }

WorkerClient& Session::worker(int index) {
  Gpu& g = gpu(index);
  if (!g.worker) {
    WorkerOptions wo = m_options.worker;
    wo.timeout = m_options.timeout;
    g.worker = std::make_unique<WorkerClient>(std::move(wo));
  }
  return *g.worker;
}

Result<Ceilings> Session::ceilings() {
  RunTarget& t = m_gpu0->target;
  if (t.ceilings) return *t.ceilings;
  if (!t.device) return make_error(ErrorCode::no_device, "no GPU: " + t.why_no_device);
  auto c = device_ceilings(worker(), *t.device, m_cache_dir, false);
  if (!c) return c.status();
  t.ceilings = *c;
  return c;
}

RunRecord Session::run(const PreparedKernel& kernel, RunOptions options) {
  const RunTarget& t = target(options.device);
  if (!t.device) {
    const KernelInstance& in = kernel.instance;
    return failed_record(in.spec->name, in.problem.map(), in.config.map(),
                         make_error(ErrorCode::no_device, "no GPU: " + t.why_no_device));
  }
  if (!options.ceilings && t.ceilings) options.ceilings = &*t.ceilings;
  if (options.timeout.count() == 0) options.timeout = m_options.timeout;
  return run_instance(worker(options.device), kernel, options);
}

Result<Session::Bench> Session::bench(const std::string& kernel, const std::map<std::string, std::string>& problem,
                                      const std::map<std::string, std::string>& config, RunOptions options) {
  auto spec = library_registry().find(kernel);
  if (!spec) return spec.status();
  auto invalid = [](const Status& s) { return make_error(s.code(), "invalid problem/config: " + s.message()); };
  // The checks that need nothing built (schemas, can_implement, the baseline's library), then the GPU: the instance's
  // arguments and host data (mla.sparse_decode's index lists: minutes at tens of GB) are built only for a run.
  auto valid = validate(**spec, problem, config, target().limits);
  if (!valid) return invalid(valid.status());
  if (!options.vs.empty()) TL_RETURN_IF_ERROR(baseline_available(**spec, valid->problem, valid->config, options.vs));
  if (!has_device()) return make_error(ErrorCode::no_device, "cannot run " + kernel + ": no GPU: " + target().why_no_device);
  auto inst = tl::instantiate(**spec, problem, config, target().limits);
  if (!inst) return invalid(inst.status());
  if (!options.vs.empty()) {
    auto b = baseline_for(*inst, options.vs);
    if (!b) return b.status();
  }
  auto compiled = compile_instance(*m_jit, std::move(*inst));
  if (!compiled) return compiled.status();
  PreparedKernel& prepared = *compiled;
  if (options.timeline) TL_RETURN_IF_ERROR(add_timeline_build(*m_jit, prepared));
  RunRecord record = run(prepared, options);
  return Bench{std::move(prepared), std::move(record)};
}

}  // namespace tl
