// Tests of the roofline model (ceilings, ridges, bounds), run records as points, sources, exports and device profiles.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "runtime/device/device.hpp"
#include "runtime/device/device_profile.hpp"
#include "runtime/measure/bench.hpp"
#include "runtime/results/roofline.hpp"
#include "runtime/worker/dram_counters.hpp"

namespace tl {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Synthetic ceilings with round numbers, so every expected value below is arithmetic on the page.
Ceilings synthetic() {
  Ceilings c;
  c.device_name = "Synthetic GPU";
  c.hbm_bytes_per_s = 2e12;
  c.l2_bytes_per_s = 8e12;
  c.smem_bytes_per_s = 20e12;
  c.fp32_flops = 50e12;
  c.bf16_tc_flops = 500e12;
  c.fp16_tc_flops = 400e12;
  c.fp8_tc_flops = 0;  // not measured: left out
  return c;
}

Roofline model() { return *Roofline::from_ceilings(synthetic()); }

json gemm_record(double n, double ms) {
  const double flops = 2 * n * n * n, bytes = 3 * n * n * 2;
  return {{"kernel", "gemm.wgmma"}, {"family", "gemm"}, {"tensor_cores", true},
          {"config", {{"block_M", "128"}, {"block_N", "256"}}},
          {"problem", {{"M", std::to_string(int(n))}, {"N", std::to_string(int(n))}, {"dtype", "bf16"}}},
          {"input_dtype", "bf16"}, {"flops", flops}, {"min_bytes", bytes},
          {"time_ms", {{"median", ms}, {"min", ms}, {"max", ms}, {"count", 10}}}, {"failure", nullptr}};
}

json copy_record(double bytes, double ms) {
  return {{"kernel", "copy"}, {"family", "memory"}, {"config", {{"vec", "4"}}}, {"problem", {{"n", "1000"}}},
          {"input_dtype", "f32"}, {"flops", 0.0}, {"min_bytes", bytes}, {"time_ms", {{"median", ms}}}};
}

// [SECTION] the model

TEST(Roofline, CeilingsComeFromTheMeasurementsThatExist) {
  Roofline r = model();
  ASSERT_EQ(r.memory().size(), 3u);
  EXPECT_EQ(r.memory()[0].name, "hbm_copy");
  EXPECT_EQ(r.memory()[1].name, "l2_read");
  EXPECT_EQ(r.memory()[2].name, "smem_read");
  ASSERT_EQ(r.compute().size(), 3u);  // fp8 was 0
  EXPECT_EQ(r.find("fp8_tensor"), nullptr);
  EXPECT_EQ(r.find("bf16_tensor")->value, 500e12);
  EXPECT_EQ(r.top_compute().name, "bf16_tensor");
  EXPECT_EQ(r.top_memory().name, "smem_read");
  EXPECT_FALSE(Roofline::from_ceilings(Ceilings{}).ok());
}

TEST(Roofline, SustainedTensorRateIsItsOwnRoofBesideTheShortRunOne) {
  Ceilings c = synthetic();
  c.bf16_tc_sustained_flops = 450e12;
  Roofline r = *Roofline::from_ceilings(c);
  ASSERT_EQ(r.compute().size(), 4u);
  ASSERT_NE(r.find("bf16_tensor_sustained"), nullptr);
  EXPECT_EQ(r.find("bf16_tensor_sustained")->value, 450e12);
  EXPECT_EQ(r.find("bf16_tensor_sustained")->label, "bf16 tensor, sustained");
  // Efficiency keeps the short-run roof: a bench's runs are short too.
  EXPECT_EQ(compute_ceiling_for(r, true, DType::bf16), "bf16_tensor");
  EXPECT_EQ(r.top_compute().name, "bf16_tensor");
}

TEST(Roofline, RidgeIsComputeOverBandwidthForEveryPair) {
  Roofline r = model();
  auto ridges = r.ridges();
  ASSERT_EQ(ridges.size(), 9u);
  for (const auto& rp : ridges) {
    double bw = r.find(rp.memory)->value, rate = r.find(rp.compute)->value;
    EXPECT_DOUBLE_EQ(rp.intensity, rate / bw) << rp.memory << " x " << rp.compute;
    // At the ridge both roofs give the same rate.
    EXPECT_DOUBLE_EQ(r.attainable(rp.intensity, rp.compute, rp.memory), rate);
  }
  EXPECT_DOUBLE_EQ(ridges[1].intensity, 250.0);  // bf16 500 T / HBM 2 T
}

TEST(Roofline, AttainableIsTheLowerRoof) {
  Roofline r = model();
  EXPECT_DOUBLE_EQ(r.attainable(1, "fp32_fma"), 2e12);        // 1 flop/byte on HBM
  EXPECT_DOUBLE_EQ(r.attainable(10, "fp32_fma"), 20e12);
  EXPECT_DOUBLE_EQ(r.attainable(1000, "fp32_fma"), 50e12);    // past the 25 flop/byte ridge
  EXPECT_DOUBLE_EQ(r.attainable(10, "fp32_fma", "l2_read"), 50e12);
  EXPECT_EQ(r.attainable(10, "hbm_copy", "fp32_fma"), 0);     // names swapped: no roof
}

TEST(Roofline, ComputeCeilingFollowsTensorCoresAndInputType) {
  Roofline r = model();
  EXPECT_EQ(compute_ceiling_for(r, true, DType::bf16), "bf16_tensor");
  EXPECT_EQ(compute_ceiling_for(r, true, DType::f16), "fp16_tensor");
  EXPECT_EQ(compute_ceiling_for(r, true, DType::f32), "fp32_fma");
  EXPECT_EQ(compute_ceiling_for(r, true, DType::e4m3), "fp32_fma");  // no fp8 measured
  EXPECT_EQ(compute_ceiling_for(r, false, DType::bf16), "fp32_fma");
}

TEST(Roofline, BoundIsTheSlowerOfComputeAndMemoryTime) {
  Roofline r = model();
  // 4096^3 bf16 GEMM: 137 GFLOP over 100 MB, intensity ~1365 > 250: compute-bound, 0.275 ms at 500 TFLOP/s.
  const double n = 4096, flops = 2 * n * n * n, bytes = 3 * n * n * 2;
  auto g = roofline_bound(r, "bf16_tensor", flops, bytes);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->bound, "compute");
  EXPECT_EQ(g->ceiling, "bf16_tensor");
  EXPECT_DOUBLE_EQ(g->predicted_s, flops / 500e12);
  EXPECT_DOUBLE_EQ(g->intensity, flops / bytes);
  EXPECT_DOUBLE_EQ(g->attainable_flops, 500e12);
  // A copy (no flops) of 1 GB: memory-bound at 0.5 ms.
  auto c = roofline_bound(r, "fp32_fma", 0, 1e9);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->bound, "memory");
  EXPECT_EQ(c->ceiling, "hbm_copy");
  EXPECT_DOUBLE_EQ(c->predicted_s, 0.5e-3);
  // Exactly at the ridge: compute (the compute roof starts there); both times agree.
  auto at = roofline_bound(r, "fp32_fma", 25e9, 1e9);
  EXPECT_EQ(at->bound, "compute");
  EXPECT_DOUBLE_EQ(at->predicted_s, 0.5e-3);
  EXPECT_FALSE(roofline_bound(r, "fp32_fma", 1e9, 0).ok());
  EXPECT_FALSE(roofline_bound(r, "hbm_copy", 1e9, 1e9).ok());
  EXPECT_FALSE(roofline_bound(r, "fp32_fma", -1, 1e9).ok());
}

