// Timelines: decoding synthetic probe buffers (alignment, wrapped clocks, overflow, block order), Chrome trace
// validity, statistics and occupancy against hand-computed values, and model timelines of small GEMMs.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>

#include <nlohmann/json.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <tuple>

#include "library/library.hpp"
#include "runtime/device/ceilings.hpp"
#include "runtime/jit/cache.hpp"
#include "runtime/measure/bench.hpp"
#include "runtime/trace/timeline.hpp"
#include "tests/viz/timeline_fixtures.hpp"

namespace tl {
namespace {

using probe::kBegin;
using probe::kEnd;
using probe::kInstant;
using probe::Kind;
using probe::ProbeBlock;
using probe::ProbeRecord;
using probe::ProbeSegment;
using probe::kBlockBegun;
using probe::kBlockEnded;
using probe::block_table_offset;
using probe::segment_offset;

// Writes blocks and marks into a buffer made by make_probe_buffer, as the device would.
struct SyntheticBuffer {
  std::vector<std::uint8_t> bytes;
  std::uint32_t blocks, warps, capacity;
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::uint32_t> counts;

  SyntheticBuffer(std::uint32_t b, std::uint32_t w, std::uint32_t cap = 64, std::uint64_t clock_hz = 0)
      : bytes(make_probe_buffer(b, w, cap, clock_hz)), blocks(b), warps(w), capacity(cap) {}

