// CPU checks of bench --timer: names and refusals, graph sizing, the wire, CUPTI's run bookkeeping, finding libcupti.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

#include "library/library.hpp"
#include "runtime/measure/bench.hpp"
#include "runtime/worker/cupti_library.hpp"
#include "runtime/worker/kernel_activity.hpp"

namespace tl {
namespace detail {
Status parse_launch(const nlohmann::json& j, const Message& m, LaunchSpec& s);  // the worker's side (launch.cpp)
}  // namespace detail
namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(Timer, NamesRoundTripAndAnUnknownOneIsRefusedNamingTheValidOnes) {
  for (Timer t : {Timer::events, Timer::cupti, Timer::graph}) EXPECT_EQ(parse_timer(timer_name(t)).value(), t);
  for (const char* bad : {"nvtx", "", "Events", "graph "}) {
    auto t = parse_timer(bad);
    ASSERT_FALSE(t) << bad;
    EXPECT_EQ(t.status().code(), ErrorCode::invalid_argument);
    EXPECT_EQ(t.status().message(), "unknown timer '" + std::string(bad) + "' (valid: events, cupti, graph)");
  }
}

TEST(Timer, GraphLaunchesAreForTheGraphTimerAndInRange) {
  TimingOptions t;
  EXPECT_TRUE(check_timing(t).ok());
  t.graph_launches = 8;
  Status events = check_timing(t);
  EXPECT_EQ(events.code(), ErrorCode::invalid_argument);
  EXPECT_TRUE(contains(events.message(), "the timer is events")) << events.message();
  t.timer = Timer::graph;
  EXPECT_TRUE(check_timing(t).ok());
  for (int bad : {-1, kMaxGraphLaunches + 1}) {
    t.graph_launches = bad;
    Status s = check_timing(t);
    EXPECT_EQ(s.code(), ErrorCode::invalid_argument);
    EXPECT_TRUE(contains(s.message(), std::to_string(bad) + " is out of range")) << s.message();
  }
}

// A replay of the sized graph lasts about 2 ms; N never rises as launches get longer, and stays in 1..1000.
TEST(Timer, GraphSizingFillsAboutTwoMillisecondsWithinBounds) {
  int previous = graph_launches_for(1e-6);
  EXPECT_EQ(previous, 1000);
  for (double ms = 1e-4; ms < 100; ms *= 1.7) {
    const int n = graph_launches_for(ms);
    EXPECT_GE(n, 1);
    EXPECT_LE(n, 1000);
    EXPECT_LE(n, previous) << ms;
    if (n > 1 && n < 1000) {
      EXPECT_GE(n * ms, 2.0 - 1e-9) << ms;
      EXPECT_LT((n - 1) * ms, 2.0) << ms;
    }
    previous = n;
  }
  EXPECT_EQ(graph_launches_for(0.005), 400);  // a launch-bound kernel of 5 µs
  EXPECT_EQ(graph_launches_for(3.0), 1);
  EXPECT_EQ(graph_launches_for(0.0), 1000);  // below the events' resolution
  EXPECT_EQ(graph_launches_for(std::nan("")), 1000);
}

TEST(Timer, L2FlushTextSaysWhatTheGraphLeavesWarm) {
  EXPECT_TRUE(contains(l2_flush_text(Timer::graph, true), "not between the launches"));
  EXPECT_STREQ(l2_flush_text(Timer::events, true), l2_flush_text(Timer::cupti, true));
  EXPECT_STREQ(l2_flush_text(Timer::graph, false), "never");
}

LaunchSpec copy_launch(TimingOptions timing) {
  auto inst = instantiate(*library_registry().find("copy").value(), {{"n", "1000"}}, {}, limits_for_arch("sm_90a"));
  EXPECT_TRUE(inst.ok());
  CompiledKernel k;
  k.lowered_name = "_Z4fakev";
  k.cubin = {'\x7f', 'E', 'L', 'F'};
  return to_launch_spec(*inst, k, timing).value();
}

TEST(Timer, TravelsToTheWorkerAndItsGraphSizeBack) {
  TimingOptions timing;
  timing.timer = Timer::graph;
  timing.graph_launches = 12;
  Message req = make_launch_request(copy_launch(timing));
  EXPECT_EQ(req.header["launch"]["timing"]["timer"], "graph");
  LaunchSpec parsed;
  ASSERT_TRUE(detail::parse_launch(req.header["launch"], req, parsed).ok());
  EXPECT_EQ(parsed.timing.timer, Timer::graph);
  EXPECT_EQ(parsed.timing.graph_launches, 12);
  // An older parent's request (no timer) is timed with events.
  req.header["launch"]["timing"].erase("timer");
  req.header["launch"]["timing"].erase("graph_launches");
  ASSERT_TRUE(detail::parse_launch(req.header["launch"], req, parsed).ok());
  EXPECT_EQ(parsed.timing.timer, Timer::events);
  // A timer the worker does not know is refused, not timed some other way.
  req.header["launch"]["timing"]["timer"] = "nvtx";
  Status bad = detail::parse_launch(req.header["launch"], req, parsed);
  EXPECT_EQ(bad.code(), ErrorCode::invalid_argument);
  EXPECT_TRUE(contains(bad.message(), "unknown timer 'nvtx'")) << bad.message();

  Message reply = make_reply(0);
  reply.header["result"] = {{"outputs", nlohmann::json::array()}, {"graph_launches", 400}};
  EXPECT_EQ(parse_launch_reply(reply).value().graph_launches, 400);
}

// The record says which timer took its times (and for a graph how many launches a replay ran, and what the L2
// flush covered); a run refused before the worker keeps the timer it was asked for.
TEST(Timer, RecordSaysWhichTimerAndRefusesGraphLaunchesWithoutTheGraph) {
  RunRecord r;
  EXPECT_EQ(nlohmann::json(r)["timer"], "events");
  EXPECT_FALSE(nlohmann::json(r).contains("graph_launches"));
  r.timer = Timer::graph;
  r.graph_launches = 250;
  const nlohmann::json j = r;
  EXPECT_EQ(j["timer"], "graph");
  EXPECT_EQ(j["graph_launches"], 250);
  EXPECT_TRUE(contains(j["l2_flush"].get<std::string>(), "before each graph replay"));
  // The timed runs in launch order (a clock that drops part-way through shows as a step), only when there are some.
  EXPECT_FALSE(j.contains("times_ms"));
  r.times_ms = {3.68, 3.69, 4.06};
  EXPECT_EQ(nlohmann::json(r)["times_ms"], nlohmann::json::array({3.68, 3.69, 4.06}));

  WorkerOptions o;
  o.executable = "/nonexistent/tilelab";  // never started: the options are refused first
  WorkerClient worker(o);
  PreparedKernel k;
  k.instance = instantiate(*library_registry().find("copy").value(), {{"n", "1000"}}, {}, limits_for_arch("sm_90a")).value();
  RunOptions ro;
  ro.timing.timer = Timer::cupti;
  ro.timing.graph_launches = 5;
  RunRecord refused = run_instance(worker, k, ro);
  ASSERT_TRUE(refused.failure.has_value());
  EXPECT_EQ(refused.failure->code, ErrorCode::invalid_argument);
  EXPECT_TRUE(contains(refused.failure->message, "the timer is cupti")) << refused.failure->message;
  EXPECT_EQ(refused.timer, Timer::cupti);
}

// [SECTION] the cupti timer's bookkeeping

TEST(KernelActivity, ARunIsTheSpanOfItsOwnKernelsOnly) {
  // Run 1: one kernel (correlation 10). Run 2: two kernels (a library call launching two, 20 and 21). Correlation
  // 30 (the L2 flush, a fill) belongs to no run; 40 belongs to a run past the end.
  const std::vector<KernelSpan> kernels = {{30, 0, 5000},       {10, 10000, 13000}, {20, 20000, 21000},
                                           {21, 21500, 24000}, {40, 50000, 60000}};
  const std::vector<RunCorrelation> runs = {{10, 1}, {20, 2}, {21, 2}, {40, 3}};
  auto ms = run_times_ms(kernels, runs, 2);
  ASSERT_TRUE(ms) << ms.status().message();
  ASSERT_EQ(ms->size(), 2u);
  EXPECT_DOUBLE_EQ((*ms)[0], 0.003);
  EXPECT_DOUBLE_EQ((*ms)[1], 0.004);  // first start to last end, the gap included
}

TEST(KernelActivity, ARunWithoutKernelsOrAKernelEndingBeforeItStartsIsAnError) {
  auto missing = run_times_ms({{10, 100, 200}}, {{10, 1}}, 2);
  ASSERT_FALSE(missing);
  EXPECT_TRUE(contains(missing.status().message(), "no kernel for timed run 2 of 2")) << missing.status().message();
  auto backwards = run_times_ms({{10, 300, 200}}, {{10, 1}}, 1);
  ASSERT_FALSE(backwards);
  EXPECT_TRUE(contains(backwards.status().message(), "ends before it starts")) << backwards.status().message();
}

// [SECTION] finding libcupti

TEST(CuptiLibrary, TheEnvironmentVariableIsTheOnlyCandidateWhenSet) {
  EXPECT_EQ(cupti_library_candidates("/opt/x/libcupti.so.13"), std::vector<std::string>{"/opt/x/libcupti.so.13"});
  const auto searched = cupti_library_candidates(nullptr);
  ASSERT_GE(searched.size(), 2u);
  EXPECT_EQ(searched[searched.size() - 2], "libcupti.so.13");  // the loader's own search comes last
  EXPECT_EQ(searched.back(), "libcupti.so");
  EXPECT_EQ(cupti_library_candidates(""), searched);  // set but empty: searched
}

TEST(CuptiLibrary, AMissingOrWrongLibraryIsRefusedNamingIt) {
  CuptiLibrary missing = open_cupti_library("/nonexistent/libcupti.so.13");
  EXPECT_EQ(missing.handle, nullptr);
  EXPECT_TRUE(contains(missing.error, "cupti not found: TL_CUPTI_LIBRARY=/nonexistent/libcupti.so.13 does not load"))
      << missing.error;
  CuptiLibrary wrong = open_cupti_library("libz.so.1");  // loads, but is not CUPTI
  EXPECT_EQ(wrong.handle, nullptr);
  EXPECT_TRUE(contains(wrong.error, "libz.so.1 is not libcupti")) << wrong.error;
}

TEST(CuptiLibrary, FoundBySearchIsARealLibcupti) {
  CuptiLibrary found = open_cupti_library(nullptr);
  if (!found.handle) {
    EXPECT_TRUE(contains(found.error, "cupti not found: tried ")) << found.error;
    EXPECT_TRUE(contains(found.error, kCuptiLibraryEnv)) << found.error;
    GTEST_SKIP() << "no libcupti on this machine: " << found.error;
  }
  EXPECT_TRUE(contains(found.path, "libcupti.so")) << found.path;
}

// The timer refuses to start without libcupti, naming where to point it; no GPU is needed to get this far. (The
// process's libcupti is looked up once: ctest runs each test in a process of its own.)
TEST(CuptiLibrary, TheCuptiTimerWithoutLibcuptiSaysCuptiNotFound) {
  setenv(kCuptiLibraryEnv, "/nonexistent/libcupti.so.13", 1);
  if (cupti_library().path.find("nonexistent") == std::string::npos && cupti_library().handle)
    GTEST_SKIP() << "this process opened libcupti before the variable was set";
  auto started = KernelActivity::start();
  ASSERT_FALSE(started);
  EXPECT_EQ(started.status().code(), ErrorCode::unsupported);
  EXPECT_TRUE(contains(started.status().message(), "cupti not found: TL_CUPTI_LIBRARY=/nonexistent/libcupti.so.13"))
      << started.status().message();
  unsetenv(kCuptiLibraryEnv);
}

}  // namespace
}  // namespace tl