TEST(Roofline, BenchEfficiencyIsPredictedOverMeasured) {
  // RunRecord's efficiency comes from the same model: at twice the bound's time it is 50%.
  const double n = 4096, flops = 2 * n * n * n, bytes = 3 * n * n * 2;
  Efficiency e = roofline_efficiency("gemm", DType::bf16, flops, bytes, 2 * flops / 500e12, synthetic());
  EXPECT_EQ(e.ceiling, "bf16_tensor");
  EXPECT_NEAR(e.value, 0.5, 1e-12);
}

// [SECTION] points

TEST(Roofline, PointOfARecord) {
  Roofline r = model();
  // Twice the bound: 0.55 ms measured, 50% efficiency.
  const double n = 4096, flops = 2 * n * n * n;
  auto p = roofline_point(r, gemm_record(n, 2 * flops / 500e12 * 1e3));
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->kernel, "gemm.wgmma");
  EXPECT_EQ(p->ceiling, "bf16_tensor");
  EXPECT_NEAR(p->efficiency, 0.5, 1e-12);
  EXPECT_NEAR(p->flops_per_s, 250e12, 1e3);
  EXPECT_NEAR(p->predicted_ms * 2, p->measured_ms, 1e-12);
  EXPECT_EQ(p->config_text(), "block_M=128,block_N=256");
  EXPECT_NE(p->label().find("gemm.wgmma block_M=128,block_N=256"), std::string::npos);
  EXPECT_FALSE(p->dram_bytes.has_value());
  EXPECT_EQ(p->actual_intensity(), 0);
}

