// Pipeline timelines: probe-buffer decoding, the track model, statistics, stage occupancy, comparison, Chrome trace.
#include "runtime/trace/timeline.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <numeric>
#include <tuple>

#include <nlohmann/json.hpp>

#include "runtime/core/files.hpp"
#include "runtime/core/json_read.hpp"

namespace tl {

// [SECTION] timeline and tracks --------------------------------------------------------------------------------

std::string TimelineTrack::name() const {
  std::string s = "SM " + std::to_string(sm) + " · block " + std::to_string(block) + " · warp " + std::to_string(warp);
  if (lane > 0) s += " · async " + std::to_string(lane);
  return s;
}

std::uint64_t Timeline::dropped_marks() const {
  std::uint64_t n = 0;
  for (const auto& o : overflow) n += o.dropped;
  return n;
}

const std::string& Timeline::region_name(int region) const {
  static const std::string unknown = "?";
  return region >= 0 && static_cast<std::size_t>(region) < regions.size() ? regions[static_cast<std::size_t>(region)]
                                                                          : unknown;
}

int Timeline::find_region(const std::string& name) const {
  for (std::size_t i = 0; i < regions.size(); ++i)
    if (regions[i] == name) return static_cast<int>(i);
  return -1;
}

TimelineBuilder::TimelineBuilder(std::vector<std::string> regions) : m_regions(std::move(regions)) {}

void TimelineBuilder::add_block(const TimelineBlock& block) { m_blocks.push_back(block); }

void TimelineBuilder::begin_warp(int sm, int block, int warp) { m_warps.push_back({sm, block, warp, {}}); }

void TimelineBuilder::interval(int region, std::uint8_t stage, std::uint32_t aux, double start_ns, double end_ns,
                               bool unterminated) {
  TimelineEvent e;
  e.start_ns = start_ns;
  e.end_ns = std::max(start_ns, end_ns);
  e.region = static_cast<std::uint16_t>(region);
  e.stage = stage;
  e.aux = aux;
  e.unterminated = unterminated;
  m_warps.back().events.push_back(e);
}

void TimelineBuilder::instant(int region, std::uint8_t stage, std::uint32_t aux, double t_ns) {
  TimelineEvent e;
  e.start_ns = e.end_ns = t_ns;
  e.region = static_cast<std::uint16_t>(region);
  e.stage = stage;
  e.aux = aux;
  e.instant = true;
  m_warps.back().events.push_back(e);
}

Timeline TimelineBuilder::finish(bool shift_origin) {
  Timeline t;
  t.regions = std::move(m_regions);
  // Region ids past the names (a kernel that marks more regions than its spec lists) still get a name.
  int max_region = -1;
  for (const auto& w : m_warps)
    for (const auto& e : w.events) max_region = std::max<int>(max_region, e.region);
  while (static_cast<int>(t.regions.size()) <= max_region) t.regions.push_back("region " + std::to_string(t.regions.size()));

  double origin = std::numeric_limits<double>::infinity();
  for (const auto& b : m_blocks) origin = std::min(origin, b.start_ns);
  for (const auto& w : m_warps)
    for (const auto& e : w.events) origin = std::min(origin, e.start_ns);
  if (!shift_origin || !std::isfinite(origin)) origin = 0;

  std::stable_sort(m_warps.begin(), m_warps.end(), [](const Warp& a, const Warp& b) {
    return std::tie(a.sm, a.block, a.warp) < std::tie(b.sm, b.block, b.warp);
  });
  std::size_t total = 0;
  for (const auto& w : m_warps) total += w.events.size();
  t.events.reserve(total);

  // Sub-tracks: each keeps a stack of open end times; an event goes on the first sub-track where it nests inside
  // the open event (or nothing is open), so every sub-track is properly nested and overlaps that are not nested
  // (async work: a load in flight while the next is issued) spill onto the next one.
  std::vector<std::vector<double>> stacks;
  std::vector<std::uint32_t> lane_of;
  for (auto& w : m_warps) {
    auto& ev = w.events;
    std::sort(ev.begin(), ev.end(), [](const TimelineEvent& a, const TimelineEvent& b) {
      if (a.start_ns != b.start_ns) return a.start_ns < b.start_ns;
      return a.end_ns > b.end_ns;  // parents before their children
    });
    for (auto& s : stacks) s.clear();
    lane_of.assign(ev.size(), 0);
    std::uint32_t lanes = 0;
    for (std::size_t i = 0; i < ev.size(); ++i) {
      const TimelineEvent& e = ev[i];
      std::uint32_t k = 0;
      for (;; ++k) {
        if (k == stacks.size()) stacks.emplace_back();
        auto& st = stacks[k];
        while (!st.empty() && st.back() <= e.start_ns) st.pop_back();
        if (st.empty() || st.back() >= e.end_ns) {
          st.push_back(e.end_ns);
          break;
        }
      }
      lane_of[i] = k;
      lanes = std::max(lanes, k + 1);
    }
    for (std::uint32_t lane = 0; lane < lanes; ++lane) {
      TimelineTrack tr;
      tr.sm = w.sm;
      tr.block = w.block;
      tr.warp = w.warp;
      tr.lane = static_cast<int>(lane);
      tr.first = static_cast<std::uint32_t>(t.events.size());
      const auto track_index = static_cast<std::uint32_t>(t.tracks.size());
      for (std::size_t i = 0; i < ev.size(); ++i) {
        if (lane_of[i] != lane) continue;
        TimelineEvent e = ev[i];
        e.start_ns -= origin;
        e.end_ns -= origin;
        e.track = track_index;
        tr.max_duration_ns = std::max(tr.max_duration_ns, e.duration_ns());
        t.duration_ns = std::max(t.duration_ns, e.end_ns);
        t.events.push_back(e);
      }
      tr.count = static_cast<std::uint32_t>(t.events.size()) - tr.first;
      if (tr.count > 0 || lane == 0) t.tracks.push_back(tr);
    }
    if (lanes == 0) {
      TimelineTrack tr;
      tr.sm = w.sm;
      tr.block = w.block;
      tr.warp = w.warp;
      tr.first = static_cast<std::uint32_t>(t.events.size());
      t.tracks.push_back(tr);
    }
    std::vector<TimelineEvent>().swap(ev);
  }

  t.blocks = std::move(m_blocks);
  for (auto& b : t.blocks) {
    b.start_ns -= origin;
    b.end_ns -= origin;
    t.duration_ns = std::max(t.duration_ns, b.end_ns);
  }
  std::sort(t.blocks.begin(), t.blocks.end(), [](const TimelineBlock& a, const TimelineBlock& b) {
    return std::tie(a.sm, a.start_ns, a.block) < std::tie(b.sm, b.start_ns, b.block);
  });
  for (const auto& e : t.events) t.unterminated += e.unterminated ? 1 : 0;
  m_warps.clear();
  return t;
}

// [SECTION] decoding -------------------------------------------------------------------------------------------

namespace {

template <class T>
T read_at(const std::uint8_t* data, std::uint64_t offset) {
  T v;
  std::memcpy(&v, data + offset, sizeof(T));
  return v;
}

// a - b on a counter that may have wrapped once in between: the difference modulo 2^64, read as signed.
std::int64_t wrapped_diff(std::uint64_t a, std::uint64_t b) { return static_cast<std::int64_t>(a - b); }

}  // namespace

std::vector<std::uint8_t> make_probe_buffer(std::uint32_t num_blocks, std::uint32_t warps_per_block,
                                            std::uint32_t capacity, std::uint64_t clock_hz) {
  std::vector<std::uint8_t> buf(probe::buffer_bytes(num_blocks, warps_per_block, capacity), 0);
  probe::ProbeHeader h{};
  h.magic = probe::kMagic;
  h.version = probe::kVersion;
  h.num_blocks = num_blocks;
  h.warps_per_block = warps_per_block;
  h.capacity = capacity;
  h.clock_hz = clock_hz;
  std::memcpy(buf.data(), &h, sizeof h);
  return buf;
}

namespace {

Result<probe::ProbeHeader> checked_header(const std::uint8_t* data, std::size_t size) {
  using namespace probe;
  if (size < sizeof(ProbeHeader))
    return make_error(ErrorCode::parse, "timeline buffer of " + std::to_string(size) + " bytes is shorter than its header");
  const auto h = read_at<ProbeHeader>(data, 0);
  if (h.magic != kMagic) return make_error(ErrorCode::parse, "timeline buffer: bad magic (not a TileLab probe buffer)");
  if (h.version != kVersion)
    return make_error(ErrorCode::parse, "timeline buffer version " + std::to_string(h.version) + ", this TileLab reads " +
                                            std::to_string(kVersion));
  const std::uint64_t need = buffer_bytes(h.num_blocks, h.warps_per_block, h.capacity);
  if (size < need)
    return make_error(ErrorCode::parse, "timeline buffer of " + std::to_string(size) + " bytes, its header describes " +
                                            std::to_string(need) + " (" + std::to_string(h.num_blocks) + " blocks x " +
                                            std::to_string(h.warps_per_block) + " warps x " + std::to_string(h.capacity) +
                                            " marks)");
  return h;
}

}  // namespace

Result<std::vector<std::uint8_t>> compact_probe_buffer(const std::uint8_t* data, std::size_t size) {
  using namespace probe;
  auto hr = checked_header(data, size);
  if (!hr) return hr.status();
  const ProbeHeader h = *hr;
  std::uint32_t longest = 0;
  for (std::uint32_t b = 0; b < h.num_blocks; ++b)
    for (std::uint32_t w = 0; w < h.warps_per_block; ++w) {
      const auto seg = read_at<ProbeSegment>(data, segment_offset(h.num_blocks, h.warps_per_block, h.capacity, b, w));
      longest = std::max(longest, std::min(seg.count, h.capacity));
    }
  ProbeHeader out_h = h;
  out_h.capacity = std::max<std::uint32_t>(longest, 1);
  std::vector<std::uint8_t> out(buffer_bytes(h.num_blocks, h.warps_per_block, out_h.capacity), 0);
  std::memcpy(out.data(), &out_h, sizeof out_h);
  const auto block_table = static_cast<std::ptrdiff_t>(block_table_offset());
  std::copy_n(data + block_table, static_cast<std::size_t>(h.num_blocks) * sizeof(ProbeBlock), out.begin() + block_table);
  for (std::uint32_t b = 0; b < h.num_blocks; ++b)
    for (std::uint32_t w = 0; w < h.warps_per_block; ++w) {
      const std::uint64_t from = segment_offset(h.num_blocks, h.warps_per_block, h.capacity, b, w);
      const std::uint64_t to = segment_offset(h.num_blocks, h.warps_per_block, out_h.capacity, b, w);
      const auto seg = read_at<ProbeSegment>(data, from);
      const std::uint64_t n = std::min(seg.count, h.capacity);
      std::copy_n(data + from, sizeof(ProbeSegment) + n * sizeof(ProbeRecord), out.begin() + static_cast<std::ptrdiff_t>(to));
    }
  return out;
}

Result<Timeline> decode_timeline(const std::uint8_t* data, std::size_t size, const DecodeOptions& options) {
  using namespace probe;
  auto hr = checked_header(data, size);
  if (!hr) return hr.status();
  const ProbeHeader h = *hr;

  std::vector<std::string> warnings;
  // Clock rates: each block's own when its anchors span long enough for globaltimer's coarse ticks (~1 µs on
  // some GPUs) not to matter; otherwise the median of the measured ones, the header's, the caller's, or 1 GHz.
  constexpr double kMinAnchorSpanNs = 20000;
  std::vector<ProbeBlock> blocks(h.num_blocks);
  std::vector<double> measured;
  for (std::uint32_t b = 0; b < h.num_blocks; ++b) {
    blocks[b] = read_at<ProbeBlock>(data, block_table_offset() + std::uint64_t{b} * sizeof(ProbeBlock));
    const ProbeBlock& pb = blocks[b];
    if ((pb.flags & kBlockBegun) && (pb.flags & kBlockEnded)) {
      const std::int64_t dgt = wrapped_diff(pb.gt_end, pb.gt_begin), dclk = wrapped_diff(pb.clk_end, pb.clk_begin);
      if (dgt >= kMinAnchorSpanNs && dclk > 0) measured.push_back(static_cast<double>(dclk) / static_cast<double>(dgt));
    }
  }
  double fallback = 0;
  if (!measured.empty()) {
    std::vector<double> m = measured;
    fallback = percentile(m, 0.5);
  } else if (h.clock_hz > 0) {
    fallback = static_cast<double>(h.clock_hz) * 1e-9;
  } else if (options.clock_hz > 0) {
    fallback = options.clock_hz * 1e-9;
  } else {
    fallback = 1.0;
    warnings.push_back("no clock rate in the buffer: cycles taken as nanoseconds");
  }

  // The global origin: the earliest block start. Times are computed relative to it in int64 before going to
  // double, so 1.7e18-ns globaltimer values lose no precision.
  std::uint64_t gt_origin = 0;
  bool any = false;
  for (const auto& pb : blocks) {
    if (!(pb.flags & kBlockBegun)) continue;
    if (!any || wrapped_diff(pb.gt_begin, gt_origin) < 0) gt_origin = pb.gt_begin;
    any = true;
  }

  TimelineBuilder builder(options.regions);
  std::vector<WarpOverflow> overflow;
  std::uint64_t unmatched_ends = 0, skipped_blocks = 0;
  struct Open {
    std::uint16_t region;
    std::uint8_t stage;
    std::uint32_t aux;
    double t;
  };
  std::vector<Open> open;
  for (std::uint32_t b = 0; b < h.num_blocks; ++b) {
    const ProbeBlock& pb = blocks[b];
    if (!(pb.flags & kBlockBegun)) {
      // A block that never began wrote nothing usable; say so when it has marks anyway.
      for (std::uint32_t w = 0; w < h.warps_per_block; ++w) {
        const auto seg = read_at<ProbeSegment>(data, segment_offset(h.num_blocks, h.warps_per_block, h.capacity, b, w));
        if (seg.count > 0) {
          ++skipped_blocks;
          break;
        }
      }
      continue;
    }
    double rate = fallback;
    bool rate_measured = false;
    if (pb.flags & kBlockEnded) {
      const std::int64_t dgt = wrapped_diff(pb.gt_end, pb.gt_begin), dclk = wrapped_diff(pb.clk_end, pb.clk_begin);
      if (dgt >= kMinAnchorSpanNs && dclk > 0) {
        rate = static_cast<double>(dclk) / static_cast<double>(dgt);
        rate_measured = true;
      }
    }
    const double base = static_cast<double>(wrapped_diff(pb.gt_begin, gt_origin));
    auto to_ns = [&](std::uint64_t clk) { return base + static_cast<double>(wrapped_diff(clk, pb.clk_begin)) / rate; };

    TimelineBlock tb;
    tb.block = static_cast<int>(b);
    tb.sm = static_cast<int>(pb.smid);
    tb.start_ns = base;
    tb.end_ns = (pb.flags & kBlockEnded) ? base + static_cast<double>(wrapped_diff(pb.gt_end, pb.gt_begin)) : base;
    tb.cycles_per_ns = rate;
    tb.rate_measured = rate_measured;
    double block_last = tb.end_ns;

    for (std::uint32_t w = 0; w < h.warps_per_block; ++w) {
      const std::uint64_t off = segment_offset(h.num_blocks, h.warps_per_block, h.capacity, b, w);
      const auto seg = read_at<ProbeSegment>(data, off);
      if (seg.count == 0) continue;
      const std::uint32_t n = std::min(seg.count, h.capacity);
      if (seg.count > h.capacity) overflow.push_back({static_cast<int>(b), static_cast<int>(w), seg.count - h.capacity});
      builder.begin_warp(tb.sm, tb.block, static_cast<int>(w));
      open.clear();
      double last = 0;
      const std::uint8_t* rec = data + off + sizeof(ProbeSegment);
      for (std::uint32_t i = 0; i < n; ++i, rec += sizeof(ProbeRecord)) {
        const auto r = read_at<ProbeRecord>(rec, 0);
        const double t = to_ns(r.clock);
        last = std::max(last, t);
        if (r.kind == kBegin) {
          open.push_back({r.region, r.stage, r.aux, t});
        } else if (r.kind == kEnd) {
          // The latest open begin of the same region and stage: regions nest, and one region may be open for
          // several stages at once (async loads).
          auto it = std::find_if(open.rbegin(), open.rend(),
                                 [&](const Open& o) { return o.region == r.region && o.stage == r.stage; });
          if (it == open.rend()) {
            ++unmatched_ends;
            continue;
          }
          builder.interval(it->region, it->stage, it->aux, it->t, t);
          open.erase(std::next(it).base());
        } else {
          builder.instant(r.region, r.stage, r.aux, t);
        }
      }
      for (const Open& o : open) builder.interval(o.region, o.stage, o.aux, o.t, last, true);
      block_last = std::max(block_last, last);
    }
    // The end anchor is written by one warp; others may mark after it.
    tb.end_ns = std::max(tb.end_ns, block_last);
    builder.add_block(tb);
  }

  Timeline t = builder.finish(false);
  t.num_stages = options.num_stages;
  t.overflow = std::move(overflow);
  t.unmatched_ends = unmatched_ends;
  t.warnings = std::move(warnings);
  if (skipped_blocks)
    t.warnings.push_back(std::to_string(skipped_blocks) + " blocks wrote marks but no start anchor (TL_PROBE_BLOCK_BEGIN): skipped");
  if (!t.overflow.empty())
    t.warnings.push_back(std::to_string(t.dropped_marks()) + " marks dropped in " + std::to_string(t.overflow.size()) +
                         " warps whose segment of " + std::to_string(h.capacity) + " filled up: raise the capacity");
  if (t.unmatched_ends) t.warnings.push_back(std::to_string(t.unmatched_ends) + " end marks without a begin");
  if (t.unterminated) t.warnings.push_back(std::to_string(t.unterminated) + " begin marks without an end");
  return t;
}

// [SECTION] analysis -------------------------------------------------------------------------------------------

double percentile(std::vector<double>& v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double pos = std::clamp(p, 0.0, 1.0) * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const std::size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

std::vector<RegionStats> region_statistics(const Timeline& t, int bins) {
  bins = std::max(bins, 1);
  std::vector<std::vector<double>> dur(t.regions.size());
  std::vector<std::uint64_t> instants(t.regions.size(), 0);
  for (const auto& e : t.events) {
    if (e.region >= dur.size()) continue;
    if (e.instant)
      ++instants[e.region];
    else
      dur[e.region].push_back(e.duration_ns());
  }
  std::vector<RegionStats> out;
  for (std::size_t r = 0; r < dur.size(); ++r) {
    auto& d = dur[r];
    if (d.empty() && instants[r] == 0) continue;
    RegionStats s;
    s.name = t.regions[r];
    s.region = static_cast<int>(r);
    s.count = d.size();
    s.instants = instants[r];
    if (!d.empty()) {
      s.total_ns = std::accumulate(d.begin(), d.end(), 0.0);
      s.mean_ns = s.total_ns / static_cast<double>(d.size());
      s.median_ns = percentile(d, 0.5);  // sorts d
      s.p90_ns = percentile(d, 0.9);
      s.min_ns = d.front();
      s.max_ns = d.back();
      s.hist_lo_ns = s.min_ns;
      s.hist_hi_ns = s.max_ns;
      s.histogram.assign(static_cast<std::size_t>(bins), 0);
      const double width = (s.hist_hi_ns - s.hist_lo_ns) / bins;
      for (double x : d) {
        int i = width > 0 ? static_cast<int>((x - s.hist_lo_ns) / width) : 0;
        ++s.histogram[static_cast<std::size_t>(std::clamp(i, 0, bins - 1))];
      }
    }
    out.push_back(std::move(s));
  }
  return out;
}

StageOccupancy stage_occupancy(const Timeline& t, int bins) {
  bins = std::max(bins, 1);
  StageOccupancy o;
  o.num_stages = t.num_stages;
  o.t0_ns = 0;
  o.t1_ns = t.duration_ns;
  o.in_flight.assign(static_cast<std::size_t>(bins), 0);
  std::vector<double> alive(static_cast<std::size_t>(bins), 0);  // block-ns alive per bin
  std::vector<bool> is_wait(t.regions.size());
  for (std::size_t r = 0; r < t.regions.size(); ++r) is_wait[r] = t.regions[r].rfind("wait", 0) == 0;

  // Group events by block, then by (stage, aux): each group's span is one stage occupancy.
  std::map<int, std::map<std::pair<int, std::uint32_t>, std::pair<double, double>>> spans;
  std::map<int, std::pair<double, double>> life;
  for (const auto& e : t.events) {
    const int block = t.tracks[e.track].block;
    auto [lit, fresh] = life.try_emplace(block, e.start_ns, e.end_ns);
    if (!fresh) lit->second = {std::min(lit->second.first, e.start_ns), std::max(lit->second.second, e.end_ns)};
    if (e.stage == kNoStage || (e.region < is_wait.size() && is_wait[e.region])) continue;
    auto [it, inserted] = spans[block].try_emplace({e.stage, e.aux}, e.start_ns, e.end_ns);
    if (!inserted) it->second = {std::min(it->second.first, e.start_ns), std::max(it->second.second, e.end_ns)};
  }
  const double span = o.t1_ns - o.t0_ns;
  const double bin_w = span > 0 ? span / bins : 1;
  // Adds `weight` over [a, b) into per-bin accumulators, proportionally to the overlap.
  auto deposit = [&](std::vector<double>& acc, double a, double b, double weight) {
    if (b <= a || span <= 0) return;
    int i0 = std::clamp(static_cast<int>((a - o.t0_ns) / bin_w), 0, bins - 1);
    int i1 = std::clamp(static_cast<int>((b - o.t0_ns) / bin_w), 0, bins - 1);
    for (int i = i0; i <= i1; ++i) {
      const double lo = o.t0_ns + i * bin_w, hi = lo + bin_w;
      const double overlap = std::min(b, hi) - std::max(a, lo);
      if (overlap > 0) acc[static_cast<std::size_t>(i)] += weight * overlap;
    }
  };
  std::vector<double> time_at;
  double total_time = 0, weighted = 0;
  for (const auto& [block, lf] : life) {
    deposit(alive, lf.first, lf.second, 1);
    std::vector<std::pair<double, int>> edges;
    if (auto it = spans.find(block); it != spans.end())
      for (const auto& [key, sp] : it->second) {
        edges.push_back({sp.first, +1});
        edges.push_back({sp.second, -1});
        deposit(o.in_flight, sp.first, sp.second, 1);
      }
    std::sort(edges.begin(), edges.end());  // at equal times ends (-1) come first: a refilled stage is not double
    int level = 0;
    double prev = lf.first;
    for (const auto& [x, d] : edges) {
      if (x > prev) {
        if (time_at.size() <= static_cast<std::size_t>(level)) time_at.resize(static_cast<std::size_t>(level) + 1, 0);
        time_at[static_cast<std::size_t>(level)] += x - prev;
        prev = x;
      }
      level += d;
      o.max_in_flight = std::max(o.max_in_flight, level);
    }
    if (lf.second > prev) {
      if (time_at.empty()) time_at.resize(1, 0);
      time_at[0] += lf.second - prev;  // level is back to 0 after the last end
    }
    total_time += lf.second - lf.first;
  }
  for (std::size_t k = 0; k < time_at.size(); ++k) weighted += static_cast<double>(k) * time_at[k];
  o.mean = total_time > 0 ? weighted / total_time : 0;
  o.fraction.resize(time_at.size());
  for (std::size_t k = 0; k < time_at.size(); ++k) o.fraction[k] = total_time > 0 ? time_at[k] / total_time : 0;
  for (std::size_t i = 0; i < o.in_flight.size(); ++i) o.in_flight[i] = alive[i] > 0 ? o.in_flight[i] / alive[i] : 0;
  return o;
}

TimelineComparison compare_timelines(const Timeline& a, const Timeline& b) {
  TimelineComparison c;
  c.duration_a = a.duration_ns;
  c.duration_b = b.duration_ns;
  auto sa = region_statistics(a), sb = region_statistics(b);
  std::vector<std::string> names;
  for (const auto& s : sa) names.push_back(s.name);
  for (const auto& s : sb)
    if (std::find(names.begin(), names.end(), s.name) == names.end()) names.push_back(s.name);
  for (const auto& n : names) {
    RegionDelta d;
    d.name = n;
    for (const auto& s : sa)
      if (s.name == n) d.count_a = s.count, d.mean_a = s.mean_ns, d.median_a = s.median_ns, d.total_a = s.total_ns;
    for (const auto& s : sb)
      if (s.name == n) d.count_b = s.count, d.mean_b = s.mean_ns, d.median_b = s.median_ns, d.total_b = s.total_ns;
    d.mean_delta_ns = d.mean_b - d.mean_a;
    d.mean_ratio = d.mean_a > 0 ? d.mean_b / d.mean_a : 0;
    c.regions.push_back(d);
  }
  return c;
}

// [SECTION] export ---------------------------------------------------------------------------------------------

namespace {

// Every trace event of `t` in order, one at a time: to_chrome_trace collects them, save_chrome_trace streams them
// to a file without holding a document of millions of events.
void for_each_trace_event(const Timeline& t, const std::function<void(nlohmann::json&&)>& emit) {
  using nlohmann::json;
  const std::string tag = t.model ? " (MODEL)" : "";
  int last_sm = -1;
  for (std::size_t k = 0; k < t.tracks.size(); ++k) {
    const TimelineTrack& tr = t.tracks[k];
    const int pid = tr.sm + 1, tid = static_cast<int>(k) + 1;
    if (tr.sm != last_sm) {
      emit({{"ph", "M"}, {"name", "process_name"}, {"pid", pid}, {"tid", 0},
            {"args", {{"name", "SM " + std::to_string(tr.sm) + tag}}}});
      emit({{"ph", "M"}, {"name", "process_sort_index"}, {"pid", pid}, {"tid", 0}, {"args", {{"sort_index", tr.sm}}}});
      last_sm = tr.sm;
    }
    std::string name = "block " + std::to_string(tr.block) + " · warp " + std::to_string(tr.warp);
    if (tr.lane > 0) name += " · async " + std::to_string(tr.lane);
    emit({{"ph", "M"}, {"name", "thread_name"}, {"pid", pid}, {"tid", tid}, {"args", {{"name", name}}}});
    emit({{"ph", "M"}, {"name", "thread_sort_index"}, {"pid", pid}, {"tid", tid},
          {"args", {{"sort_index", static_cast<int>(k)}}}});
    for (std::uint32_t i = tr.first; i < tr.first + tr.count; ++i) {
      const TimelineEvent& e = t.events[i];
      json args = {{"aux", e.aux}, {"block", tr.block}, {"warp", tr.warp}};
      if (e.stage != kNoStage) args["stage"] = e.stage;
      if (e.unterminated) args["unterminated"] = true;
      json ev = {{"name", t.region_name(e.region)}, {"cat", t.model ? "model" : "probe"}, {"pid", pid}, {"tid", tid},
                 {"ts", e.start_ns * 1e-3}, {"args", std::move(args)}};
      if (e.instant) {
        ev["ph"] = "i";
        ev["s"] = "t";
      } else {
        ev["ph"] = "X";
        ev["dur"] = e.duration_ns() * 1e-3;
      }
      emit(std::move(ev));
    }
  }
}

nlohmann::json trace_other_data(const Timeline& t) {
  nlohmann::json other = {{"tilelab", TILELAB_VERSION}, {"kernel", t.kernel}, {"label", t.label}, {"model", t.model},
                          {"regions", t.regions}, {"num_stages", t.num_stages}, {"dropped_marks", t.dropped_marks()}};
  if (t.model) other["model_note"] = "MODEL timeline computed from the config, not recorded: " + t.model_note;
  if (!t.device.empty()) other["device"] = t.device;
  return other;
}

}  // namespace

nlohmann::json to_chrome_trace(const Timeline& t) {
  nlohmann::json events = nlohmann::json::array();
  for_each_trace_event(t, [&](nlohmann::json&& e) { events.push_back(std::move(e)); });
  return {{"traceEvents", std::move(events)}, {"displayTimeUnit", "ns"}, {"otherData", trace_other_data(t)}};
}

Status save_chrome_trace(const Timeline& t, const std::string& path) {
  const std::string temp = temp_path_for(path);
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    if (!out) return make_error(ErrorCode::io, "cannot write " + path + ": cannot create a file in its directory");
    // The same document as to_chrome_trace(t).dump(), one event at a time.
    out << "{\"displayTimeUnit\":\"ns\",\"otherData\":" << trace_other_data(t).dump() << ",\"traceEvents\":[";
    bool first = true;
    for_each_trace_event(t, [&](nlohmann::json&& e) {
      out << (first ? "" : ",") << e.dump();
      first = false;
    });
    out << "]}\n";
    out.close();
    if (!out) {
      discard_temp_file(temp);
      return make_error(ErrorCode::io, "writing " + path + " failed (disk full?); the file is unchanged");
    }
  }
  return commit_temp_file(temp, path);
}

Result<Timeline> from_chrome_trace(const nlohmann::json& trace) {
  using nlohmann::json;
  const json* events = nullptr;
  if (trace.is_object() && trace.contains("traceEvents") && trace["traceEvents"].is_array()) events = &trace["traceEvents"];
  else if (trace.is_array()) events = &trace;
  if (!events) return make_error(ErrorCode::parse, "not a Chrome trace: no \"traceEvents\" array");
  static const json no_other = json::object();
  const json& other_json = trace.is_object() && trace.contains("otherData") ? trace["otherData"] : no_other;
  JsonFields other(other_json, "otherData");
  // Ours (written by to_chrome_trace) carry the SM as pid - 1 and block/warp in args, and start at 0 already.
  const bool ours = other_json.is_object() && other_json.contains("tilelab");

  std::vector<std::string> regions;
  std::map<std::string, int> region_of;
  if (other_json.is_object() && other_json.contains("regions")) {
    if (!other_json["regions"].is_array())
      return make_error(ErrorCode::parse, std::string("otherData: field \"regions\" is ") +
                                              other_json["regions"].type_name() + ", expected an array of names");
    for (const auto& r : other_json["regions"]) {
      const std::string name = r.is_string() ? r.get<std::string>() : std::string();
      region_of.emplace(name, static_cast<int>(regions.size()));
      regions.push_back(name);
    }
  }
  struct Key {
    int sm, block, warp;
    bool operator<(const Key& o) const { return std::tie(sm, block, warp) < std::tie(o.sm, o.block, o.warp); }
  };
  struct Mark {
    int region;
    std::uint8_t stage;
    std::uint32_t aux;
    double start_ns, end_ns;
    bool instant, unterminated;
  };
  struct Track {
    std::vector<Mark> marks;
    std::vector<std::pair<std::string, double>> open;  // "B" events waiting for their "E"
  };
  std::map<Key, Track> tracks;
  std::size_t skipped = 0;
  constexpr std::int64_t kMaxId = std::numeric_limits<int>::max();
  for (std::size_t index = 0; index < events->size(); ++index) {
    const json& e = (*events)[index];
    JsonFields f(e, "trace event " + std::to_string(index));
    const std::string ph = f.text("ph");
    if (!f.ok()) return f.status();
    if (ph != "X" && ph != "i" && ph != "I" && ph != "B" && ph != "E") {
      if (ph != "M") ++skipped;  // counters, flows, ...: said in a warning
      continue;
    }
    if (!e.contains("ts")) {
      ++skipped;
      continue;
    }
    const double ts_ns = f.number("ts", 0) * 1e3;
    const std::int64_t pid = f.integer("pid", 0, 0, kMaxId), tid = f.integer("tid", 0, 0, kMaxId);
    const std::string name = f.text("name", "?");
    const double dur_ns = f.number("dur", 0) * 1e3;
    JsonFields args = f.object("args");
    const bool has_block = e.contains("args") && e["args"].is_object() && e["args"].contains("block");
    // Ours: the SM is pid - 1, block and warp in args; anything else: the pid as SM and block, the tid as warp.
    Key key{static_cast<int>(has_block && pid >= 1 ? pid - 1 : pid), static_cast<int>(args.integer("block", pid, 0, kMaxId)),
            static_cast<int>(args.integer("warp", tid, 0, kMaxId))};
    const auto stage = static_cast<std::uint8_t>(args.integer("stage", kNoStage, 0, kNoStage));
    const auto aux = static_cast<std::uint32_t>(args.integer("aux", 0, 0, std::numeric_limits<std::uint32_t>::max()));
    const bool unterminated = args.flag("unterminated", false);
    if (!f.ok()) return f.status();
    if (dur_ns < 0) return make_error(ErrorCode::parse, "trace event " + std::to_string(index) + ": field \"dur\" is negative");
    if (!std::isfinite(ts_ns + dur_ns))  // in ns, past double range: a time no trace holds
      return make_error(ErrorCode::parse, "trace event " + std::to_string(index) + ": field \"ts\" or \"dur\" is too large");
    auto region = [&](const std::string& n) -> Result<int> {
      auto [it, added] = region_of.emplace(n, static_cast<int>(regions.size()));
      if (added) regions.push_back(n);
      if (regions.size() > std::numeric_limits<std::uint16_t>::max())
        return make_error(ErrorCode::parse, "trace event " + std::to_string(index) + ": more than 65535 distinct event names");
      return it->second;
    };
    Track& tr = tracks[key];
    if (ph == "B") {
      tr.open.emplace_back(name, ts_ns);
      continue;
    }
    std::string region_name = name;
    double start_ns = ts_ns, end_ns = ts_ns + dur_ns;
    if (ph == "E") {
      if (tr.open.empty()) {
        ++skipped;
        continue;
      }
      std::tie(region_name, start_ns) = tr.open.back();
      tr.open.pop_back();
      end_ns = ts_ns;
    }
    auto id = region(region_name);
    if (!id) return id.status();
    const bool instant = ph == "i" || ph == "I";
    tr.marks.push_back({*id, stage, aux, start_ns, instant ? start_ns : end_ns, instant, unterminated});
  }
  const bool model = other.flag("model", false);
  Timeline base;
  base.kernel = other.text("kernel");
  base.label = other.text("label");
  base.device = other.text("device");
  base.num_stages = static_cast<int>(other.integer("num_stages", 0, 0, 255));
  std::string note = other.text("model_note");
  if (!other.ok()) return other.status();
  std::size_t total = 0;
  for (const auto& [key, tr] : tracks) total += tr.marks.size();
  if (total == 0) return make_error(ErrorCode::parse, "the Chrome trace has no X, i or B/E events with a \"ts\" to show");

  TimelineBuilder builder(regions);
  std::map<std::pair<int, int>, TimelineBlock> blocks;
  for (auto& [key, tr] : tracks) {
    if (tr.marks.empty()) continue;
    std::stable_sort(tr.marks.begin(), tr.marks.end(), [](const Mark& x, const Mark& y) { return x.start_ns < y.start_ns; });
    auto [it, fresh] = blocks.try_emplace({key.sm, key.block});
    TimelineBlock& b = it->second;
    if (fresh) {
      b.block = key.block;
      b.sm = key.sm;
      b.start_ns = std::numeric_limits<double>::infinity();
      b.end_ns = -std::numeric_limits<double>::infinity();
    }
    builder.begin_warp(key.sm, key.block, key.warp);
    for (const Mark& m : tr.marks) {
      if (m.instant) builder.instant(m.region, m.stage, m.aux, m.start_ns);
      else builder.interval(m.region, m.stage, m.aux, m.start_ns, m.end_ns, m.unterminated);
      b.start_ns = std::min(b.start_ns, m.start_ns);
      b.end_ns = std::max(b.end_ns, m.end_ns);
    }
  }
  // Block anchors are not in a trace: each block spans its warps' events.
  for (const auto& [key, b] : blocks) builder.add_block(b);
  Timeline t = builder.finish(!ours);
  t.model = model;
  t.kernel = std::move(base.kernel);
  t.label = std::move(base.label);
  t.device = std::move(base.device);
  t.num_stages = base.num_stages;
  if (t.model) {
    const std::string prefix = "MODEL timeline computed from the config, not recorded: ";  // what to_chrome_trace adds
    if (note.rfind(prefix, 0) == 0) note.erase(0, prefix.size());
    t.model_note = std::move(note);
  }
  if (skipped) t.warnings.push_back(std::to_string(skipped) + " trace events of other kinds (or without \"ts\") were skipped");
  return t;
}

Result<Timeline> read_chrome_trace(const std::string& path) {
  auto j = read_json_file(path, "trace");
  if (!j) return j.status();
  auto t = from_chrome_trace(*j);
  if (!t) return t.status().with_context(path);
  return t;
}

void to_json(nlohmann::json& j, const RegionStats& s) {
  j = {{"name", s.name},           {"region", s.region},       {"count", s.count},     {"instants", s.instants},
       {"total_ns", s.total_ns},   {"mean_ns", s.mean_ns},     {"median_ns", s.median_ns},
       {"p90_ns", s.p90_ns},       {"min_ns", s.min_ns},       {"max_ns", s.max_ns},
       {"histogram", s.histogram}, {"hist_lo_ns", s.hist_lo_ns}, {"hist_hi_ns", s.hist_hi_ns}};
}

void to_json(nlohmann::json& j, const StageOccupancy& s) {
  j = {{"num_stages", s.num_stages}, {"max_in_flight", s.max_in_flight}, {"mean", s.mean},
       {"fraction", s.fraction},     {"t0_ns", s.t0_ns},                 {"t1_ns", s.t1_ns},
       {"in_flight", s.in_flight}};
}

void to_json(nlohmann::json& j, const TimelineComparison& c) {
  j = {{"duration_a_ns", c.duration_a}, {"duration_b_ns", c.duration_b}, {"regions", nlohmann::json::array()}};
  for (const auto& d : c.regions)
    j["regions"].push_back({{"name", d.name}, {"count_a", d.count_a}, {"count_b", d.count_b}, {"mean_a_ns", d.mean_a},
                            {"mean_b_ns", d.mean_b}, {"median_a_ns", d.median_a}, {"median_b_ns", d.median_b},
                            {"total_a_ns", d.total_a}, {"total_b_ns", d.total_b}, {"mean_delta_ns", d.mean_delta_ns},
                            {"mean_ratio", d.mean_ratio}});
}

nlohmann::json timeline_summary_json(const Timeline& t, const std::vector<RegionStats>& stats,
                                     const StageOccupancy& occupancy) {
  nlohmann::json j = {{"kernel", t.kernel},
                      {"label", t.label},
                      {"model", t.model},
                      {"duration_ns", t.duration_ns},
                      {"events", t.events.size()},
                      {"tracks", t.tracks.size()},
                      {"blocks", t.blocks.size()},
                      {"num_stages", t.num_stages},
                      {"dropped_marks", t.dropped_marks()},
                      {"warnings", t.warnings},
                      {"regions", stats},
                      {"occupancy", occupancy}};
  if (t.model) j["model_note"] = t.model_note;
  if (!t.device.empty()) j["device"] = t.device;
  return j;
}

}  // namespace tl
