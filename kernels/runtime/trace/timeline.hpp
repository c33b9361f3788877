// Pipeline timelines: decoding probe buffers into events, the SM/block/warp track model, statistics, stage
// occupancy, comparison, Chrome trace export (model timelines, computed when there is no GPU: trace/model.hpp).
#pragma once

// [SECTION] index
//   events and tracks ....... TimelineEvent, TimelineTrack, TimelineBlock, Timeline, TimelineBuilder
//   decoding ................ decode_timeline (probe buffer -> Timeline), encode helpers for tests
//   analysis ................ region_statistics, stage_occupancy, compare_timelines
//   export .................. to_chrome_trace (traceEvents JSON that Perfetto opens)
//
// Times are float64 nanoseconds from the timeline's origin (the earliest block start). Each block's clock64
// values are put on the global clock through its anchor pair: t = gt_begin + (clk - clk_begin) / cycles_per_ns,
// with the differences taken modulo 2^64 so a counter that wrapped between anchor and mark still decodes.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "runtime/core/status.hpp"
#include "tile/probe.hpp"

namespace tl {

// [SECTION] events and tracks

inline constexpr std::uint8_t kNoStage = probe::kNoStage;

struct TimelineEvent {
  double start_ns = 0, end_ns = 0;  // equal for instants
  std::uint32_t aux = 0;            // what the kernel put there (k-step, tile, iteration)
  std::uint32_t track = 0;          // index into Timeline::tracks
  std::uint16_t region = 0;
  std::uint8_t stage = kNoStage;
  bool instant = false;
  bool unterminated = false;  // a begin without its end: closed at the warp's last mark

  double duration_ns() const { return end_ns - start_ns; }
};

// One row of the Gantt view: a warp, or one of its sub-tracks when async work on the warp overlaps without
// nesting (lane > 0). Its events are Timeline::events[first, first + count), sorted by start.
struct TimelineTrack {
  int sm = 0, block = 0, warp = 0, lane = 0;
  std::uint32_t first = 0, count = 0;
  double max_duration_ns = 0;  // the longest event: lets a view find the first event overlapping t0 by bisection
  std::string name() const;    // "SM 3 · block 7 · warp 4" (+ " · async 1")
};

struct TimelineBlock {
  int block = 0, sm = 0;
  double start_ns = 0, end_ns = 0;  // the block's anchors (end: its last event when it wrote no end anchor)
  double cycles_per_ns = 0;         // the clock rate its marks were converted with
  bool rate_measured = false;       // from its own two anchors (else the header's or the other blocks')
};

struct WarpOverflow {
  int block = 0, warp = 0;
  std::uint64_t dropped = 0;
};

struct Timeline {
  bool model = false;      // computed from the config, not recorded: every view and export says so
  std::string model_note;  // how the model was parameterised ("H100-class defaults: ..." or "measured ceilings")
  std::string kernel, label, device;
  std::vector<std::string> regions;  // region id -> name
  int num_stages = 0;                // pipeline depth of the config (0: unknown)
  std::vector<TimelineEvent> events;  // grouped by track, each group sorted by start
  std::vector<TimelineTrack> tracks;  // sorted by SM, block, warp, lane
  std::vector<TimelineBlock> blocks;  // sorted by SM, then start
  std::vector<WarpOverflow> overflow;  // warps whose segment filled up
  std::uint64_t unmatched_ends = 0;    // ends with no open begin (dropped)
  std::uint64_t unterminated = 0;      // begins with no end (closed at the warp's last mark)
  double duration_ns = 0;              // from the origin to the last event or block end
  std::vector<std::string> warnings;

  std::uint64_t dropped_marks() const;
  const std::string& region_name(int region) const;
  int find_region(const std::string& name) const;  // -1 when absent
};

// Assembles a Timeline from per-warp event lists (the decoder and the models both build through it): sorts warps
// by SM/block/warp, splits overlapping-but-not-nested events of a warp onto sub-tracks, sets the origin.
class TimelineBuilder {
 public:
  explicit TimelineBuilder(std::vector<std::string> regions);

  void add_block(const TimelineBlock& block);
  // Events added after this belong to warp `warp` of block `block` (on SM `sm`).
  void begin_warp(int sm, int block, int warp);
  void interval(int region, std::uint8_t stage, std::uint32_t aux, double start_ns, double end_ns,
                bool unterminated = false);
  void instant(int region, std::uint8_t stage, std::uint32_t aux, double t_ns);
  // Shifts every time so the earliest block start (or event) is 0.
  Timeline finish(bool shift_origin = true);