TEST(Roofline, InputTypeFallsBackToTheProblemThenTheRecordedCeiling) {
  Roofline r = model();
  json rec = gemm_record(1024, 1);
  rec.erase("input_dtype");
  EXPECT_EQ(roofline_point(r, rec)->ceiling, "bf16_tensor");  // problem dtype=bf16
  rec["problem"].erase("dtype");
  rec["efficiency"] = {{"ceiling", "fp16_tensor"}};
  EXPECT_EQ(roofline_point(r, rec)->ceiling, "fp16_tensor");
  rec.erase("efficiency");
  EXPECT_EQ(roofline_point(r, rec)->ceiling, "fp32_fma");
  // A record from before "tensor_cores" was recorded: the ceiling it was measured against, else FP32.
  json old = gemm_record(1024, 1);
  old.erase("tensor_cores");
  EXPECT_EQ(roofline_point(r, old)->ceiling, "fp32_fma");
  old["efficiency"] = {{"ceiling", "bf16_tensor"}};
  EXPECT_EQ(roofline_point(r, old)->ceiling, "bf16_tensor");
}

TEST(Roofline, MeasuredDramGivesTheActualIntensity) {
  Roofline r = model();
  json rec = gemm_record(1024, 1);
  rec["dram"] = {{"measured", true}, {"read_bytes", 3e7}, {"write_bytes", 1e7}, {"source", "cupti"}};
  auto p = roofline_point(r, rec);
  ASSERT_TRUE(p.ok());
  ASSERT_TRUE(p->dram_bytes.has_value());
  EXPECT_DOUBLE_EQ(*p->dram_bytes, 4e7);
  EXPECT_DOUBLE_EQ(p->actual_intensity(), p->flops / 4e7);
  rec["dram"] = {{"measured", false}, {"reason", "CUPTI not found"}};
  p = roofline_point(r, rec);
  EXPECT_FALSE(p->dram_bytes.has_value());
  EXPECT_EQ(p->dram_note, "CUPTI not found");
}

TEST(Roofline, DramTrafficInTheRecordReachesThePoint) {
  Roofline r = model();
  json rec = gemm_record(1024, 1);
  rec["dram"] = DramTraffic{true, 3e7, 1e7, ""};
  EXPECT_EQ(rec["dram"]["source"], "cupti");
  auto p = roofline_point(r, rec);
  ASSERT_TRUE(p.ok());
  EXPECT_DOUBLE_EQ(p->dram_bytes.value_or(0), 4e7);
  rec["dram"] = DramTraffic{false, 0, 0, "CUPTI: counters restricted"};
  EXPECT_EQ(roofline_point(r, rec)->dram_note, "CUPTI: counters restricted");
  EXPECT_EQ(rec["dram"].get<DramTraffic>().reason, "CUPTI: counters restricted");
}

TEST(Roofline, DramCountersWithoutAGpuSayWhy) {
  if (query_device(0).ok()) GTEST_SKIP() << "a GPU is present: test_roofline_gpu measures for real";
  bool launched = false;
  DramTraffic d = measure_dram_traffic([&] {
    launched = true;
    return Status::success();
  });
  EXPECT_FALSE(d.measured);
  EXPECT_FALSE(launched);  // nothing to profile on: the launch is never attempted
  EXPECT_NE(d.reason.find("CUPTI"), std::string::npos) << d.reason;
}

