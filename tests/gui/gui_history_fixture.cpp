// Writes a small results store for the GUI's CI screenshots and tests: rows shaped like real runs, made up (the
// device says so), because CI has no GPU to produce any. Usage: gui_history_fixture FILE.db (replaces FILE).
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "runtime/results/results_store.hpp"

namespace {

tl::RunRecord record(const std::string& kernel, std::map<std::string, std::string> config, double ms, int regs,
                     bool passed = true) {
  tl::RunRecord r;
  r.kernel = kernel;
  r.family = kernel.substr(0, kernel.find('.'));
  r.device = "CI fixture (synthetic rows, not measured)";
  r.problem = {{"M", "4096"}, {"N", "4096"}, {"K", "4096"}};
  r.config = std::move(config);
  r.flops = 2.0 * 4096.0 * 4096.0 * 4096.0;
  r.time_ms.count = 20;
  r.time_ms.median = ms;
  r.time_ms.min = ms * 0.98;
  r.time_ms.max = ms * 1.05;
  r.tflops = r.flops / (ms * 1e-3) * 1e-12;
  r.gbps = 3.0 * 4096.0 * 4096.0 * 2 / (ms * 1e-3) * 1e-9;
  r.efficiency.value = r.tflops / 800.0;
  r.efficiency.bound = "compute";
  r.efficiency.ceiling = "bf16_tensor";
  r.resources.registers = regs;
  tl::OutputCheck o;
  o.name = "C";
  o.comparison.passed = passed;
  o.comparison.rel_error = passed ? 2.4e-3 : 0.31;
  o.comparison.max_abs_error = passed ? 0.06 : 12.0;
  r.outputs.push_back(o);
  r.verified = passed;
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: gui_history_fixture FILE.db\n");
    return 2;
  }
  const std::string path = argv[1];
  for (const char* ext : {"", "-wal", "-shm"}) std::filesystem::remove(path + ext);
  auto store = tl::ResultsStore::open(path);
  if (!store) {
    std::fprintf(stderr, "gui_history_fixture: %s\n", store.status().message().c_str());
    return 1;
  }
  tl::RunContext ctx;
  ctx.source_hash = "fixture";
  int n = 0;
  auto add = [&](const tl::RunRecord& r, const tl::RunContext& c) {
    auto id = (*store)->insert(r, c);
    if (!id) {
      std::fprintf(stderr, "gui_history_fixture: %s\n", id.status().message().c_str());
      std::exit(1);
    }
    ++n;
  };
  add(record("gemm.mma", {{"block_M", "128"}, {"block_N", "128"}, {"block_K", "32"}, {"num_stages", "3"}}, 0.50, 128), ctx);
  add(record("gemm.mma", {{"block_M", "128"}, {"block_N", "256"}, {"block_K", "32"}, {"num_stages", "3"}}, 0.40, 168), ctx);
  add(record("gemm.mma", {{"block_M", "64"}, {"block_N", "128"}, {"block_K", "32"}, {"num_stages", "2"}}, 0.80, 96), ctx);
  add(record("gemm.wgmma", {{"block_M", "128"}, {"block_N", "256"}, {"block_K", "64"}, {"num_stages", "4"}}, 0.25, 154), ctx);
  add(record("gemm.wgmma", {{"block_M", "128"}, {"block_N", "128"}, {"block_K", "64"}, {"num_stages", "4"}}, 0.31, 90, false),
      ctx);
  tl::RunRecord fault = record("gemm.simt", {{"block_M", "64"}, {"block_N", "64"}}, 0, 64);
  fault.time_ms = {};
  fault.tflops = fault.gbps = 0;
  fault.outputs.clear();
  fault.verified = false;
  fault.failure = tl::RunFailure{};
  fault.failure->code = tl::ErrorCode::fault;
  fault.failure->message = "an illegal memory access was encountered (fixture)";
  add(fault, ctx);
  // A recorded sweep of gemm.wgmma over block_N x num_stages (one point skipped, as can_implement would), for the
  // Sweep panel's recorded-sweep heat map.
  const std::string sweep = "f1x7u2e0000sweep";
  nlohmann::json space = nlohmann::json::array({{{"name", "block_N"}, {"values", {"128", "256"}}},
                                                {{"name", "num_stages"}, {"values", {"3", "4", "5"}}}});
  if (!(*store)->begin_sweep(sweep, "gemm.wgmma", nlohmann::json::array({nlohmann::json::object()}), space)) return 1;
  const double ms[2][3] = {{0.34, 0.31, 0.30}, {0.27, 0.25, 0}};
  for (int n = 0; n < 2; ++n)
    for (int st = 0; st < 3; ++st) {
      const std::string bn = n ? "256" : "128", ns = std::to_string(3 + st);
      tl::RunRecord r = record("gemm.wgmma", {{"block_M", "128"}, {"block_N", bn}, {"block_K", "64"}, {"num_stages", ns}},
                               ms[n][st] > 0 ? ms[n][st] : 1, 150);
      tl::RunContext c = ctx;
      c.sweep_id = sweep;
      c.point_key = "|block_N=" + bn + ",num_stages=" + ns;
      if (ms[n][st] == 0) {
        r.time_ms = {};
        r.tflops = r.gbps = 0;
        r.outputs.clear();
        r.verified = false;
        r.failure = tl::RunFailure{};
        r.failure->code = tl::ErrorCode::unsupported;
        r.failure->message = "shared memory over the limit (fixture)";
        c.status = "skipped";
      }
      add(r, c);
    }
  std::printf("gui_history_fixture: wrote %d rows to %s\n", n, path.c_str());
  return 0;
}
