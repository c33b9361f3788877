// `tilelab compile KERNEL [--config ..] [--problem ..] [--arch ..]`: JIT one kernel config and show its resources.
#include <chrono>
#include <cstdio>
#include <iostream>

#include <nlohmann/json.hpp>

#include "app/cli/commands.hpp"
#include "library/library.hpp"
#include "runtime/core/files.hpp"
#include "runtime/jit/cache.hpp"

namespace tl::cli {
namespace {

struct CompileArgs {
  std::string kernel, config, problem, arch = "sm_90a", ptx, cubin, kernels_dir, cache_dir;
  bool json = false, no_cache = false, fast_math = false, timeline = false;
};

std::string bytes_or_na(int v) { return v < 0 ? "n/a" : std::to_string(v) + " B"; }

Status run_compile(const CompileArgs& a) {
  TL_RETURN_IF_ERROR(check_arch(a.arch));
  auto spec = library_registry().find(a.kernel);
  if (!spec) return spec.status();
  auto config = parse_key_values(a.config);
  if (!config) return config.status().with_context("--config");
  auto problem = parse_key_values(a.problem);
  if (!problem) return problem.status().with_context("--problem");
  auto inst = instantiate(**spec, *problem, *config, limits_for_arch(a.arch));
  if (!inst) return inst.status();

  auto sources = kernel_sources(a.kernels_dir);
  if (!sources) return sources.status();
  KernelCache cache(a.cache_dir.empty() ? default_cache_dir() : a.cache_dir);
  Jit jit(std::move(*sources), a.no_cache ? nullptr : &cache);
  JitOptions opt;
  opt.arch = a.arch;
  opt.fast_math = a.fast_math;
  if (a.timeline) opt.defines.push_back("TL_TIMELINE=1");  // the probe build, as `tilelab timeline` compiles it
  auto k = jit.compile(compile_request(*inst, opt));
  if (!k) return k.status();

  if (!a.ptx.empty()) TL_RETURN_IF_ERROR(write_file_atomic(a.ptx, k->ptx));
  if (!a.cubin.empty()) TL_RETURN_IF_ERROR(write_file_atomic(a.cubin, std::string_view(k->cubin.data(), k->cubin.size())));

  const auto& r = k->resources;
  if (a.json) {
    nlohmann::json j = {{"kernel", a.kernel},
                        {"config", inst->config.map()},
                        {"problem", inst->problem.map()},
                        {"name_expression", k->name_expression},
                        {"lowered_name", k->lowered_name},
                        {"arch", k->arch},
                        {"resources", r},
                        {"launch", inst->launch},
                        {"args", inst->args},
                        {"flops", inst->flops},
                        {"min_bytes", inst->min_bytes},
                        {"compile_ms", k->compile_ms},
                        {"from_cache", k->from_cache},
                        {"cache_key", k->key},
                        {"sources", jit.sources().describe()},
                        {"cubin_bytes", k->cubin.size()},
                        {"ptx_bytes", k->ptx.size()}};
    std::cout << j.dump(2) << '\n';
    return Status::success();
  }
  const auto& g = inst->launch;
  std::printf("kernel      %s  config %s  problem %s\n", a.kernel.c_str(), inst->config.to_string().c_str(),
              inst->problem.to_string().c_str());
  std::printf("expression  %s\n", k->name_expression.c_str());
  std::printf("lowered     %s\n", k->lowered_name.c_str());
  std::printf("arch        %s\n", k->arch.c_str());
  std::printf("registers   %d per thread\n", r.registers);
  std::printf("shared      %s static + %u B dynamic per block\n", bytes_or_na(r.shared_static_bytes).c_str(),
              static_cast<unsigned>(g.dynamic_smem));
  std::printf("spills      %s stores, %s loads; stack frame %s\n", bytes_or_na(r.spill_store_bytes).c_str(),
              bytes_or_na(r.spill_load_bytes).c_str(), bytes_or_na(r.stack_frame_bytes).c_str());
  std::printf("launch      grid (%u,%u,%u) block (%u,%u,%u)", g.grid.x, g.grid.y, g.grid.z, g.block.x, g.block.y,
              g.block.z);
  if (g.cluster.volume() > 1) std::printf(" cluster (%u,%u,%u)", g.cluster.x, g.cluster.y, g.cluster.z);
  std::printf("\n");
  std::printf("compile     %.1f ms (%s)\n", k->compile_ms, k->from_cache ? "cache hit" : "NVRTC");
  std::printf("sources     %s\n", jit.sources().describe().c_str());
  std::printf("cache       %s (key %s)\n", a.no_cache ? "off" : cache.dir().c_str(), k->key.c_str());
  return Status::success();
}

}  // namespace

void add_compile_command(CLI::App& app, Context& ctx) {
  auto* cmd = app.add_subcommand("compile", "JIT-compile one kernel config with NVRTC (no GPU needed); print its resources");
  auto a = std::make_shared<CompileArgs>();
  cmd->add_option("kernel", a->kernel, "Kernel name (see `tilelab kernels`)")->required();
  cmd->add_option("--config", a->config, "Config as key=value,... (defaults for the rest)");
  cmd->add_option("--problem", a->problem, "Problem as key=value,... (sizes and dtype; defaults for the rest)");
  cmd->add_option("--arch", a->arch, "Target arch: sm_90a, sm_80, ...")->capture_default_str();
  cmd->add_option("--ptx", a->ptx, "Write the PTX to FILE");
  cmd->add_option("--cubin", a->cubin, "Write the cubin to FILE");
  cmd->add_option("--kernels-dir", a->kernels_dir,
                  "Read kernel sources from DIR (default: the source tree if present, else the embedded copy)");
  cmd->add_option("--cache-dir", a->cache_dir, "Kernel cache directory (default: $TILELAB_CACHE_DIR or ~/.cache/tilelab)");
  cmd->add_flag("--no-cache", a->no_cache, "Always compile; neither read nor write the cache");
  cmd->add_flag("--fast-math", a->fast_math, "Compile with --use_fast_math");
  cmd->add_flag("--timeline", a->timeline, "Compile the probe build (-DTL_TIMELINE=1: timeline marks on)");
  cmd->add_flag("--json", a->json, "Print as JSON");
  cmd->callback([&ctx, a] {
    Status s = run_compile(*a);
    ctx.exit_code = s.ok() ? 0 : report_error(s.message());
  });
}

}  // namespace tl::cli