TEST(Roofline, FailedAndUntimedRunsAreSkippedWithTheReason) {
  Roofline r = model();
  json failed = {{"kernel", "gemm.simt"}, {"config", {{"threads", "16"}}},
                 {"failure", {{"code", "unsupported"}, {"message", "16 threads is not a multiple of 32"}}}};
  json untimed = gemm_record(64, 0);
  auto set = roofline_points(r, {gemm_record(1024, 1), failed, untimed, copy_record(1e9, 1)});
  ASSERT_EQ(set.points.size(), 2u);
  ASSERT_EQ(set.skipped.size(), 2u);
  EXPECT_NE(set.skipped[0].find("gemm.simt threads=16: failed: unsupported: 16 threads"), std::string::npos);
  EXPECT_NE(set.skipped[1].find("never timed"), std::string::npos);
  // A kernel filter keeps only those kernels.
  auto only = roofline_points(r, {gemm_record(1024, 1), copy_record(1e9, 1)}, {"copy"});
  ASSERT_EQ(only.points.size(), 1u);
  EXPECT_EQ(only.points[0].kernel, "copy");
  EXPECT_EQ(only.points[0].bound, "memory");
  EXPECT_DOUBLE_EQ(only.points[0].efficiency, 0.5);  // 1 GB at 2 TB/s is 0.5 ms, measured 1 ms
}

// [SECTION] sources

class RooflineFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    m_dir = fs::temp_directory_path() / ("tl_roofline_" + std::to_string(::getpid()) + "_" +
                                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(m_dir);
  }
  void TearDown() override { fs::remove_all(m_dir); }
  std::string write(const std::string& name, const std::string& text) const {
    std::string p = (m_dir / name).string();
    std::ofstream(p) << text;
    return p;
  }
  fs::path m_dir;
};

TEST_F(RooflineFiles, RecordsFromAnObjectAnArrayOrJsonLines) {
  auto one = load_run_records(write("one.json", gemm_record(256, 1).dump(2)));
  ASSERT_TRUE(one.ok()) << one.status().message();
  EXPECT_EQ(one->size(), 1u);
  json arr = json::array({gemm_record(256, 1), copy_record(1e6, 1), gemm_record(512, 1)});
  auto many = load_run_records(write("arr.json", arr.dump()));
  ASSERT_TRUE(many.ok());
  EXPECT_EQ(many->size(), 3u);
  auto lines = load_run_records(
      write("runs.jsonl", gemm_record(256, 1).dump() + "\n\n" + copy_record(1e6, 1).dump() + "\n"));
  ASSERT_TRUE(lines.ok()) << lines.status().message();
  ASSERT_EQ(lines->size(), 2u);
  EXPECT_EQ((*lines)[1]["kernel"], "copy");
}

TEST_F(RooflineFiles, MalformedRecordsNameTheFileAndTheProblem) {
  auto message = [&](const std::string& name, const std::string& text) {
    auto r = load_run_records(write(name, text));
    EXPECT_FALSE(r.ok()) << name;
    return r.ok() ? std::string() : r.status().message();
  };
  EXPECT_NE(message("empty.json", "  \n").find("empty.json: no run records"), std::string::npos);
  std::string bad = message("bad.json", "{\"kernel\": \"x\",\n \"flops\": }");
  EXPECT_NE(bad.find("bad.json: not JSON"), std::string::npos) << bad;
  EXPECT_NE(bad.find("line 2"), std::string::npos) << bad;
  EXPECT_NE(message("num.json", "42").find("num.json: holds a number"), std::string::npos);
  std::string elem = message("arr.json", json::array({gemm_record(8, 1), "oops"}).dump());
  EXPECT_NE(elem.find("arr.json: record 1"), std::string::npos) << elem;
  json no_kernel = gemm_record(8, 1);
  no_kernel.erase("kernel");
  EXPECT_NE(message("nok.json", no_kernel.dump()).find("no \"kernel\""), std::string::npos);
  json str_flops = gemm_record(8, 1);
  str_flops["flops"] = "many";
  std::string sf = message("sf.json", str_flops.dump());
  EXPECT_NE(sf.find("\"flops\" is string, expected a number"), std::string::npos) << sf;
  json no_median = gemm_record(8, 1);
  no_median["time_ms"].erase("median");
  EXPECT_NE(message("nm.json", no_median.dump()).find("time_ms: no \"median\""), std::string::npos);
  std::string jl = message("runs.jsonl", gemm_record(8, 1).dump() + "\n" + gemm_record(8, 1).dump() + "\n{oops\n");
  EXPECT_NE(jl.find("runs.jsonl:3: not JSON"), std::string::npos) << jl;
  auto missing = load_run_records((m_dir / "nothere.json").string());
  EXPECT_EQ(missing.status().code(), ErrorCode::not_found);
  EXPECT_NE(missing.status().message().find("nothere.json"), std::string::npos);
}

