// Model timelines: a GEMM pipeline simulated per block from its config and the device's ceilings (no GPU needed).
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "runtime/ceilings.hpp"
#include "runtime/device.hpp"
#include "runtime/kernel_spec.hpp"
#include "runtime/timeline.hpp"

namespace tl {
namespace {

// Region ids by name in `regions`, appending the names a model uses that the kernel's probe list lacks.
struct RegionIds {
  std::vector<std::string> names;
  int id(const std::string& name) {
    for (std::size_t i = 0; i < names.size(); ++i)
      if (names[i] == name) return static_cast<int>(i);
    names.push_back(name);
    return static_cast<int>(names.size() - 1);
  }
};

std::uint8_t stage_id(int s) { return static_cast<std::uint8_t>(s); }

}  // namespace

ModelDevice model_device(const Ceilings* c, const DeviceInfo* d) {
  ModelDevice m;
  std::vector<std::string> used;
  if (d) {
    if (d->sm_count > 0) m.num_sms = d->sm_count;
    if (d->clock_khz > 0) m.clock_hz = d->clock_khz * 1e3;
    used.push_back(d->name + " (SMs, clock)");
  }
  if (c) {
    if (c->hbm_bytes_per_s > 0) m.hbm_bytes_per_s = c->hbm_bytes_per_s;
    if (c->l2_bytes_per_s > 0) m.l2_bytes_per_s = c->l2_bytes_per_s;
    // The 16-bit tensor rate is wgmma's where the chip has wgmma (its benchmark's rate is in the details), else
    // mma.sync's; mma.sync's own benchmark, where run, gives the gemm.mma model its rate.
    auto rate = [&](const char* bench) { return c->details.value(nlohmann::json::json_pointer(bench), 0.0); };
    const double tc = std::max(c->bf16_tc_flops, c->fp16_tc_flops);
    const double wgmma = std::max(rate("/wgmma_bf16/rate"), rate("/wgmma_f16/rate"));
    const double mma = std::max(rate("/mma_bf16/rate"), rate("/mma_f16/rate"));
    if (wgmma > 0) m.wgmma_flops = wgmma;
    if (mma > 0) m.mma_sync_flops = mma;
    else if (tc > 0 && wgmma <= 0) m.mma_sync_flops = tc;  // no per-benchmark details: the rate is mma.sync's
    used.push_back("measured ceilings of " + c->device_name + " (HBM, L2, tensor cores)");
  }
  if (!used.empty()) {
    m.source.clear();
    for (const auto& u : used) m.source += (m.source.empty() ? "" : "; ") + u;
    m.source += "; H100-class defaults for the rest";
  }
  return m;
}

Timeline model_gemm_wgmma(const GemmWgmmaModel& m, const GemmModelCosts& c, const std::vector<std::string>& regions) {
  RegionIds ids{regions};
  const int r_wait_empty = ids.id("wait_empty"), r_issue = ids.id("tma_issue"), r_wait_full = ids.id("wait_full"),
            r_mma = ids.id("wgmma"), r_release = ids.id("release"), r_epilogue = ids.id("epilogue"),
            r_flight = ids.id("tma_in_flight");
  TimelineBuilder b(ids.names);
  const int S = std::max(m.stages, 1), C = std::max(m.consumers, 1), ks = std::max(m.k_steps, 1);
  for (std::size_t blk = 0; blk < m.tiles_per_block.size(); ++blk) {
    const int block = static_cast<int>(blk), sm = block;
    const int iters = m.tiles_per_block[blk] * ks;
    std::vector<double> land(static_cast<std::size_t>(iters), 0), release(static_cast<std::size_t>(iters), 0);
    struct Ev {
      int warp, region, stage;
      std::uint32_t aux;
      double a, z;
      bool instant;
    };
    std::vector<Ev> ev;
    double producer = 0, tc_free = 0, last_land = -1e300, block_end = 0;
    std::vector<double> consumer(static_cast<std::size_t>(C), 0);
    for (int it = 0; it < iters; ++it) {
      const int s = it % S;
      const auto aux = static_cast<std::uint32_t>(it);
      // Producer: wait for the stage's previous use to be released, issue its loads; they land after the latency,
      // no sooner than one transfer after the previous stage (the SM's share of the bandwidth).
      const double avail = it >= S ? release[static_cast<std::size_t>(it - S)] : 0;
      const double waited = std::max(producer, avail) + c.barrier_ns;
      ev.push_back({0, r_wait_empty, s, aux, producer, waited, false});
      const double issued = waited + c.issue_ns;
      ev.push_back({0, r_issue, s, aux, waited, issued, false});
      land[static_cast<std::size_t>(it)] = std::max(issued + c.latency_ns + c.transfer_ns, last_land + c.transfer_ns);
      last_land = land[static_cast<std::size_t>(it)];
      ev.push_back({0, r_flight, s, aux, issued, last_land, false});
      producer = issued;
      // Consumers in turn on the SM's tensor cores: a wgmma starts when its stage landed and the tensor cores are
      // free; the region covers the wait for the tensor cores too (the kernel's wgmma_wait).
      for (int k = 0; k < C; ++k) {
        const int warp = 4 * (k + 1);
        double& t = consumer[static_cast<std::size_t>(k)];
        const double ready = std::max(t, last_land) + c.barrier_ns;
        ev.push_back({warp, r_wait_full, s, aux, t, ready, false});
        const double start = std::max(ready, tc_free);
        tc_free = start + c.mma_ns;
        ev.push_back({warp, r_mma, s, aux, ready, tc_free, false});
        t = tc_free;
        ev.push_back({warp, r_release, s, aux, t, t, true});
        release[static_cast<std::size_t>(it)] = std::max(release[static_cast<std::size_t>(it)], t);
        if (it % ks == ks - 1) {
          ev.push_back({warp, r_epilogue, kNoStage, static_cast<std::uint32_t>(it / ks), t, t + c.epilogue_ns, false});
          t += c.epilogue_ns;
        }
        block_end = std::max(block_end, t);
      }
    }
    TimelineBlock tb;
    tb.block = block;
    tb.sm = sm;
    tb.start_ns = 0;
    tb.end_ns = block_end;
    b.add_block(tb);
    std::vector<int> warps = {0};
    for (int k = 0; k < C; ++k) warps.push_back(4 * (k + 1));
    for (int w : warps) {
      b.begin_warp(sm, block, w);
      for (const Ev& e : ev) {
        if (e.warp != w) continue;
        if (e.instant)
          b.instant(e.region, stage_id(e.stage), e.aux, e.a);
        else
          b.interval(e.region, stage_id(e.stage), e.aux, e.a, e.z);
      }
    }
  }
  Timeline t = b.finish();
  t.model = true;
  t.num_stages = S;
  return t;
}

Timeline model_gemm_mma(const GemmMmaModel& m, const GemmModelCosts& c, const std::vector<std::string>& regions) {
  RegionIds ids{regions};
  const int r_issue = ids.id("load_issue"), r_wait = ids.id("wait_stage"), r_mma = ids.id("mma"),
            r_epilogue = ids.id("epilogue");
  TimelineBuilder b(ids.names);
  const int S = std::max(m.stages, 2), ks = std::max(m.k_steps, 1);
  struct Ev {
    int region, stage;
    std::uint32_t aux;
    double a, z;
  };
  // Every block runs the same schedule (same tile shape and k-steps), so one is simulated and placed in waves.
  std::vector<Ev> ev;
  std::vector<double> land(static_cast<std::size_t>(ks), 0);
  double t = 0, last_land = -1e300;
  auto issue = [&](int k) {
    ev.push_back({r_issue, k % S, static_cast<std::uint32_t>(k), t, t + c.issue_ns});
    t += c.issue_ns;
    land[static_cast<std::size_t>(k)] = std::max(t + c.latency_ns + c.transfer_ns, last_land + c.transfer_ns);
    last_land = land[static_cast<std::size_t>(k)];
  };
  for (int s = 0; s < S - 1 && s < ks; ++s) issue(s);
  for (int k = 0; k < ks; ++k) {
    const double ready = std::max(t, land[static_cast<std::size_t>(k)]) + c.barrier_ns;
    ev.push_back({r_wait, k % S, static_cast<std::uint32_t>(k), t, ready});
    t = ready;
    if (k + S - 1 < ks) issue(k + S - 1);
    ev.push_back({r_mma, k % S, static_cast<std::uint32_t>(k), t, t + c.mma_ns});
    t += c.mma_ns;
  }
  ev.push_back({r_epilogue, kNoStage, 0, t, t + c.epilogue_ns});
  const double duration = t + c.epilogue_ns;

  const int per_wave = std::max(m.num_sms, 1) * std::max(m.blocks_per_sm, 1);
  for (int blk = 0; blk < m.blocks; ++blk) {
    const int sm = blk % std::max(m.num_sms, 1);
    const double offset = (blk / per_wave) * duration;
    TimelineBlock tb;
    tb.block = blk;
    tb.sm = sm;
    tb.start_ns = offset;
    tb.end_ns = offset + duration;
    b.add_block(tb);
    b.begin_warp(sm, blk, 0);
    for (const Ev& e : ev)
      b.interval(e.region, stage_id(e.stage), e.aux, offset + e.a, offset + e.z);
  }
  Timeline out = b.finish();
  out.model = true;
  out.num_stages = S;
  return out;
}

Result<Timeline> model_timeline(const KernelInstance& inst, const ModelDevice& d) {
  if (!inst.spec) return make_error(ErrorCode::invalid_argument, "model_timeline: an instance without a spec");
  const std::string& name = inst.spec->name;
  if (name != "gemm.wgmma" && name != "gemm.mma")  // before reading M/N/K: other kernels' problems have none
    return make_error(ErrorCode::unsupported, "no timeline model for " + name + " (models exist for gemm.wgmma and gemm.mma)");
  const double clock_ns = d.clock_hz * 1e-9;
  const int sms = std::max(d.num_sms, 1);
  GemmModelCosts c;
  c.issue_ns = d.issue_cycles / clock_ns;
  c.barrier_ns = d.barrier_cycles / clock_ns;
  c.latency_ns = d.load_latency_ns;
  const double load_bw = d.l2_bytes_per_s / sms * 1e-9;   // bytes per ns per SM
  const double store_bw = d.hbm_bytes_per_s / sms * 1e-9;
  const auto M = inst.problem.integer("M"), N = inst.problem.integer("N"), K = inst.problem.integer("K");
  const double elem = static_cast<double>(dtype_size(inst.problem.dtype()));
  const int k_steps = static_cast<int>((K + 63) / 64);
  Timeline t;
  std::string shape;
  // Refused from the config, before a vector is sized: each k-step of each tile gives a handful of events.
  auto check_size = [&](double events) -> Status {
    if (events <= kMaxModelEvents) return {};
    char text[256];
    std::snprintf(text, sizeof text,
                  "the model of %s at %s would have %.3g events; a model timeline holds at most %.0f: model a smaller "
                  "problem (fewer output tiles or a smaller K; the pipeline shows in a few tiles)",
                  name.c_str(), inst.problem.to_string().c_str(), events, kMaxModelEvents);
    return make_error(ErrorCode::invalid_argument, text);
  };
  if (name == "gemm.wgmma") {
    const auto bm = inst.config.integer("block_M"), bn = inst.config.integer("block_N");
    GemmWgmmaModel m;
    m.stages = static_cast<int>(inst.config.integer("num_stages"));
    m.consumers = static_cast<int>(bm / 64);
    m.k_steps = k_steps;
    const std::int64_t tiles = ((M + bm - 1) / bm) * ((N + bn - 1) / bn);
    // Per k-step: the producer's wait, issue and flight, and each consumer's wait, wgmma and release; an epilogue
    // per tile and consumer.
    TL_RETURN_IF_ERROR(check_size(double(tiles) * m.consumers * (double(k_steps) * (3.0 / m.consumers + 3) + 1)));
    const std::int64_t grid = std::max<std::int64_t>(inst.launch.grid.x, 1);
    m.tiles_per_block.clear();
    for (std::int64_t blk = 0; blk < grid; ++blk)
      m.tiles_per_block.push_back(static_cast<int>((tiles - blk + grid - 1) / grid));
    // In a 2-CTA cluster the operand the pair shares (B for cluster_M=2, A for cluster_N=2) is read from L2 half by
    // each CTA and multicast to both: each CTA pulls half of it.
    const auto cm = inst.config.has("cluster_M") ? inst.config.integer("cluster_M") : 1;
    const auto cn = inst.config.has("cluster_N") ? inst.config.integer("cluster_N") : 1;
    c.transfer_ns = (static_cast<double>(bm) / cn + static_cast<double>(bn) / cm) * 64 * elem / load_bw;
    c.mma_ns = 2.0 * 64 * static_cast<double>(bn) * 64 / (d.wgmma_flops / sms * 1e-9);
    // With the TMA-store epilogue the consumer only stages its tile in shared memory; the TMA store drains it during
    // the next tile. Without, its threads store to global memory at the SM's share of HBM. It is on when the
    // kernel's tma_C map covers C (tma_store=auto decides by the output type; gemm_tc.cpp maps A there otherwise).
    const bool tma_store = std::any_of(inst.args.begin(), inst.args.end(), [](const ArgSpec& a) {
      return a.kind == ArgSpec::Kind::tensor_map && a.name == "tma_C" && a.tensor_of == "C";
    });
    c.epilogue_ns = d.epilogue_fixed_ns + 64.0 * static_cast<double>(bn) * elem / (tma_store ? load_bw : store_bw);
    t = model_gemm_wgmma(m, c, inst.spec->probes);
    shape = "one warp per warpgroup shown (the others run the same schedule)";
    if (cm * cn > 1)
      shape += "; 2-CTA cluster: the shared operand's L2 reads halved, the pair's waits on each other not modelled";
  } else if (name == "gemm.mma") {
    const auto bm = inst.config.integer("block_M"), bn = inst.config.integer("block_N");
    GemmMmaModel m;
    m.stages = static_cast<int>(inst.config.integer("num_stages"));
    m.warps = static_cast<int>(inst.config.integer("warps_M") * inst.config.integer("warps_N"));
    m.k_steps = k_steps;
    TL_RETURN_IF_ERROR(check_size(double(inst.launch.grid.volume()) * (3.0 * k_steps + 1)));  // issue, wait, mma; epilogue
    m.blocks = static_cast<int>(inst.launch.grid.volume());
    m.num_sms = sms;
    const double smem = std::max<double>(inst.launch.dynamic_smem, 1);
    m.blocks_per_sm = std::max(1, std::min(static_cast<int>(233472 / smem), 2048 / std::max(m.warps * 32, 1)));
    // Co-resident blocks share the SM's bandwidth and tensor cores.
    c.transfer_ns = static_cast<double>(bm + bn) * 64 * elem / load_bw * m.blocks_per_sm;
    c.mma_ns = 2.0 * static_cast<double>(bm * bn) * 64 / (d.mma_sync_flops / sms * 1e-9) * m.blocks_per_sm;
    c.epilogue_ns = d.epilogue_fixed_ns + static_cast<double>(bm * bn) * elem / store_bw * m.blocks_per_sm;
    t = model_gemm_mma(m, c, inst.spec->probes);
    shape = "warp 0 of each block shown (all warps run the same schedule); " + std::to_string(m.blocks_per_sm) +
            " blocks per SM";
  } else {
    return make_error(ErrorCode::unsupported, "no timeline model for " + name + " (models exist for gemm.wgmma and gemm.mma)");
  }
  t.kernel = name;
  t.label = inst.problem.to_string() + "  " + inst.config.to_string();
  t.model_note = d.source + "; " + shape;
  return t;
}

}  // namespace tl