  void block(std::uint32_t b, std::uint32_t sm, std::uint64_t gt, std::uint64_t clk,
             std::optional<std::pair<std::uint64_t, std::uint64_t>> end = std::nullopt) {
    ProbeBlock e{};
    e.gt_begin = gt;
    e.clk_begin = clk;
    e.smid = sm;
    e.flags = kBlockBegun;
    if (end) {
      e.gt_end = end->first;
      e.clk_end = end->second;
      e.flags |= kBlockEnded;
    }
    std::memcpy(bytes.data() + block_table_offset() + b * sizeof(ProbeBlock), &e, sizeof e);
  }
  void mark(std::uint32_t b, std::uint32_t w, std::uint64_t clk, std::uint16_t region, Kind kind,
            std::uint8_t stage = kNoStage, std::uint32_t aux = 0) {
    const std::uint64_t off = segment_offset(blocks, warps, capacity, b, w);
    std::uint32_t& n = counts[{b, w}];
    if (n < capacity) {
      ProbeRecord r{clk, region, static_cast<std::uint8_t>(kind), stage, aux};
      std::memcpy(bytes.data() + off + sizeof(ProbeSegment) + n * sizeof(ProbeRecord), &r, sizeof r);
    }
    ++n;
    ProbeSegment s{n, 1, 0};
    std::memcpy(bytes.data() + off, &s, sizeof s);
  }
  Result<Timeline> decode(std::vector<std::string> regions = {"load", "mma", "wait"}) const {
    DecodeOptions o;
    o.regions = std::move(regions);
    o.num_stages = 4;
    return decode_timeline(bytes.data(), bytes.size(), o);
  }
};

std::vector<const TimelineEvent*> events_of(const Timeline& t, const std::string& region) {
  std::vector<const TimelineEvent*> out;
  const int r = t.find_region(region);
  for (const auto& e : t.events)
    if (e.region == r) out.push_back(&e);
  return out;
}

// [SECTION] decoding

TEST(TimelineDecode, AlignsMarksThroughTheBlockAnchorsAndItsMeasuredClock) {
  SyntheticBuffer buf(1, 2);
  // 100 µs of globaltimer against 150000 cycles: 1.5 cycles per ns.
  buf.block(0, 7, 5'000'000, 1'000'000, std::make_pair<std::uint64_t, std::uint64_t>(5'100'000, 1'150'000));
  buf.mark(0, 0, 1'000'300, 0, kBegin, 2, 9);  // 300 cycles after the anchor: 200 ns
  buf.mark(0, 0, 1'000'600, 0, kEnd, 2, 9);    // 400 ns
  buf.mark(0, 1, 1'001'500, 1, kInstant);       // 1000 ns
  auto t = buf.decode();
  ASSERT_TRUE(t.ok()) << t.status().message();
  ASSERT_EQ(t->events.size(), 2u);
  ASSERT_EQ(t->blocks.size(), 1u);
  EXPECT_TRUE(t->blocks[0].rate_measured);
  EXPECT_NEAR(t->blocks[0].cycles_per_ns, 1.5, 1e-12);
  EXPECT_EQ(t->blocks[0].sm, 7);
  EXPECT_NEAR(t->blocks[0].end_ns, 100'000, 1e-9);
  auto load = events_of(*t, "load");
  ASSERT_EQ(load.size(), 1u);
  EXPECT_NEAR(load[0]->start_ns, 200, 1e-9);
  EXPECT_NEAR(load[0]->end_ns, 400, 1e-9);
  EXPECT_EQ(load[0]->stage, 2);
  EXPECT_EQ(load[0]->aux, 9u);
  auto mma = events_of(*t, "mma");
  ASSERT_EQ(mma.size(), 1u);
  EXPECT_TRUE(mma[0]->instant);
  EXPECT_NEAR(mma[0]->start_ns, 1000, 1e-9);
  EXPECT_EQ(t->tracks[t->events[0].track].sm, 7);
  EXPECT_EQ(t->dropped_marks(), 0u);
}

TEST(TimelineDecode, HandlesAClockThatWrappedAfterTheAnchor) {
  SyntheticBuffer buf(1, 1, 64, 1'000'000'000);  // no end anchor: the header's 1 GHz
  const std::uint64_t near_max = std::numeric_limits<std::uint64_t>::max() - 99;
  buf.block(0, 0, 1'000, near_max);
  buf.mark(0, 0, near_max + 50, 0, kBegin);  // 50 cycles in
  buf.mark(0, 0, 200, 0, kEnd);              // wrapped: 100 + 200 = 300 cycles in
  auto t = buf.decode();
  ASSERT_TRUE(t.ok()) << t.status().message();
  ASSERT_EQ(t->events.size(), 1u);
  EXPECT_NEAR(t->events[0].start_ns, 50, 1e-9);
  EXPECT_NEAR(t->events[0].end_ns, 300, 1e-9);
  EXPECT_FALSE(t->blocks[0].rate_measured);
}

TEST(TimelineDecode, BlocksInAnyOrderShareOneGlobalOrigin) {
  SyntheticBuffer buf(3, 1, 64, 2'000'000'000);  // 2 cycles per ns
  buf.block(0, 5, 10'000, 777);   // starts 4 µs after block 1
  buf.block(1, 0, 6'000, 123456);  // the earliest: the origin
  // block 2 never began: skipped, and its stray marks reported
  for (std::uint32_t b : {0u, 1u}) {
    const std::uint64_t c0 = b == 0 ? 777 : 123456;
    buf.mark(b, 0, c0 + 20, 1, kBegin);
    buf.mark(b, 0, c0 + 220, 1, kEnd);
  }
  buf.mark(2, 0, 5, 1, kInstant);
  auto t = buf.decode();
  ASSERT_TRUE(t.ok()) << t.status().message();
  ASSERT_EQ(t->blocks.size(), 2u);
  // Sorted by SM: block 1 (SM 0) first.
  EXPECT_EQ(t->blocks[0].block, 1);
  EXPECT_EQ(t->blocks[1].block, 0);
  ASSERT_EQ(t->tracks.size(), 2u);
  EXPECT_EQ(t->tracks[0].sm, 0);
  EXPECT_EQ(t->tracks[1].sm, 5);
  const TimelineEvent& early = t->events[t->tracks[0].first];
  const TimelineEvent& late = t->events[t->tracks[1].first];
  EXPECT_NEAR(early.start_ns, 10, 1e-9);
  EXPECT_NEAR(early.end_ns, 110, 1e-9);
  EXPECT_NEAR(late.start_ns, 4'010, 1e-9);
  EXPECT_NEAR(late.end_ns, 4'110, 1e-9);
  bool warned = false;
  for (const auto& w : t->warnings) warned |= w.find("no start anchor") != std::string::npos;
  EXPECT_TRUE(warned);
}

TEST(TimelineDecode, CountsOverflowInsteadOfDroppingSilently) {
  SyntheticBuffer buf(1, 2, 4, 1'000'000'000);
  buf.block(0, 0, 0, 0);
  for (int i = 0; i < 7; ++i) buf.mark(0, 1, 10 * i, 2, kInstant);
  buf.mark(0, 0, 5, 2, kInstant);
  auto t = buf.decode();
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->events.size(), 5u);  // 4 of warp 1 + 1 of warp 0
  ASSERT_EQ(t->overflow.size(), 1u);
  EXPECT_EQ(t->overflow[0].warp, 1);
  EXPECT_EQ(t->overflow[0].dropped, 3u);
  EXPECT_EQ(t->dropped_marks(), 3u);
  ASSERT_FALSE(t->warnings.empty());
  EXPECT_NE(t->warnings.back().find("3 marks dropped"), std::string::npos);
}

TEST(TimelineDecode, PairsBeginsWithEndsPerRegionAndStage) {
  SyntheticBuffer buf(1, 1, 64, 1'000'000'000);
  buf.block(0, 0, 0, 0);
  buf.mark(0, 0, 0, 0, kBegin, 0);
  buf.mark(0, 0, 10, 0, kBegin, 1);   // a second load in flight: overlaps the first, not nested in it
  buf.mark(0, 0, 20, 0, kEnd, 0);
  buf.mark(0, 0, 30, 1, kBegin);      // nested in the stage-1 load
  buf.mark(0, 0, 35, 1, kEnd);
  buf.mark(0, 0, 40, 0, kEnd, 1);
  buf.mark(0, 0, 50, 2, kEnd);        // an end with no begin
  buf.mark(0, 0, 60, 2, kBegin);      // a begin with no end
  buf.mark(0, 0, 70, 1, kInstant);
  auto t = buf.decode();
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->unmatched_ends, 1u);
  EXPECT_EQ(t->unterminated, 1u);
  auto loads = events_of(*t, "load");
  ASSERT_EQ(loads.size(), 2u);
  std::map<int, std::pair<double, double>> by_stage;
  for (auto* e : loads) by_stage[e->stage] = {e->start_ns, e->end_ns};
  EXPECT_EQ(by_stage[0], std::make_pair(0.0, 20.0));
  EXPECT_EQ(by_stage[1], std::make_pair(10.0, 40.0));
  // The stage-0 and stage-1 loads overlap without nesting: two sub-tracks of the same warp.
  EXPECT_NE(loads[0]->track, loads[1]->track);
  ASSERT_EQ(t->tracks.size(), 2u);
  EXPECT_EQ(t->tracks[0].warp, t->tracks[1].warp);
  EXPECT_EQ(t->tracks[1].lane, 1);
  auto wait = events_of(*t, "wait");
  ASSERT_EQ(wait.size(), 1u);
  EXPECT_TRUE(wait[0]->unterminated);
  EXPECT_NEAR(wait[0]->end_ns, 70, 1e-9);  // closed at the warp's last mark
}

TEST(TimelineDecode, RefusesWhatIsNotAProbeBuffer) {
  std::vector<std::uint8_t> tiny(10, 0);
  EXPECT_EQ(decode_timeline(tiny.data(), tiny.size()).status().code(), ErrorCode::parse);
  auto buf = make_probe_buffer(2, 2, 8);
  buf[0] ^= 0xFF;
  EXPECT_EQ(decode_timeline(buf.data(), buf.size()).status().code(), ErrorCode::parse);
  auto ok = make_probe_buffer(2, 2, 8);
  EXPECT_EQ(decode_timeline(ok.data(), ok.size() - 1).status().code(), ErrorCode::parse);
  auto empty = decode_timeline(ok.data(), ok.size());
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->events.empty());
}

TEST(TimelineDecode, CompactionKeepsEveryEventInASmallerBuffer) {
  SyntheticBuffer buf(2, 3, 64, 1'000'000'000);
  buf.block(0, 1, 0, 0);
  buf.block(1, 0, 50, 1000);
  for (int i = 0; i < 5; ++i) buf.mark(0, 1, 10 * i, 0, i % 2 ? kEnd : kBegin);
  for (int i = 0; i < 3; ++i) buf.mark(1, 2, 1000 + 7 * i, 1, kInstant, 1, static_cast<std::uint32_t>(i));
  auto compact = compact_probe_buffer(buf.bytes.data(), buf.bytes.size());
  ASSERT_TRUE(compact.ok()) << compact.status().message();
  EXPECT_EQ(compact->size(), probe::buffer_bytes(2, 3, 5));
  auto a = buf.decode();
  auto b = decode_timeline(compact->data(), compact->size(), {{"load", "mma", "wait"}, 4, 0});
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(a->events.size(), b->events.size());
  for (std::size_t i = 0; i < a->events.size(); ++i) {
    EXPECT_EQ(a->events[i].start_ns, b->events[i].start_ns);
    EXPECT_EQ(a->events[i].end_ns, b->events[i].end_ns);
    EXPECT_EQ(a->events[i].region, b->events[i].region);
    EXPECT_EQ(a->tracks[a->events[i].track].name(), b->tracks[b->events[i].track].name());
  }
}

// Every sub-track is properly nested, whatever the input: random intervals on one warp.
TEST(TimelineBuilder, SubTracksAreAlwaysProperlyNested) {
  std::uint64_t state = 12345;
  auto next = [&] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<double>(state >> 40) / static_cast<double>(1 << 24);
  };
  TimelineBuilder b({"r"});
  b.begin_warp(0, 0, 0);
  for (int i = 0; i < 500; ++i) {
    const double s = std::floor(next() * 1000), d = std::floor(next() * 50);
    b.interval(0, kNoStage, 0, s, s + d);
  }
  Timeline t = b.finish();
  EXPECT_EQ(t.events.size(), 500u);
  EXPECT_GT(t.tracks.size(), 1u);
  for (const auto& tr : t.tracks) {
    std::vector<double> stack;
    for (std::uint32_t i = tr.first; i < tr.first + tr.count; ++i) {
      const auto& e = t.events[i];
      while (!stack.empty() && stack.back() <= e.start_ns) stack.pop_back();
      ASSERT_TRUE(stack.empty() || stack.back() >= e.end_ns) << "event " << i << " crosses its parent";
      stack.push_back(e.end_ns);
    }
  }
}

// [SECTION] Chrome trace

Timeline small_timeline() {
  SyntheticBuffer buf(2, 2, 64, 1'000'000'000);
  buf.block(0, 3, 1'000, 0);
  buf.block(1, 1, 1'500, 0);
  for (std::uint32_t b = 0; b < 2; ++b)
    for (std::uint32_t w = 0; w < 2; ++w) {
      buf.mark(b, w, 0, 0, kBegin, 0);
      buf.mark(b, w, 10, 0, kBegin, 1);
      buf.mark(b, w, 20, 1, kBegin);
      buf.mark(b, w, 30, 1, kEnd);
      buf.mark(b, w, 30, 0, kEnd, 0);
      buf.mark(b, w, 40, 0, kEnd, 1);
      buf.mark(b, w, 45, 2, kInstant, 1);
    }
  return buf.decode().value();
}

TEST(ChromeTrace, ParsesBackWithNestedEventsPerThreadAndNamedTracks) {
  Timeline t = small_timeline();
  const std::string text = to_chrome_trace(t).dump();
  auto j = nlohmann::json::parse(text);
  ASSERT_TRUE(j.contains("traceEvents"));
  EXPECT_EQ(j["displayTimeUnit"], "ns");
  EXPECT_FALSE(j["otherData"]["model"].get<bool>());
  std::map<std::pair<int, int>, std::vector<std::pair<double, double>>> per_thread;
  std::map<int, std::string> process_names;
  std::map<std::pair<int, int>, std::string> thread_names;
  std::size_t x = 0, instants = 0;
  for (const auto& e : j["traceEvents"]) {
    const std::string ph = e["ph"];
    const int pid = e["pid"], tid = e["tid"];
    if (ph == "M") {
      if (e["name"] == "process_name") process_names[pid] = e["args"]["name"];
      if (e["name"] == "thread_name") thread_names[{pid, tid}] = e["args"]["name"];
      continue;
    }
    ASSERT_TRUE(process_names.count(pid)) << "process metadata precedes its events";
    ASSERT_TRUE(thread_names.count({pid, tid})) << "thread metadata precedes its events";
    if (ph == "X") {
      ++x;
      per_thread[{pid, tid}].push_back({e["ts"].get<double>(), e["ts"].get<double>() + e["dur"].get<double>()});
    } else {
      EXPECT_EQ(ph, "i");
      ++instants;
    }
  }
  EXPECT_EQ(x, 12u);
  EXPECT_EQ(instants, 4u);
  EXPECT_EQ(process_names[4], "SM 3");  // pid = SM + 1
  EXPECT_EQ(process_names[2], "SM 1");
  bool async_named = false;
  for (const auto& [key, name] : thread_names) async_named |= name.find("async 1") != std::string::npos;
  EXPECT_TRUE(async_named);
  // Per thread, X events sorted by start must nest like a stack (what Perfetto requires of one track).
  for (auto& [key, spans] : per_thread) {
    std::sort(spans.begin(), spans.end(), [](auto a, auto b) { return a.first < b.first || (a.first == b.first && a.second > b.second); });
    std::vector<double> stack;
    for (const auto& [s, e] : spans) {
      while (!stack.empty() && stack.back() <= s + 1e-9) stack.pop_back();
      ASSERT_TRUE(stack.empty() || stack.back() + 1e-9 >= e) << "pid " << key.first << " tid " << key.second;
      stack.push_back(e);
    }
  }
  // Microseconds: block 1 (SM 1) starts 500 ns after block 0 (the origin), its first load at 0.5 µs.
  double min_ts_sm1 = 1e300;
  for (const auto& e : j["traceEvents"])
    if (e["ph"] == "X" && e["pid"] == 2) min_ts_sm1 = std::min(min_ts_sm1, e["ts"].get<double>());
  EXPECT_NEAR(min_ts_sm1, 0.5, 1e-12);
}

TEST(ChromeTrace, AModelSaysSoEverywhere) {
  GemmWgmmaModel m;
  m.stages = 2;
  m.consumers = 1;
  m.k_steps = 2;
  Timeline t = model_gemm_wgmma(m, {10, 0, 100, 50, 40, 30}, {});
  auto j = to_chrome_trace(t);
  EXPECT_TRUE(j["otherData"]["model"].get<bool>());
  EXPECT_NE(j["otherData"]["model_note"].get<std::string>().find("MODEL"), std::string::npos);
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "process_name") {
      EXPECT_NE(e["args"]["name"].get<std::string>().find("MODEL"), std::string::npos);
    }
  }
}

TEST(ChromeTrace, ReadsBackOurOwnChromeTrace) {
  Timeline t = tl::viz::testing::busy_timeline(24, 50);
  auto back = from_chrome_trace(to_chrome_trace(t));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->events.size(), t.events.size());
  EXPECT_EQ(back->regions, t.regions);
  EXPECT_EQ(back->num_stages, t.num_stages);
  EXPECT_NEAR(back->duration_ns, t.duration_ns, 1e-3 * t.duration_ns);
  // Same blocks and warps per track (sub-tracks are rebuilt from the overlaps).
  std::set<std::tuple<int, int, int>> a, b;
  for (const auto& tr : t.tracks) a.insert({tr.sm, tr.block, tr.warp});
  for (const auto& tr : back->tracks) b.insert({tr.sm, tr.block, tr.warp});
  EXPECT_EQ(a, b);
  // Per region: the same count and total duration.
  auto totals = [](const Timeline& x) {
    std::map<std::string, std::pair<int, double>> m;
    for (const auto& e : x.events) {
      auto& s = m[x.region_name(e.region)];
      ++s.first;
      s.second += e.duration_ns();
    }
    return m;
  };
  auto ta = totals(t), tb = totals(*back);
  ASSERT_EQ(ta.size(), tb.size());
  for (const auto& [name, s] : ta) {
    EXPECT_EQ(tb[name].first, s.first) << name;
    EXPECT_NEAR(tb[name].second, s.second, 1e-6 * s.second + 1e-3) << name;
  }
}

TEST(ChromeTrace, ForeignTracesWithBeginEndPairs) {
  nlohmann::json trace = {{"traceEvents",
                           {{{"ph", "B"}, {"name", "load"}, {"pid", 7}, {"tid", 2}, {"ts", 1.0}},
                            {{"ph", "E"}, {"name", "load"}, {"pid", 7}, {"tid", 2}, {"ts", 3.0}},
                            {{"ph", "X"}, {"name", "mma"}, {"pid", 7}, {"tid", 3}, {"ts", 2.0}, {"dur", 0.5}},
                            {{"ph", "C"}, {"name", "counter"}, {"pid", 7}, {"ts", 2.0}}}}};
  auto t = from_chrome_trace(trace);
  ASSERT_TRUE(t.ok()) << t.status().message();
  ASSERT_EQ(t->events.size(), 2u);
  EXPECT_EQ(t->tracks.size(), 2u);
  EXPECT_NEAR(t->duration_ns, 2000, 1e-6);  // 1 µs .. 3 µs, origin moved to the first event
  ASSERT_EQ(t->warnings.size(), 1u);        // the counter event was skipped, and said so
}

TEST(ChromeTrace, RejectsWhatIsNotATrace) {
  EXPECT_FALSE(from_chrome_trace(nlohmann::json{{"foo", 1}}).ok());
  EXPECT_FALSE(from_chrome_trace(nlohmann::json{{"traceEvents", nlohmann::json::array()}}).ok());
  auto missing = read_chrome_trace("/nonexistent/trace.json");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), ErrorCode::not_found);
}

TEST(ChromeTrace, ErrorsNameTheEventAndTheField) {
  using nlohmann::json;
  auto event = [](json args) {
    return json{{"ph", "X"}, {"name", "mma"}, {"pid", 1}, {"tid", 1}, {"ts", 1.0}, {"dur", 1.0}, {"args", std::move(args)}};
  };
  const json ok = event({{"block", 0}, {"warp", 0}});
  struct Bad {
    json event;
    std::string message;
  };
  const std::vector<Bad> bad = {
      {event(json::array({1, 2})), "trace event 1: field \"args\" is array, expected an object"},
      {event({{"block", json::array({json::array({1})})}}), "trace event 1: field \"args.block\" is array, expected an integer"},
      {event({{"stage", 300}}), "trace event 1: field \"args.stage\" is 300, expected 0..255"},
      {event({{"aux", -1}}), "trace event 1: field \"args.aux\" is -1, expected 0..4294967295"},
      {event({{"warp", "three"}}), "trace event 1: field \"args.warp\" is string, expected an integer"},
      {json{{"ph", "X"}, {"ts", "soon"}}, "trace event 1: field \"ts\" is string, expected a number"},
      {json{{"ph", 7}}, "trace event 1: field \"ph\" is number, expected a string"},
      {json{{"ph", "X"}, {"ts", 1e306}, {"pid", 1}}, "trace event 1: field \"ts\" or \"dur\" is too large"},
      {json::array(), "trace event 1: is array, expected an object"}};
  for (const Bad& b : bad) {
    auto t = from_chrome_trace(json{{"traceEvents", {ok, b.event}}});
    ASSERT_FALSE(t.ok()) << b.event.dump();
    EXPECT_EQ(t.status().message(), b.message);
  }
  auto other = from_chrome_trace(json{{"traceEvents", {ok}}, {"otherData", {{"model", "yes"}}}});
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.status().message(), "otherData: field \"model\" is string, expected true or false");
}

TEST(ChromeTrace, AFileNamesItselfInEveryError) {
  const auto dir = std::filesystem::temp_directory_path() / ("tl_trace_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream((dir / name).string()) << text;
    return (dir / name).string();
  };
  const std::string nested =
      write("nested.json", R"({"traceEvents": [{"ph": "X", "ts": 1, "pid": 1, "args": [[1], [2]]}]})");
  auto t = read_chrome_trace(nested);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().message(), nested + R"(: trace event 0: field "args" is array, expected an object)");
  const std::string huge = write("huge.json", R"({"traceEvents": [{"ph": "X", "ts": 1, "pid": 1}, {"ph": "X", "ts": 1e999}]})");
  t = read_chrome_trace(huge);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find(huge + R"(: field "traceEvents[1].ts": a number outside the range of a double)"),
            std::string::npos)
      << t.status().message();
  std::filesystem::remove_all(dir);
}

TEST(ChromeTrace, ReadsBackWhatItWrote) {
  const Timeline t = small_timeline();
  auto back = from_chrome_trace(nlohmann::json::parse(to_chrome_trace(t).dump()));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->regions, t.regions);
  EXPECT_EQ(back->blocks.size(), t.blocks.size());
  ASSERT_EQ(back->tracks.size(), t.tracks.size());
  ASSERT_EQ(back->events.size(), t.events.size());
  for (std::size_t k = 0; k < t.tracks.size(); ++k) {
    EXPECT_EQ(back->tracks[k].name(), t.tracks[k].name());
    ASSERT_EQ(back->tracks[k].count, t.tracks[k].count);
    for (std::uint32_t i = 0; i < t.tracks[k].count; ++i) {
      const TimelineEvent& a = t.events[t.tracks[k].first + i];
      const TimelineEvent& b = back->events[back->tracks[k].first + i];
      EXPECT_NEAR(a.start_ns, b.start_ns, 1e-6);
      EXPECT_NEAR(a.end_ns, b.end_ns, 1e-6);
      EXPECT_EQ(a.region, b.region);
      EXPECT_EQ(a.stage, b.stage);
      EXPECT_EQ(a.aux, b.aux);
      EXPECT_EQ(a.instant, b.instant);
    }
  }
  EXPECT_NEAR(back->duration_ns, t.duration_ns, 1e-6);

  GemmWgmmaModel m;
  m.stages = 2;
  m.consumers = 1;
  m.k_steps = 2;
  Timeline model = model_gemm_wgmma(m, {10, 0, 100, 50, 40, 30}, {});
  model.model_note = "test defaults";
  auto model_back = from_chrome_trace(to_chrome_trace(model));
  ASSERT_TRUE(model_back.ok());
  EXPECT_TRUE(model_back->model);
  EXPECT_EQ(model_back->model_note, "test defaults");

  EXPECT_FALSE(from_chrome_trace(nlohmann::json::object()).ok());
  EXPECT_FALSE(from_chrome_trace({{"traceEvents", {{{"ph", "X"}, {"name", "a"}}}}}).ok());  // no ts or pid
}

// [SECTION] statistics, occupancy, comparison

Timeline timeline_of(const std::vector<std::tuple<std::string, int, std::uint32_t, double, double>>& spans,
                     std::vector<std::string> regions) {
  TimelineBuilder b(regions);
  b.begin_warp(0, 0, 0);
  for (const auto& [name, stage, aux, s, e] : spans) {
    int r = static_cast<int>(std::find(regions.begin(), regions.end(), name) - regions.begin());
    b.interval(r, static_cast<std::uint8_t>(stage), aux, s, e);
  }
  return b.finish(false);
}

TEST(TimelineStats, MatchHandComputedValues) {
  // Durations 10, 20, 30, 40, 100 (sequential, one track).
  Timeline t = timeline_of({{"mma", 0, 0, 0, 10}, {"mma", 0, 1, 10, 30}, {"mma", 0, 2, 30, 60}, {"mma", 0, 3, 60, 100},
                            {"mma", 0, 4, 100, 200}, {"load", 0, 5, 200, 205}},
                           {"load", "mma"});
  auto stats = region_statistics(t, 2);
  ASSERT_EQ(stats.size(), 2u);
  const RegionStats& s = stats[1];
  EXPECT_EQ(s.name, "mma");
  EXPECT_EQ(s.count, 5u);
  EXPECT_DOUBLE_EQ(s.total_ns, 200);
  EXPECT_DOUBLE_EQ(s.mean_ns, 40);
  EXPECT_DOUBLE_EQ(s.median_ns, 30);
  EXPECT_DOUBLE_EQ(s.p90_ns, 76);  // position 3.6 between 40 and 100
  EXPECT_DOUBLE_EQ(s.min_ns, 10);
  EXPECT_DOUBLE_EQ(s.max_ns, 100);
  ASSERT_EQ(s.histogram.size(), 2u);
  EXPECT_EQ(s.histogram[0], 4u);  // [10, 55)
  EXPECT_EQ(s.histogram[1], 1u);  // [55, 100]
  EXPECT_EQ(stats[0].count, 1u);
  EXPECT_DOUBLE_EQ(stats[0].median_ns, 5);
}

TEST(TimelineStats, StageOccupancySweepsTheSpansOfEachStageUse) {
  // Stage 0 (use 0) over [0,100], stage 1 over [50,150], stage 0 again (use 2) over [100,200]; a wait does not
  // count. In flight: 1 on [0,50), 2 on [50,150), 1 on [150,200]: mean 1.5, max 2.
  Timeline t = timeline_of({{"load", 0, 0, 0, 40}, {"mma", 0, 0, 60, 100}, {"load", 1, 1, 50, 60},
                            {"mma", 1, 1, 100, 150}, {"wait", 0, 2, 0, 100}, {"load", 0, 2, 100, 120},
                            {"mma", 0, 2, 150, 200}},
                           {"load", "mma", "wait"});
  t.num_stages = 2;
  auto o = stage_occupancy(t, 4);
  EXPECT_EQ(o.max_in_flight, 2);
  EXPECT_NEAR(o.mean, 1.5, 1e-12);
  ASSERT_EQ(o.fraction.size(), 3u);
  EXPECT_NEAR(o.fraction[0], 0, 1e-12);
  EXPECT_NEAR(o.fraction[1], 0.5, 1e-12);
  EXPECT_NEAR(o.fraction[2], 0.5, 1e-12);
  ASSERT_EQ(o.in_flight.size(), 4u);  // bins of 50 ns
  EXPECT_NEAR(o.in_flight[0], 1, 1e-12);
  EXPECT_NEAR(o.in_flight[1], 2, 1e-12);
  EXPECT_NEAR(o.in_flight[2], 2, 1e-12);
  EXPECT_NEAR(o.in_flight[3], 1, 1e-12);
}

TEST(TimelineStats, ComparisonGivesPerRegionDeltas) {
  Timeline a = timeline_of({{"mma", 0, 0, 0, 10}, {"mma", 0, 1, 10, 30}}, {"mma", "load"});
  Timeline b = timeline_of({{"mma", 0, 0, 0, 30}, {"load", 0, 1, 30, 35}}, {"load", "mma"});
  auto c = compare_timelines(a, b);
  EXPECT_DOUBLE_EQ(c.duration_a, 30);
  EXPECT_DOUBLE_EQ(c.duration_b, 35);
  ASSERT_EQ(c.regions.size(), 2u);
  EXPECT_EQ(c.regions[0].name, "mma");
  EXPECT_EQ(c.regions[0].count_a, 2u);
  EXPECT_EQ(c.regions[0].count_b, 1u);
  EXPECT_DOUBLE_EQ(c.regions[0].mean_delta_ns, 15);
  EXPECT_DOUBLE_EQ(c.regions[0].mean_ratio, 2);
  EXPECT_EQ(c.regions[1].name, "load");
  EXPECT_EQ(c.regions[1].count_a, 0u);
  EXPECT_EQ(c.regions[1].count_b, 1u);
}

// [SECTION] models

std::vector<std::pair<double, double>> spans_of(const Timeline& t, const std::string& region, int warp) {
  std::vector<std::pair<double, double>> out;
  const int r = t.find_region(region);
  for (const auto& e : t.events)
    if (e.region == r && t.tracks[e.track].warp == warp) out.push_back({e.start_ns, e.end_ns});
  std::sort(out.begin(), out.end());
  return out;
}

using Spans = std::vector<std::pair<double, double>>;

// Costs: issue 10, satisfied wait 0, latency 100, transfer 50, MMA 40, epilogue 30 (ns).
const GemmModelCosts kCosts{10, 0, 100, 50, 40, 30};

TEST(TimelineModel, WgmmaOneConsumerMatchesTheHandSchedule) {
  // Two stages, three k-steps, one tile. Loads land at 160, 210 (bandwidth-bound behind the first), and 360 (the
  // producer waited for stage 0's release at 200 before issuing it: 210 + 100 + 50).
  GemmWgmmaModel m;
  m.stages = 2;
  m.consumers = 1;
  m.k_steps = 3;
  Timeline t = model_gemm_wgmma(m, kCosts, {"wait_empty", "tma_issue", "wait_full", "wgmma", "release", "epilogue"});
  EXPECT_TRUE(t.model);
  EXPECT_EQ(t.num_stages, 2);
  EXPECT_EQ(spans_of(t, "tma_issue", 0), (Spans{{0, 10}, {10, 20}, {200, 210}}));
  EXPECT_EQ(spans_of(t, "wait_empty", 0), (Spans{{0, 0}, {10, 10}, {20, 200}}));
  EXPECT_EQ(spans_of(t, "tma_in_flight", 0), (Spans{{10, 160}, {20, 210}, {210, 360}}));
  EXPECT_EQ(spans_of(t, "wait_full", 4), (Spans{{0, 160}, {200, 210}, {250, 360}}));
  EXPECT_EQ(spans_of(t, "wgmma", 4), (Spans{{160, 200}, {210, 250}, {360, 400}}));
  EXPECT_EQ(spans_of(t, "epilogue", 4), (Spans{{400, 430}}));
  EXPECT_DOUBLE_EQ(t.duration_ns, 430);
  // The in-flight loads overlap the next issue without nesting in it: the producer warp has a sub-track.
  int producer_tracks = 0;
  for (const auto& tr : t.tracks) producer_tracks += tr.warp == 0;
  EXPECT_GE(producer_tracks, 2);
}

TEST(TimelineModel, WgmmaConsumersShareTheTensorCores) {
  GemmWgmmaModel m;
  m.stages = 2;
  m.consumers = 2;
  m.k_steps = 1;
  Timeline t = model_gemm_wgmma(m, kCosts, {});
  // Stage lands at 160; consumer 0 runs [160,200], consumer 1 waits for the tensor cores and runs until 240.
  EXPECT_EQ(spans_of(t, "wgmma", 4), (Spans{{160, 200}}));
  EXPECT_EQ(spans_of(t, "wgmma", 8), (Spans{{160, 240}}));
  EXPECT_EQ(spans_of(t, "epilogue", 8), (Spans{{240, 270}}));
}

TEST(TimelineModel, MmaPipelineMatchesTheHandScheduleAndRunsInWaves) {
  // Two stages: the prologue issues stage 0; each k-step waits for its stage, issues the next, runs its MMAs.
  GemmMmaModel m;
  m.stages = 2;
  m.k_steps = 3;
  m.blocks = 3;
  m.num_sms = 2;
  Timeline t = model_gemm_mma(m, kCosts, {"load_issue", "wait_stage", "mma", "epilogue"});
  ASSERT_EQ(t.blocks.size(), 3u);
  auto block_spans = [&](const std::string& region, int block) {
    Spans out;
    const int r = t.find_region(region);
    for (const auto& e : t.events)
      if (e.region == r && t.tracks[e.track].block == block) out.push_back({e.start_ns, e.end_ns});
    std::sort(out.begin(), out.end());
    return out;
  };
  EXPECT_EQ(block_spans("load_issue", 0), (Spans{{0, 10}, {160, 170}, {320, 330}}));
  EXPECT_EQ(block_spans("wait_stage", 0), (Spans{{10, 160}, {210, 320}, {370, 480}}));
  EXPECT_EQ(block_spans("mma", 0), (Spans{{170, 210}, {330, 370}, {480, 520}}));
  EXPECT_EQ(block_spans("epilogue", 0), (Spans{{520, 550}}));
  // Two SMs, one block each at a time: block 2 is the second wave on SM 0.
  EXPECT_EQ(block_spans("epilogue", 2), (Spans{{1070, 1100}}));
  EXPECT_DOUBLE_EQ(t.duration_ns, 1100);
  EXPECT_EQ(t.tracks[t.events[0].track].sm, 0);
}

TEST(TimelineModel, AProblemPastTheEventCapIsRefusedFromItsConfig) {
  // gemm.wgmma's default 128x256 tiles, 64-deep k-steps: 3 producer events per k-step plus 3 per consumer, and an
  // epilogue per consumer and tile. 8192^3 is 2048 tiles x 2 consumers x (128 x 4.5 + 1) = 2363392 events.
  const KernelSpec& spec = *library_registry().find("gemm.wgmma").value();
  auto at = [&](const char* size) {
    auto inst = instantiate(spec, {{"M", size}, {"N", size}, {"K", size}}, {}, limits_for_arch("sm_90a"));
    EXPECT_TRUE(inst.ok()) << inst.status().message();
    return model_timeline(*inst, model_device());
  };
  auto fits = at("8192");
  ASSERT_TRUE(fits.ok()) << fits.status().message();
  EXPECT_EQ(fits->events.size(), 2363392u);
  const auto start = std::chrono::steady_clock::now();
  auto huge = at("65536");  // 1.2e9 events: gigabytes, were it simulated
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 1.0);
  ASSERT_FALSE(huge.ok());
  EXPECT_EQ(huge.status().code(), ErrorCode::invalid_argument);
  EXPECT_NE(huge.status().message().find("would have 1.21e+09 events; a model timeline holds at most 4194304"),
            std::string::npos)
      << huge.status().message();
  const KernelSpec& mma = *library_registry().find("gemm.mma").value();
  auto mi = instantiate(mma, {{"M", "65536"}, {"N", "65536"}, {"K", "65536"}}, {}, limits_for_arch("sm_90a"));
  ASSERT_TRUE(mi.ok());
  EXPECT_EQ(model_timeline(*mi, model_device()).status().code(), ErrorCode::invalid_argument);
}

TEST(ChromeTrace, SavedEventByEventItIsTheSameDocument) {
  const Timeline t = small_timeline();
  const auto path = std::filesystem::temp_directory_path() / ("tl_trace_save_" + std::to_string(::getpid()) + ".json");
  ASSERT_TRUE(save_chrome_trace(t, path.string()).ok());
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), to_chrome_trace(t).dump() + "\n");
  std::filesystem::remove(path);
  // Into a directory that is not there: an error naming the file, nothing written.
  Status bad = save_chrome_trace(t, "/nonexistent_dir_tl/x.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.message().find("/nonexistent_dir_tl/x.json"), std::string::npos);
}

TEST(TimelineModel, FromTheLibrarySpecWithDefaultsLabelledAsAModel) {
  const KernelSpec& spec = *library_registry().find("gemm.wgmma").value();
  auto inst = instantiate(spec, {{"M", "512"}, {"N", "512"}, {"K", "256"}}, {}, limits_for_arch("sm_90a"));
  ASSERT_TRUE(inst.ok()) << inst.status().message();
  auto t = model_timeline(*inst, model_device());
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_TRUE(t->model);
  EXPECT_NE(t->model_note.find("H100-class defaults"), std::string::npos);
  // 512x512 in 128x256 tiles: 8 tiles, 8 blocks, 4 k-steps each; 2 consumers; the auto tile's 4 stages at 4-8
  // k-steps (gemm_tc.cpp wgmma_deep_pays).
  EXPECT_EQ(t->blocks.size(), 8u);
  EXPECT_EQ(t->num_stages, 4);
  std::size_t wgmma = 0;
  for (const auto& e : t->events) wgmma += e.region == t->find_region("wgmma");
  EXPECT_EQ(wgmma, 8u * 4u * 2u);
  // Every region the spec lists keeps its id (the device's region ids).
  for (std::size_t i = 0; i < spec.probes.size(); ++i) EXPECT_EQ(t->regions[i], spec.probes[i]);
  auto occ = stage_occupancy(*t);
  EXPECT_GE(occ.max_in_flight, 1);
  EXPECT_LE(occ.max_in_flight, 4);

  const KernelSpec& mma = *library_registry().find("gemm.mma").value();
  auto mi = instantiate(mma, {{"M", "256"}, {"N", "256"}, {"K", "128"}}, {}, limits_for_arch("sm_90a"));
  ASSERT_TRUE(mi.ok());
  auto mt = model_timeline(*mi, model_device());
  ASSERT_TRUE(mt.ok()) << mt.status().message();
  EXPECT_EQ(mt->blocks.size(), 2u);  // 2 x 1 tiles of the default 128 x 256 block
  const KernelSpec& simt = *library_registry().find("gemm.simt").value();
  auto si = instantiate(simt, {{"M", "64"}, {"N", "64"}, {"K", "64"}}, {}, limits_for_arch("sm_90a"));
  ASSERT_TRUE(si.ok());
  EXPECT_EQ(model_timeline(*si, model_device()).status().code(), ErrorCode::unsupported);
}

TEST(TimelineModel, MeasuredCeilingsReplaceTheDefaultsAndSaySo) {
  Ceilings c;
  c.device_name = "Test GPU";
  c.l2_bytes_per_s = 1e12;
  c.bf16_tc_flops = 100e12;
  ModelDevice d = model_device(&c);
  EXPECT_DOUBLE_EQ(d.l2_bytes_per_s, 1e12);
  EXPECT_DOUBLE_EQ(d.mma_sync_flops, 100e12);
  EXPECT_NE(d.source.find("measured ceilings of Test GPU"), std::string::npos);
  // With the per-benchmark rates (as measured on Hopper), wgmma and mma.sync each get their own.
  c.bf16_tc_flops = 900e12;
  c.details = {{"mma_bf16", {{"rate", 600e12}}}, {"wgmma_bf16", {{"rate", 900e12}}}, {"wgmma_f16", {{"rate", 800e12}}}};
  d = model_device(&c);
  EXPECT_DOUBLE_EQ(d.wgmma_flops, 900e12);
  EXPECT_DOUBLE_EQ(d.mma_sync_flops, 600e12);
}

TEST(TimelineModel, ClusterPairsPullHalfTheSharedOperandFromL2) {
  const KernelSpec& spec = *library_registry().find("gemm.wgmma").value();
  const std::map<std::string, std::string> problem = {{"M", "4096"}, {"N", "4096"}, {"K", "4096"}};
  auto span = [&](std::map<std::string, std::string> config) {
    config["block_N"] = "128";
    auto inst = instantiate(spec, problem, config, limits_for_arch("sm_90a"));
    EXPECT_TRUE(inst.ok()) << inst.status().message();
    ModelDevice d = model_device();
    d.wgmma_flops = 4000e12;  // loads bind: the transfer time decides the span
    auto t = model_timeline(*inst, d);
    EXPECT_TRUE(t.ok()) << t.status().message();
    return std::make_pair(t->duration_ns, t->model_note);
  };
  const auto [alone, alone_note] = span({});
  const auto [pair, pair_note] = span({{"cluster_M", "2"}});
  EXPECT_LT(pair, 0.9 * alone);
  EXPECT_NE(pair_note.find("2-CTA cluster"), std::string::npos);
  EXPECT_EQ(alone_note.find("2-CTA cluster"), std::string::npos);
}

// [SECTION] probe builds (NVRTC, no GPU)

// The probe build of each kernel with probes compiles for sm_90a with marks in it, without spilling, as a cache
// entry of its own; the kernel compiled without probes has none of them. gemm.mma's default scheduling switches
// (unroll_k, early_sync: the stage-wait marks then sit inside the MMA region) leave its probe build 12 bytes of
// spills at 255 registers, so it is checked here with them off (0 spills) and at its defaults below (<= 16 B).
TEST(ProbeBuild, CompilesWithMarksAndLeavesTheNormalBuildAlone) {
  const auto dir = std::filesystem::temp_directory_path() / ("tl_test_timeline_" + std::to_string(::getpid()));
  KernelCache cache(dir.string());
  Jit jit(kernel_sources().value(), &cache);
  {
    auto prepared = prepare_kernel(library_registry(), jit, "gemm.mma", {{"M", "512"}, {"N", "512"}, {"K", "512"}}, {},
                                   limits_for_arch("sm_90a"));
    ASSERT_TRUE(prepared.ok()) << prepared.status().message();
    ASSERT_TRUE(add_timeline_build(jit, *prepared).ok());
    EXPECT_LE(prepared->timeline->resources.spill_store_bytes, 16);
    EXPECT_EQ(prepared->compiled.resources.spill_store_bytes, 0);
  }
  const std::map<std::string, std::string> mma_plain = {{"unroll_k", "false"}, {"early_sync", "false"}, {"serpentine", "false"}};
  for (const auto& [name, config] : std::vector<std::pair<std::string, std::map<std::string, std::string>>>{
           {"gemm.wgmma", {}}, {"gemm.wgmma", {{"tma_store", "false"}, {"block_M", "64"}}}, {"gemm.mma", mma_plain}}) {
    SCOPED_TRACE(name);
    auto prepared = prepare_kernel(library_registry(), jit, name, {{"M", "512"}, {"N", "512"}, {"K", "512"}}, config,
                                   limits_for_arch("sm_90a"));
    ASSERT_TRUE(prepared.ok()) << prepared.status().message();
    Status built = add_timeline_build(jit, *prepared);
    ASSERT_TRUE(built.ok()) << built.message();
    const CompiledKernel& normal = prepared->compiled;
    const CompiledKernel& probes = *prepared->timeline;
    EXPECT_NE(normal.key, probes.key);
    EXPECT_EQ(normal.lowered_name, probes.lowered_name);
    for (const char* needle : {"tl_timeline_buffer", "%globaltimer", "%clock64", "%smid"}) {
      EXPECT_NE(probes.ptx.find(needle), std::string::npos) << needle;
      EXPECT_EQ(normal.ptx.find(needle), std::string::npos) << needle;
    }
    EXPECT_EQ(probes.resources.spill_store_bytes, 0);
    EXPECT_EQ(probes.resources.spill_load_bytes, 0);
    // The capacity the spec asks for covers what the kernel marks: 512^3 is 8 k-steps per tile.
    const KernelSpec& spec = *prepared->instance.spec;
    ASSERT_TRUE(spec.probe_capacity);
    EXPECT_GE(spec.probe_capacity(prepared->instance.problem, prepared->instance.config, prepared->instance.limits), 8u * 5u);
  }
  const KernelSpec& simt = *library_registry().find("gemm.simt").value();
  EXPECT_TRUE(simt.probes.empty());
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tl