// [SECTION] export round trips

std::vector<RooflinePoint> sample_points() {
  Roofline r = model();
  json odd = gemm_record(1000, 1.0 / 3.0);
  odd["kernel"] = "user \"quoted\" kernel";  // quotes and the config's commas exercise CSV quoting
  odd["dram"] = {{"measured", true}, {"read_bytes", 12345678.9}, {"write_bytes", 0.1}};
  auto set = roofline_points(r, {gemm_record(4096, 0.7), copy_record(3e9, 1.7), odd});
  EXPECT_EQ(set.points.size(), 3u);
  return set.points;
}

void expect_same(const RooflinePoint& a, const RooflinePoint& b) {
  EXPECT_EQ(a.kernel, b.kernel);
  EXPECT_EQ(a.family, b.family);
  EXPECT_EQ(a.config, b.config);
  EXPECT_EQ(a.problem, b.problem);
  EXPECT_EQ(a.device, b.device);
  EXPECT_EQ(a.input_dtype, b.input_dtype);
  EXPECT_EQ(a.bound, b.bound);
  EXPECT_EQ(a.ceiling, b.ceiling);
  // Exact: both formats write the shortest text that reads back to the same double.
  EXPECT_EQ(a.intensity, b.intensity);
  EXPECT_EQ(a.flops_per_s, b.flops_per_s);
  EXPECT_EQ(a.ceiling_value, b.ceiling_value);
  EXPECT_EQ(a.efficiency, b.efficiency);
  EXPECT_EQ(a.predicted_ms, b.predicted_ms);
  EXPECT_EQ(a.measured_ms, b.measured_ms);
  EXPECT_EQ(a.flops, b.flops);
  EXPECT_EQ(a.min_bytes, b.min_bytes);
  EXPECT_EQ(a.dram_bytes, b.dram_bytes);
  EXPECT_DOUBLE_EQ(a.attainable_flops, b.attainable_flops);
}

TEST(RooflineExport, JsonRoundTrip) {
  auto points = sample_points();
  json doc = roofline_to_json(model(), points);
  EXPECT_EQ(doc["ceilings"].size(), 6u);
  EXPECT_EQ(doc["ridges"].size(), 9u);
  auto back = points_from_json(json::parse(doc.dump()));
  ASSERT_TRUE(back.ok()) << back.status().message();
  ASSERT_EQ(back->size(), points.size());
  for (size_t i = 0; i < points.size(); ++i) expect_same(points[i], (*back)[i]);
  doc["points"][1]["efficiency"] = "high";
  auto bad = points_from_json(doc);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("point 1: \"efficiency\" is string"), std::string::npos);
  EXPECT_FALSE(points_from_json(json{{"points", json::array()}}).ok());  // no format tag
}

TEST(RooflineExport, CsvRoundTrip) {
  auto points = sample_points();
  std::string csv = points_to_csv(points);
  EXPECT_EQ(csv.rfind("kernel,family,config,problem,", 0), 0u);
  EXPECT_NE(csv.find("\"user \"\"quoted\"\" kernel\""), std::string::npos);
  auto back = points_from_csv(csv);
  ASSERT_TRUE(back.ok()) << back.status().message();
  ASSERT_EQ(back->size(), points.size());
  for (size_t i = 0; i < points.size(); ++i) expect_same(points[i], (*back)[i]);
}