 private:
  struct Warp {
    int sm, block, warp;
    std::vector<TimelineEvent> events;
  };
  std::vector<std::string> m_regions;
  std::vector<TimelineBlock> m_blocks;
  std::vector<Warp> m_warps;
};

// [SECTION] decoding

struct DecodeOptions {
  std::vector<std::string> regions;  // the kernel's probe names; ids past the end decode as "region N"
  int num_stages = 0;
  double clock_hz = 0;  // fallback SM clock when neither the header nor any block's anchors give one
};

// Decodes a probe buffer (see tile/probe.hpp). Blocks may appear in any order and on any SM; blocks that never
// began are skipped; overflowed segments are decoded up to their capacity and reported in Timeline::overflow.
// Errors (parse) on a buffer too short for its own header or with the wrong magic/version.
Result<Timeline> decode_timeline(const std::uint8_t* data, std::size_t size, const DecodeOptions& options = {});

// A zeroed buffer with its header filled, as the worker allocates it (tests build synthetic buffers on it).
std::vector<std::uint8_t> make_probe_buffer(std::uint32_t num_blocks, std::uint32_t warps_per_block,
                                            std::uint32_t capacity = probe::kDefaultCapacity,
                                            std::uint64_t clock_hz = 0);

// The same buffer with its capacity cut to the longest segment (what the worker sends back: most of a buffer sized
// for the worst case is zeros). Decodes to the same timeline; overflow counts are kept. Errors like decode_timeline.
Result<std::vector<std::uint8_t>> compact_probe_buffer(const std::uint8_t* data, std::size_t size);

// [SECTION] analysis

struct RegionStats {
  std::string name;
  int region = 0;
  std::uint64_t count = 0;     // intervals
  std::uint64_t instants = 0;  // instant marks
  double total_ns = 0, mean_ns = 0, median_ns = 0, p90_ns = 0, min_ns = 0, max_ns = 0;
  // Durations in `histogram.size()` equal bins over [hist_lo_ns, hist_hi_ns] (the last bin closed).
  std::vector<std::uint64_t> histogram;
  double hist_lo_ns = 0, hist_hi_ns = 0;
};

// Per region that has events, in region order. Median and p90 interpolate linearly between the nearest ranks
// (position p * (n - 1) of the sorted durations).
std::vector<RegionStats> region_statistics(const Timeline& t, int bins = 20);

// A percentile of `values` (sorted in place), p in [0, 1]; the same definition region_statistics uses.
double percentile(std::vector<double>& values, double p);

// How many pipeline stages are in flight. A stage is in flight for one (block, stage, aux) group from the
// first begin to the last end of its events, waits excluded (regions named "wait*": a wait is for the stage, not
// in it). Per block the count is swept exactly; `mean` is the time-weighted mean over the blocks' lifetimes.
struct StageOccupancy {
  int num_stages = 0;
  double t0_ns = 0, t1_ns = 0;
  std::vector<double> in_flight;  // per bin of [t0, t1]: stages in flight, averaged over the blocks alive then
  std::vector<double> fraction;   // fraction[k]: share of block-time with k stages in flight
  int max_in_flight = 0;
  double mean = 0;
};
StageOccupancy stage_occupancy(const Timeline& t, int bins = 256);

struct RegionDelta {
  std::string name;
  std::uint64_t count_a = 0, count_b = 0;
  double mean_a = 0, mean_b = 0, median_a = 0, median_b = 0, total_a = 0, total_b = 0;
  double mean_delta_ns = 0;  // b - a
  double mean_ratio = 0;     // b / a (0 when a has none)
};
struct TimelineComparison {
  double duration_a = 0, duration_b = 0;
  std::vector<RegionDelta> regions;  // matched by name; regions of only one side have zero counts on the other
};
TimelineComparison compare_timelines(const Timeline& a, const Timeline& b);

// [SECTION] export

// Chrome trace event format: {"traceEvents": [...], "displayTimeUnit": "ns", "otherData": {...}}. One process per
// SM (pid = SM + 1), one thread per track (tid = track + 1) named "block B · warp W"; intervals are "X" events,
// instants "i"; timestamps in µs. A model timeline says so in its process names and in otherData.model.
nlohmann::json to_chrome_trace(const Timeline& t);
// The same document written to `path` event by event (a model of millions of events never becomes one JSON value
// in memory), through a temporary file: the file is the whole trace or unchanged.
Status save_chrome_trace(const Timeline& t, const std::string& path);
// The inverse, for ours (a saved trace plotted again) and other tools' traceEvents JSON (an object or a bare array):
// "X" and "i"/"I" events, "B"/"E" pairs; regions from otherData.regions, else by name in order of appearance. Ours
// regroup per SM/block/warp from pid and args (async sub-tracks are rebuilt from the overlaps); others get a track
// per (pid, tid), moved to start at 0. Block anchors are not in a trace: blocks span their warps' events. Events
// of other kinds are skipped and counted in a warning. Errors (parse) name the event and the field: "trace event
// 12: field \"args.block\" is array, expected an integer".
Result<Timeline> from_chrome_trace(const nlohmann::json& trace);
// The Chrome trace file at `path` read with from_chrome_trace; errors name the file.
Result<Timeline> read_chrome_trace(const std::string& path);
// The summary JSON of `tilelab timeline --stats`: regions, occupancy, overflow, model flag.
nlohmann::json timeline_summary_json(const Timeline& t, const std::vector<RegionStats>& stats,
                                     const StageOccupancy& occupancy);
void to_json(nlohmann::json& j, const RegionStats& s);
void to_json(nlohmann::json& j, const StageOccupancy& s);
void to_json(nlohmann::json& j, const TimelineComparison& c);

}  // namespace tl
