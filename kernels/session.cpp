// Session: the target device, one JIT over the kernel sources, and a lazily started worker.
#include "session.hpp"

#include "library.hpp"

namespace tl {

std::string resolve_cache_dir(const std::string& cache_dir) { return cache_dir.empty() ? default_cache_dir() : cache_dir; }

RunTarget find_run_target(const std::string& cache_dir) {
  RunTarget t;
  t.limits = limits_for_arch("sm_90a");
  auto dev = query_device(0);
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

Result<std::unique_ptr<Session>> Session::open(SessionOptions options) {
  auto sources = kernel_sources(options.kernels_dir);
  if (!sources) return sources.status();
  std::unique_ptr<Session> s(new Session());
  s->m_options = std::move(options);
  s->m_cache_dir = resolve_cache_dir(s->m_options.cache_dir);
  s->m_target = find_run_target(s->m_cache_dir);
  s->m_cache = std::make_unique<KernelCache>(s->m_cache_dir);
  s->m_jit = std::make_unique<Jit>(std::move(*sources), s->m_cache.get());
  return s;
}

Registry& Session::registry() { return library_registry(); }

Result<KernelInstance> Session::instantiate(const std::string& kernel, const std::map<std::string, std::string>& problem,
                                            const std::map<std::string, std::string>& config) const {
  auto spec = library_registry().find(kernel);
  if (!spec) return spec.status();
  return tl::instantiate(**spec, problem, config, m_target.limits);
}

Result<PreparedKernel> Session::prepare(const std::string& kernel, const std::map<std::string, std::string>& problem,
                                        const std::map<std::string, std::string>& config, JitOptions options) const {
  return prepare_kernel(library_registry(), *m_jit, kernel, problem, config, m_target.limits, std::move(options));
}

WorkerClient& Session::worker() {
  if (!m_worker) {
    WorkerOptions wo = m_options.worker;
    wo.timeout = m_options.timeout;
    m_worker = std::make_unique<WorkerClient>(std::move(wo));
  }
  return *m_worker;
}

RunRecord Session::run(const PreparedKernel& kernel, RunOptions options) {
  if (!m_target.device) {
    const KernelInstance& in = kernel.instance;
    return failed_record(in.spec->name, in.problem.map(), in.config.map(),
                         make_error(ErrorCode::no_device, "no GPU: " + m_target.why_no_device));
  }
  if (!options.ceilings && m_target.ceilings) options.ceilings = &*m_target.ceilings;
  if (options.timeout.count() == 0) options.timeout = m_options.timeout;
  return run_instance(worker(), kernel, options);
}

}  // namespace tl