TEST(RooflineExport, MalformedCsvIsRejected) {
  std::string csv = points_to_csv(sample_points());
  std::string header = csv.substr(0, csv.find('\n') + 1);
  auto msg = [](const std::string& text) {
    auto r = points_from_csv(text);
    EXPECT_FALSE(r.ok());
    return r.ok() ? std::string() : r.status().message();
  };
  EXPECT_NE(msg("").find("no header"), std::string::npos);
  EXPECT_NE(msg("kernel,config\nx,y\n").find("no column 'family'"), std::string::npos);
  EXPECT_NE(msg(header + "a,b,c\n").find("row 2: 3 fields"), std::string::npos);
  // The copy point's row (the second) has no quoted fields, so its commas are all separators.
  size_t second = csv.find('\n', header.size()) + 1;
  std::string bad_number = csv.substr(second, csv.find('\n', second) - second + 1);
  size_t pos = 0;
  for (int i = 0; i < 6; ++i) pos = bad_number.find(',', pos) + 1;  // the intensity column (7th; no quotes before it)
  bad_number.insert(pos, "x");
  EXPECT_NE(msg(header + bad_number).find("row 2, column intensity: 'x"), std::string::npos) << msg(header + bad_number);
  EXPECT_NE(msg(header + "\"open").find("never ends"), std::string::npos);
}

// [SECTION] device profiles

DeviceInfo h100ish() {
  DeviceInfo d;
  d.name = "Synthetic GPU";
  d.cc_major = 9;
  d.sm_count = 132;
  d.pci_bus_id = "0000:00:01.0";
  return d;
}

TEST_F(RooflineFiles, ProfileRoundTrip) {
  std::string path = (m_dir / "sub" / "profile.json").string();
  Ceilings c = synthetic();
  c.bf16_tc_sustained_flops = 450e12;
  c.tc_clock_mhz = 1755;
  c.tc_sustained_clock_mhz = 1590;
  ASSERT_TRUE(save_device_profile(path, h100ish(), ToolkitInfo{}, c).ok());
  auto p = load_device_profile(path);
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->device_name(), "Synthetic GPU");
  EXPECT_EQ(p->device["sm_count"], 132);
  EXPECT_EQ(p->ceilings.bf16_tc_flops, 500e12);
  EXPECT_EQ(p->ceilings.hbm_bytes_per_s, 2e12);
  EXPECT_EQ(p->ceilings.bf16_tc_sustained_flops, 450e12);
  EXPECT_EQ(p->ceilings.tc_clock_mhz, 1755);
  EXPECT_EQ(p->ceilings.tc_sustained_clock_mhz, 1590);
  EXPECT_FALSE(p->saved_at.empty());
  // The per-device ceilings cache reads as a profile too.
  auto bare = load_device_profile(write("ceilings.json", json(synthetic()).dump()));
  ASSERT_TRUE(bare.ok()) << bare.status().message();
  EXPECT_EQ(bare->ceilings.l2_bytes_per_s, 8e12);
  EXPECT_TRUE(bare->device.empty());
}

TEST_F(RooflineFiles, MalformedProfilesNameTheFileAndTheField) {
  auto msg = [&](const std::string& name, const json& j) {
    auto r = load_device_profile(write(name, j.dump()));
    EXPECT_FALSE(r.ok()) << name;
    return r.ok() ? std::string() : r.status().message();
  };
  json good = device_profile_json(h100ish(), ToolkitInfo{}, synthetic());
  auto with = [&](auto edit) {
    json j = good;
    edit(j);
    return j;
  };
  EXPECT_NE(msg("fmt.json", with([](json& j) { j["format"] = "other"; })).find("fmt.json: \"format\" is \"other\""),
            std::string::npos);
  EXPECT_NE(msg("ver.json", with([](json& j) { j["version"] = 99; })).find("newer"), std::string::npos);
  EXPECT_NE(msg("noc.json", with([](json& j) { j.erase("ceilings"); })).find("no \"ceilings\""), std::string::npos);
  EXPECT_NE(msg("neg.json", with([](json& j) { j["ceilings"]["hbm_bytes_per_s"] = -1; }))
                .find("ceilings: \"hbm_bytes_per_s\" is -1"),
            std::string::npos);
  EXPECT_NE(msg("str.json", with([](json& j) { j["ceilings"]["fp32_flops"] = "fast"; }))
                .find("\"fp32_flops\" is string, expected a number"),
            std::string::npos);
  EXPECT_NE(msg("zero.json", with([](json& j) { j["ceilings"]["fp32_flops"] = 0; })).find("no \"fp32_flops\""),
            std::string::npos);
  EXPECT_NE(msg("arr.json", json::array()).find("arr.json: holds a array"), std::string::npos);
  EXPECT_NE(msg("what.json", json{{"hello", 1}}).find("neither a device profile"), std::string::npos);
  auto broken = load_device_profile(write("broken.json", "{\"format\": \n\n ]"));
  ASSERT_FALSE(broken.ok());
  EXPECT_NE(broken.status().message().find("broken.json: not JSON: line 3"), std::string::npos)
      << broken.status().message();
  EXPECT_EQ(load_device_profile((m_dir / "none.json").string()).status().code(), ErrorCode::not_found);
}

