// `tilelab info`: the host, the CUDA toolkit and NVRTC versions, and each GPU (or why there is none).
#include <cstdio>
#include <iostream>

#include <nlohmann/json.hpp>

#include "app/cli/commands.hpp"
#include "runtime/device/ceilings.hpp"
#include "runtime/device/device.hpp"
#include "runtime/device/device_profile.hpp"
#include "runtime/jit/cache.hpp"
#include "runtime/worker/ceilings.hpp"
#include "runtime/worker/client.hpp"

namespace tl::cli {
namespace {

std::string gib(std::uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f GiB", static_cast<double>(bytes) / (1ull << 30));
  return buf;
}

void print_text(const SystemInfo& s) {
  std::printf("TileLab %s\n", TILELAB_VERSION);
  std::printf("host     %s, %s, %s (%d cores), %s\n", s.host.hostname.c_str(), s.host.os.c_str(),
              s.host.cpu.c_str(), s.host.cpu_cores, gib(s.host.memory_bytes).c_str());
  std::printf("CUDA     built with %s, runtime %s, driver %s, NVRTC %d.%d\n", s.toolkit.built_with.c_str(),
              version_string(s.toolkit.runtime_version).c_str(), version_string(s.toolkit.driver_version).c_str(),
              s.toolkit.nvrtc_major, s.toolkit.nvrtc_minor);
  if (s.devices.empty()) {
    std::printf("devices  none: %s\n", s.why_no_device.c_str());
    return;
  }
  for (const auto& d : s.devices) {
    std::printf("GPU %d    %s, %s (compute capability %d.%d), %d SMs, %s, L2 %.0f MiB, smem/block %d KiB, "
                "SM clock %d MHz, memory %d-bit @ %d MHz (%.0f GB/s peak)\n",
                d.index, d.name.c_str(), d.arch().c_str(), d.cc_major, d.cc_minor, d.sm_count,
                gib(d.memory_bytes).c_str(), d.l2_bytes / 1048576.0, d.smem_per_block_optin / 1024,
                d.clock_khz / 1000, d.memory_bus_bits, d.memory_clock_khz / 1000,
                d.theoretical_dram_bytes_per_s() / 1e9);
  }
}

void print_ceilings(const DeviceInfo& d, const Ceilings& c, const std::string& path) {
  std::printf("ceilings GPU %d, measured %s (cached in %s)\n", d.index, c.measured_at.c_str(), path.c_str());
  double peak = d.theoretical_dram_bytes_per_s();
  std::printf("  HBM copy     %8.0f GB/s   read + write; %.0f%% of the %.0f GB/s the clocks allow\n",
              c.hbm_bytes_per_s / 1e9, peak > 0 ? 100.0 * c.hbm_bytes_per_s / peak : 0.0, peak / 1e9);
  std::printf("  L2 read      %8.0f GB/s\n", c.l2_bytes_per_s / 1e9);
  std::printf("  smem read    %8.0f GB/s\n", c.smem_bytes_per_s / 1e9);
  std::printf("  FP32 FMA     %8.1f TFLOP/s\n", c.fp32_flops / 1e12);
  // Each wgmma rate comes with the mean SM clock it ran at and its FLOP per SM per clock, counted from the
  // benchmark's own cycles (an H100 SM's tensor cores issue at most 4096 dense bf16 FLOP per clock), so a reader
  // can tell the peak from the clock.
  auto tc = [&](const char* name, double v, const char* bench) {
    if (v <= 0) {
      std::printf("  %-12s        - (no tensor cores for it on this GPU)\n", name);
      return;
    }
    auto detail = [&](const char* field) {
      return c.details.value(nlohmann::json::json_pointer(std::string("/") + bench + "/" + field), 0.0);
    };
    std::printf("  %-12s %8.1f TFLOP/s dense", name, v / 1e12);
    if (const double mhz = detail("sm_clock_mhz"); mhz > 0) std::printf(" at SM clock %.0f MHz", mhz);
    if (const double per_clock = detail("flop_per_sm_clock"); per_clock > 0)
      std::printf(" (%.0f FLOP per SM per clock)", per_clock);
    std::printf("\n");
  };
  tc("bf16 tensor", c.bf16_tc_flops, "wgmma_bf16");
  if (c.bf16_tc_sustained_flops > 0) {
    tc("  sustained", c.bf16_tc_sustained_flops, "wgmma_bf16_sustained");
    std::printf("               (after %g s of tensor load: the power cap lowers the clock)\n",
                c.details.value("/wgmma_bf16_sustained/load_before_s"_json_pointer, 0.0));
  }
  tc("fp16 tensor", c.fp16_tc_flops, "wgmma_f16");
  tc("fp8 tensor", c.fp8_tc_flops, "wgmma_e4m3");
  std::printf("  (tensor cores via %s)\n", c.tc_method.c_str());
}

}  // namespace

void add_info_command(CLI::App& app, Context& ctx) {
  auto* cmd = app.add_subcommand("info", "Print the host, CUDA toolkit/NVRTC versions and the GPUs");
  auto json = std::make_shared<bool>(false);
  cmd->add_flag("--json", *json, "Print as JSON");
  auto measure = std::make_shared<bool>(false), fresh = std::make_shared<bool>(false);
  cmd->add_flag("--measure", *measure,
                "Also give each GPU's measured ceilings (HBM, L2, shared memory, FP32, tensor cores), cached per device");
  cmd->add_flag("--fresh", *fresh, "With --measure: measure again even when cached");
  auto profile = std::make_shared<std::string>();
  cmd->add_option("--save-profile", *profile,
                  "With --measure: write GPU 0's device profile (device + ceilings) to this JSON file, for "
                  "`tilelab roofline --device-profile` on any machine");
  cmd->callback([&ctx, json, measure, fresh, profile] {
    if (!profile->empty() && !*measure) {
      ctx.exit_code = report_error("--save-profile needs --measure");
      return;
    }
    SystemInfo s = query_system();
    nlohmann::json out = s;
    if (!*json) print_text(s);
    ctx.exit_code = 0;
    if (*measure) {
      if (s.devices.empty()) ctx.exit_code = report_error("cannot measure ceilings: " + s.why_no_device);
      std::string dir = default_cache_dir();
      for (const auto& d : s.devices) {
        WorkerClient worker;
        auto c = device_ceilings(worker, d, dir, *fresh, [&](const std::string& name, double v, const std::string& unit) {
          if (!*json) std::fprintf(stderr, "  measured %s: %.4g %s\n", name.c_str(), v, unit.c_str());
        });
        if (!c) {
          ctx.exit_code = report_error("GPU " + std::to_string(d.index) + ": " + c.status().message());
          continue;
        }
        out["devices"][static_cast<std::size_t>(d.index)]["ceilings"] = *c;
        if (!*json) print_ceilings(d, *c, ceilings_cache_path(dir, d));
        if (!profile->empty() && d.index == 0) {
          if (Status st = save_device_profile(*profile, d, s.toolkit, *c); !st.ok()) ctx.exit_code = report_error(st.message());
          else if (!*json) std::printf("device profile written to %s\n", profile->c_str());
        }
      }
    }
    if (*json) std::cout << out.dump(2) << '\n';
  });
}

}  // namespace tl::cli
