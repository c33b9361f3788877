// Model timelines: the device's rates for a model, and the pipelines simulated per block (no GPU needed).
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "runtime/trace/model.hpp"

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

Status check_model_events(double events, const std::string& kernel, const std::string& problem) {
  if (events <= kMaxModelEvents) return {};
  char text[256];
  std::snprintf(text, sizeof text,
                "the model of %s at %s would have %.3g events; a model timeline holds at most %.0f: model a smaller "
                "problem (fewer output tiles or a smaller K; the pipeline shows in a few tiles)",
                kernel.c_str(), problem.c_str(), events, kMaxModelEvents);
  return make_error(ErrorCode::invalid_argument, text);
}

}  // namespace tl