TEST_F(RooflineFiles, ImplausibleCeilingsAreRefusedWithTheFieldAndTheRange) {
  json good = device_profile_json(h100ish(), ToolkitInfo{}, synthetic());
  auto msg = [&](const std::string& field, double value) {
    json j = good;
    j["ceilings"][field] = value;
    auto r = load_device_profile(write(field + ".json", j.dump()));
    EXPECT_FALSE(r.ok()) << field << " = " << value;
    return r.ok() ? std::string() : r.status().message();
  };
  EXPECT_NE(msg("fp32_flops", 1e308).find("fp32_flops.json: ceilings: \"fp32_flops\" is 1e+308, expected 0 (not "
                                          "measured) or 1e+09 to 1e+18 FLOP/s"),
            std::string::npos);
  EXPECT_NE(msg("hbm_bytes_per_s", 1e-308).find("\"hbm_bytes_per_s\" is 1e-308, expected 0 (not measured) or 1e+09 "
                                               "to 1e+16 bytes/s"),
            std::string::npos);
  EXPECT_NE(msg("tc_clock_mhz", 5e6).find("\"tc_clock_mhz\" is 5000000.0"), std::string::npos);
  // The timeline model reads the benchmarks' rates from the details.
  json j = good;
  j["ceilings"]["details"]["wgmma_bf16"] = {{"rate", -3.0}};
  auto r = load_device_profile(write("details.json", j.dump()));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("\"details.wgmma_bf16.rate\" is -3.0"), std::string::npos) << r.status().message();
  // Unmeasured (0) stays fine; the cache file is checked the same way.
  json zero = json(synthetic());
  zero["fp8_tc_flops"] = 0;
  EXPECT_TRUE(load_ceilings(write("zero.json", zero.dump())).ok());
  zero["l2_bytes_per_s"] = 1e300;
  auto cached = load_ceilings(write("cache.json", zero.dump()));
  ASSERT_FALSE(cached.ok());
  EXPECT_NE(cached.status().message().find("cache.json: \"l2_bytes_per_s\" is 1e+300"), std::string::npos)
      << cached.status().message();
}

TEST_F(RooflineFiles, NumbersOutOfRangeNameTheRecordAndTheField) {
  // 1e400 does not fit a double: the parser refuses it, and the message says where it stood.
  const std::string rec = gemm_record(8, 1).dump();
  const std::string big = R"({"kernel": "gemm.wgmma", "flops": 1e400, "min_bytes": 1, "time_ms": {"median": 1}})";
  auto arr = load_run_records(write("arr.json", "[" + rec + ",\n" + rec + ",\n" + big + "]"));
  ASSERT_FALSE(arr.ok());
  EXPECT_NE(arr.status().message().find("arr.json: record 2, field \"flops\": a number outside the range of a double"),
            std::string::npos)
      << arr.status().message();
  auto lines = load_run_records(write("runs.jsonl", rec + "\n" + rec + "\n" + big + "\n"));
  ASSERT_FALSE(lines.ok());
  EXPECT_NE(lines.status().message().find("runs.jsonl:3: field \"flops\": a number outside"), std::string::npos)
      << lines.status().message();
  auto nested = load_run_records(write("t.json", R"({"kernel": "k", "time_ms": {"median": -1e999}})"));
  ASSERT_FALSE(nested.ok());
  EXPECT_NE(nested.status().message().find("t.json: field \"time_ms.median\": a number outside"), std::string::npos)
      << nested.status().message();
  // A document nested past kMaxJsonDepth is refused before anything walks it recursively.
  auto deep = load_run_records(write("deep.json", std::string(100000, '[')));
  ASSERT_FALSE(deep.ok());
  EXPECT_NE(deep.status().message().find("deep.json: arrays and objects nested deeper than 64 levels"),
            std::string::npos)
      << deep.status().message();
}

}  // namespace
}  // namespace tl
