// `tilelab info`: the host, the CUDA toolkit and NVRTC versions, and each GPU (or why there is none).
#include <cstdio>
#include <iostream>

#include <nlohmann/json.hpp>

#include "app/cli/commands.hpp"
#include "runtime/device.hpp"

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

}  // namespace

void add_info_command(CLI::App& app, Context& ctx) {
  auto* cmd = app.add_subcommand("info", "Print the host, CUDA toolkit/NVRTC versions and the GPUs");
  auto json = std::make_shared<bool>(false);
  cmd->add_flag("--json", *json, "Print as JSON");
  cmd->callback([&ctx, json] {
    SystemInfo s = query_system();
    if (*json) {
      std::cout << nlohmann::json(s).dump(2) << '\n';
    } else {
      print_text(s);
    }
    ctx.exit_code = 0;
  });
}

}  // namespace tl::cli
