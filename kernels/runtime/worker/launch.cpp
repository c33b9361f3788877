// Launch specs on the wire and the parent's side of launching: requests, replies, sweeps, checking outputs.
#include "runtime/worker/launch.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include <nlohmann/json.hpp>

#include "runtime/worker/client.hpp"

namespace tl {

namespace {

using nlohmann::json;

json dim3_json(const Dim3& d) { return json::array({d.x, d.y, d.z}); }

Status dim3_from(const json& j, Dim3& d, const char* what) {
  if (!j.is_array() || j.empty() || j.size() > 3)
    return make_error(ErrorCode::parse, std::string(what) + " must be an array of 1 to 3 integers");
  std::uint32_t v[3] = {1, 1, 1};
  for (std::size_t i = 0; i < j.size(); ++i) {
    if (!j[i].is_number_unsigned() || j[i].get<std::uint64_t>() == 0 || j[i].get<std::uint64_t>() > 0xFFFFFFFFu)
      return make_error(ErrorCode::parse, std::string(what) + " must hold positive integers");
    v[i] = j[i].get<std::uint32_t>();
  }
  d = {v[0], v[1], v[2]};
  return {};
}

const char* arg_kind_name(KernelArg::Kind k) {
  switch (k) {
    case KernelArg::Kind::buffer: return "buffer";
    case KernelArg::Kind::i32: return "i32";
    case KernelArg::Kind::u32: return "u32";
    case KernelArg::Kind::i64: return "i64";
    case KernelArg::Kind::u64: return "u64";
    case KernelArg::Kind::f32: return "f32";
    case KernelArg::Kind::f64: return "f64";
    case KernelArg::Kind::tensor_map: return "tensor_map";
  }
  return "?";
}

json tensor_map_json(const TensorMapSpec& t) {
  return {{"buffer", t.buffer},           {"dims", t.dims},
          {"strides_bytes", t.strides_bytes}, {"box", t.box},
          {"element_strides", t.element_strides}, {"swizzle_bytes", t.swizzle_bytes},
          {"l2_promotion_bytes", t.l2_promotion_bytes}, {"oob_fill_nan", t.oob_fill_nan}};
}

// Writes the spec into `m`'s header under "launch" (image and data fills as blobs).
json launch_json(const LaunchSpec& s, Message& m) {
  json buffers = json::array();
  for (const auto& b : s.buffers) {
    json jb = {{"name", b.name},   {"dtype", dtype_name(b.dtype)}, {"count", b.count},
               {"role", buffer_role_name(b.role)}, {"fill", b.fill}, {"max_samples", b.max_samples},
               {"sample_seed", b.sample_seed}, {"sample_unit", b.sample_unit}, {"return_all", b.return_all}};
    if (b.fill.kind == Fill::Kind::data) jb["data"] = m.add_blob(b.data);
    buffers.push_back(std::move(jb));
  }
  json args = json::array();
  for (const auto& a : s.args) {
    json ja = {{"kind", arg_kind_name(a.kind)}};
    switch (a.kind) {
      case KernelArg::Kind::buffer: ja["buffer"] = a.buffer; break;
      case KernelArg::Kind::f32:
      case KernelArg::Kind::f64: ja["value"] = a.f; break;
      case KernelArg::Kind::tensor_map: ja["tensor_map"] = tensor_map_json(a.tensor_map); break;
      default: ja["value"] = a.i; break;
    }
    args.push_back(std::move(ja));
  }
  json j = {{"label", s.label},
          {"image", m.add_blob(s.image)},
          {"kernel", s.kernel},
          {"grid", dim3_json(s.geometry.grid)},
          {"block", dim3_json(s.geometry.block)},
          {"cluster", dim3_json(s.geometry.cluster)},
          {"dynamic_smem", s.geometry.dynamic_smem},
          {"persistent", s.geometry.persistent},
          {"buffers", std::move(buffers)},
          {"args", std::move(args)},
          {"timing", {{"warmup", s.timing.warmup}, {"repeat", s.timing.repeat}, {"flush_l2", s.timing.flush_l2},
                      {"measure_dram", s.timing.measure_dram}, {"timer", timer_name(s.timing.timer)},
                      {"graph_launches", s.timing.graph_launches}}},
          {"device", s.device}};
  if (s.baseline) {
    const BaselineSpec& b = *s.baseline;
    j["baseline"] = {{"kind", b.kind}, {"layout", b.layout}, {"M", b.M}, {"N", b.N}, {"K", b.K}, {"a", b.a},
                     {"b", b.b}, {"c", b.c}, {"in", dtype_name(b.in)}, {"out", dtype_name(b.out)},
                     {"scaling", b.scaling}, {"scale_a", b.scale_a}, {"scale_b", b.scale_b},
                     {"scale_a_mn", b.scale_a_mn}, {"fast_accum", b.fast_accum}};
    if (b.kind == "cudnn_sdpa") {
      const SdpaBaseline& a = b.sdpa;
      j["baseline"]["sdpa"] = {{"batch", a.batch}, {"heads", a.heads}, {"heads_kv", a.heads_kv}, {"seq_q", a.seq_q},
                               {"seq_k", a.seq_k}, {"dim", a.dim}, {"dim_v", a.dim_v}, {"causal", a.causal},
                               {"len_q", a.len_q}, {"len_k", a.len_k}, {"start_q", a.start_q},
                               {"start_k", a.start_k}, {"backward", a.backward}, {"scale", a.scale}, {"q", a.q},
                               {"k", a.k}, {"v", a.v}, {"o", a.o}, {"d_o", a.d_o}, {"lse", a.lse}, {"dq", a.dq},
                               {"window", a.window}, {"sinks", a.sinks}};
    }
  }
  if (s.pre)
    j["pre"] = {{"grid", dim3_json(s.pre->grid)}, {"block", dim3_json(s.pre->block)},
                {"dynamic_smem", s.pre->dynamic_smem}};
  if (s.timeline) {
    const TimelineLaunch& t = *s.timeline;
    j["timeline"] = {{"image", m.add_blob(t.image)}, {"kernel", t.kernel}, {"capacity", t.capacity},
                     {"clock_hz", t.clock_hz}, {"timed", t.timed}};
  }
  return j;
}

Status launch_from_json(const json& j, const Message& m, LaunchSpec& s) {
  if (!j.is_object()) return make_error(ErrorCode::parse, "a launch must be an object");
  auto blob = [&](const json& index, const char* what) -> Result<const Blob*> {
    if (!index.is_number_integer() || index.get<std::int64_t>() < 0 ||
        index.get<std::int64_t>() >= static_cast<std::int64_t>(m.blobs.size()))
      return make_error(ErrorCode::parse, std::string("launch: bad blob index for ") + what);
    return &m.blobs[index.get<std::size_t>()];
  };
  try {
    s.label = j.value("label", std::string());
    s.kernel = j.at("kernel").get<std::string>();
    auto image = blob(j.at("image"), "the image");
    if (!image) return image.status();
    s.image = **image;
    TL_RETURN_IF_ERROR(dim3_from(j.at("grid"), s.geometry.grid, "grid"));
    TL_RETURN_IF_ERROR(dim3_from(j.at("block"), s.geometry.block, "block"));
    TL_RETURN_IF_ERROR(dim3_from(j.value("cluster", json::array({1, 1, 1})), s.geometry.cluster, "cluster"));
    s.geometry.dynamic_smem = j.value("dynamic_smem", 0u);
    s.geometry.persistent = j.value("persistent", false);
    if (j.contains("pre")) {
      const json& jp = j.at("pre");
      LaunchGeometry g;
      TL_RETURN_IF_ERROR(dim3_from(jp.at("grid"), g.grid, "pre.grid"));
      TL_RETURN_IF_ERROR(dim3_from(jp.at("block"), g.block, "pre.block"));
      g.dynamic_smem = jp.value("dynamic_smem", 0u);
      s.pre = g;
    }
    s.device = j.value("device", 0);
    for (const auto& jb : j.at("buffers")) {
      BufferSpec b;
      b.name = jb.value("name", std::string());
      auto dt = parse_dtype(jb.at("dtype").get<std::string>());
      if (!dt) return dt.status();
      b.dtype = *dt;
      b.count = jb.at("count").get<std::uint64_t>();
      std::string role = jb.value("role", std::string("input"));
      if (role == "input") b.role = BufferRole::input;
      else if (role == "output") b.role = BufferRole::output;
      else if (role == "inout") b.role = BufferRole::inout;
      else if (role == "scratch") b.role = BufferRole::scratch;
      else return make_error(ErrorCode::parse, "buffer '" + b.name + "': unknown role '" + role + "'");
      if (jb.contains("fill")) TL_RETURN_IF_ERROR(fill_from_json(jb["fill"], b.fill));
      if (b.fill.kind == Fill::Kind::data) {
        auto data = blob(jb.at("data"), "buffer data");
        if (!data) return data.status();
        b.data = **data;
        if (b.data.size() != b.bytes())
          return make_error(ErrorCode::invalid_argument, "buffer '" + b.name + "': " + std::to_string(b.data.size()) +
                                                             " bytes of data for " + std::to_string(b.bytes()));
      }
      b.max_samples = jb.value("max_samples", b.max_samples);
      b.sample_seed = jb.value("sample_seed", b.sample_seed);
      b.sample_unit = jb.value("sample_unit", b.sample_unit);
      b.return_all = jb.value("return_all", false);
      s.buffers.push_back(std::move(b));
    }
    for (const auto& ja : j.at("args")) {
      KernelArg a;
      std::string kind = ja.at("kind").get<std::string>();
      bool known = false;
      for (auto k : {KernelArg::Kind::buffer, KernelArg::Kind::i32, KernelArg::Kind::u32, KernelArg::Kind::i64,
                     KernelArg::Kind::u64, KernelArg::Kind::f32, KernelArg::Kind::f64, KernelArg::Kind::tensor_map})
        if (kind == arg_kind_name(k)) a.kind = k, known = true;
      if (!known) return make_error(ErrorCode::parse, "unknown argument kind '" + kind + "'");
      if (a.kind == KernelArg::Kind::buffer) {
        a.buffer = ja.at("buffer").get<int>();
      } else if (a.kind == KernelArg::Kind::tensor_map) {
        const json& t = ja.at("tensor_map");
        a.tensor_map.buffer = a.buffer = t.at("buffer").get<int>();
        a.tensor_map.dims = t.at("dims").get<std::vector<std::uint64_t>>();
        a.tensor_map.strides_bytes = t.value("strides_bytes", std::vector<std::uint64_t>{});
        a.tensor_map.box = t.at("box").get<std::vector<std::uint32_t>>();
        a.tensor_map.element_strides = t.value("element_strides", std::vector<std::uint32_t>{});
        a.tensor_map.swizzle_bytes = t.value("swizzle_bytes", 0);
        a.tensor_map.l2_promotion_bytes = t.value("l2_promotion_bytes", 0);
        a.tensor_map.oob_fill_nan = t.value("oob_fill_nan", false);
      } else if (a.kind == KernelArg::Kind::f32 || a.kind == KernelArg::Kind::f64) {
        a.f = ja.at("value").get<double>();
      } else {
        a.i = ja.at("value").get<std::int64_t>();
      }
      if ((a.kind == KernelArg::Kind::buffer || a.kind == KernelArg::Kind::tensor_map) &&
          (a.buffer < 0 || a.buffer >= static_cast<int>(s.buffers.size())))
        return make_error(ErrorCode::invalid_argument,
                          "argument refers to buffer " + std::to_string(a.buffer) + ", but the launch has " +
                              std::to_string(s.buffers.size()));
      s.args.push_back(std::move(a));
    }
    const json& t = j.value("timing", json::object());
    s.timing.warmup = t.value("warmup", s.timing.warmup);
    s.timing.repeat = t.value("repeat", s.timing.repeat);
    s.timing.flush_l2 = t.value("flush_l2", s.timing.flush_l2);
    s.timing.measure_dram = t.value("measure_dram", false);
    auto timer = parse_timer(t.value("timer", std::string("events")));
    if (!timer) return timer.status();
    s.timing.timer = *timer;
    s.timing.graph_launches = t.value("graph_launches", 0);
    TL_RETURN_IF_ERROR(check_timing(s.timing));
    if (j.contains("baseline")) {
      const json& jb = j["baseline"];
      BaselineSpec b;
      b.kind = jb.at("kind").get<std::string>();
      b.layout = jb.at("layout").get<std::string>();
      b.M = jb.at("M").get<int>();
      b.N = jb.at("N").get<int>();
      b.K = jb.at("K").get<int>();
      b.a = jb.at("a").get<std::string>();
      b.b = jb.at("b").get<std::string>();
      b.c = jb.at("c").get<std::string>();
      auto in = parse_dtype(jb.at("in").get<std::string>());
      if (!in) return in.status();
      auto out = parse_dtype(jb.at("out").get<std::string>());
      if (!out) return out.status();
      b.in = *in;
      b.out = *out;
      b.scaling = jb.value("scaling", b.scaling);
      b.scale_a = jb.value("scale_a", b.scale_a);
      b.scale_b = jb.value("scale_b", b.scale_b);
      b.scale_a_mn = jb.value("scale_a_mn", false);
      b.fast_accum = jb.value("fast_accum", false);
      if (jb.contains("sdpa")) {
        const json& ja = jb["sdpa"];
        SdpaBaseline& a = b.sdpa;
        for (auto [key, field] : {std::pair{"batch", &a.batch}, {"heads", &a.heads}, {"heads_kv", &a.heads_kv},
                                  {"seq_q", &a.seq_q}, {"seq_k", &a.seq_k}, {"dim", &a.dim}, {"dim_v", &a.dim_v}})
          *field = ja.at(key).get<std::int64_t>();
        a.causal = ja.at("causal").get<bool>();
        a.window = ja.value("window", std::int64_t{0});
        a.sinks = ja.value("sinks", std::string());
        for (auto [key, field] : {std::pair{"len_q", &a.len_q}, {"len_k", &a.len_k}, {"start_q", &a.start_q},
                                  {"start_k", &a.start_k}})
          *field = ja.value(key, std::vector<std::int64_t>{});
        a.backward = ja.at("backward").get<bool>();
        a.scale = ja.at("scale").get<double>();
        for (auto [key, field] : {std::pair{"q", &a.q}, {"k", &a.k}, {"v", &a.v}, {"o", &a.o}, {"d_o", &a.d_o},
                                  {"lse", &a.lse}, {"dq", &a.dq}})
          *field = ja.at(key).get<std::string>();
      }
      s.baseline = std::move(b);
    }
    if (j.contains("timeline")) {
      const json& jt = j["timeline"];
      TimelineLaunch t;
      auto image = blob(jt.at("image"), "the timeline image");
      if (!image) return image.status();
      t.image = **image;
      t.kernel = jt.at("kernel").get<std::string>();
      t.capacity = jt.at("capacity").get<std::uint32_t>();
      t.clock_hz = jt.value("clock_hz", std::uint64_t{0});
      t.timed = jt.value("timed", false);
      s.timeline = std::move(t);
    }
  } catch (const json::exception& e) {
    return make_error(ErrorCode::parse, std::string("malformed launch request: ") + e.what());
  }
  return {};
}

// Reply fields of one launch result (samples, positions and full data as blobs of `m`).
json result_json(const LaunchResult& r, Message& m) {
  json outputs = json::array();
  for (const auto& o : r.outputs) {
    Blob positions(o.positions.size() * 8);
    if (!positions.empty()) std::memcpy(positions.data(), o.positions.data(), positions.size());
    json jo = {{"name", o.name},
               {"dtype", dtype_name(o.dtype)},
               {"count", o.count},
               {"unwritten", o.unwritten.count},
               {"first_unwritten", o.unwritten.first},
               {"positions", m.add_blob(std::move(positions))},
               {"samples", m.add_blob(o.samples)}};
    if (!o.data.empty()) jo["data"] = m.add_blob(o.data);
    outputs.push_back(std::move(jo));
  }
  json j = {{"outputs", std::move(outputs)}, {"time_ms", r.time_ms},          {"times_ms", r.times_ms},
            {"attributes", r.attributes},   {"device_name", r.device_name}, {"l2_flushed", r.l2_flushed},
            {"graph_launches", r.graph_launches}};
  if (r.baseline) j["baseline"] = *r.baseline;
  if (r.timeline) {
    const TimelineCapture& t = *r.timeline;
    j["timeline"] = {{"buffer", m.add_blob(t.buffer)}, {"time_ms", t.time_ms}, {"times_ms", t.times_ms},
                     {"error", t.error}};
  }
  if (r.dram) j["dram"] = *r.dram;
  return j;
}

Status result_from_json(const json& j, const Message& m, LaunchResult& r) {
  try {
    for (const auto& jo : j.at("outputs")) {
      OutputResult o;
      o.name = jo.value("name", std::string());
      auto dt = parse_dtype(jo.at("dtype").get<std::string>());
      if (!dt) return dt.status();
      o.dtype = *dt;
      o.count = jo.at("count").get<std::uint64_t>();
      o.unwritten.count = jo.value("unwritten", std::uint64_t{0});
      o.unwritten.first = jo.value("first_unwritten", std::uint64_t{0});
      auto pick = [&](const char* key) -> const Blob* {
        if (!jo.contains(key)) return nullptr;
        auto index = jo[key].get<std::int64_t>();
        if (index < 0 || index >= static_cast<std::int64_t>(m.blobs.size())) return nullptr;
        return &m.blobs[static_cast<std::size_t>(index)];
      };
      const Blob* positions = pick("positions");
      const Blob* samples = pick("samples");
      if (!positions || !samples || positions->size() % 8 != 0 ||
          samples->size() != positions->size() / 8 * dtype_size(o.dtype))
        return make_error(ErrorCode::parse, "launch reply: output '" + o.name + "' has inconsistent samples");
      o.positions.resize(positions->size() / 8);
      if (!o.positions.empty()) std::memcpy(o.positions.data(), positions->data(), positions->size());
      o.samples = *samples;
      if (const Blob* data = pick("data")) o.data = *data;
      r.outputs.push_back(std::move(o));
    }
    r.time_ms = j.value("time_ms", Stats{});
    r.times_ms = j.value("times_ms", std::vector<double>{});
    const json& a = j.value("attributes", json::object());
    r.attributes.registers = a.value("registers", 0);
    r.attributes.static_smem = a.value("static_smem", 0);
    r.attributes.local_bytes = a.value("local_bytes", 0);
    r.attributes.const_bytes = a.value("const_bytes", 0);
    r.attributes.max_threads_per_block = a.value("max_threads_per_block", 0);
    r.attributes.binary_version = a.value("binary_version", 0);
    r.device_name = j.value("device_name", std::string());
    r.l2_flushed = j.value("l2_flushed", false);
    r.graph_launches = j.value("graph_launches", 0);
    if (j.contains("dram")) r.dram = j["dram"].get<DramTraffic>();
    if (j.contains("baseline")) {
      const json& jb = j["baseline"];
      BaselineResult b;
      b.name = jb.value("name", std::string());
      b.time_ms = jb.value("time_ms", Stats{});
      b.times_ms = jb.value("times_ms", std::vector<double>{});
      // JSON has no infinity: a non-finite difference (a NaN in either output) was written as null.
      const auto rel = jb.find("rel_vs_kernel");
      b.rel_vs_kernel = rel == jb.end()     ? 0.0
                        : rel->is_number() ? rel->get<double>()
                                           : std::numeric_limits<double>::infinity();
      b.error = jb.value("error", std::string());
      r.baseline = std::move(b);
    }
    if (j.contains("timeline")) {
      const json& jt = j["timeline"];
      TimelineCapture t;
      const auto index = jt.at("buffer").get<std::int64_t>();
      if (index < 0 || index >= static_cast<std::int64_t>(m.blobs.size()))
        return make_error(ErrorCode::parse, "launch reply: bad blob index for the timeline buffer");
      t.buffer = m.blobs[static_cast<std::size_t>(index)];
      t.time_ms = jt.value("time_ms", Stats{});
      t.times_ms = jt.value("times_ms", std::vector<double>{});
      t.error = jt.value("error", std::string());
      r.timeline = std::move(t);
    }
  } catch (const json::exception& e) {
    return make_error(ErrorCode::parse, std::string("malformed launch reply: ") + e.what());
  }
  return {};
}

}  // namespace

const char* timer_name(Timer t) {
  switch (t) {
    case Timer::events: return "events";
    case Timer::cupti: return "cupti";
    case Timer::graph: return "graph";
  }
  return "?";
}

Result<Timer> parse_timer(const std::string& name) {
  for (Timer t : {Timer::events, Timer::cupti, Timer::graph})
    if (name == timer_name(t)) return t;
  return make_error(ErrorCode::invalid_argument, "unknown timer '" + name + "' (valid: events, cupti, graph)");
}

const char* l2_flush_text(Timer t, bool flush_l2) {
  if (!flush_l2) return "never";
  return t == Timer::graph ? "before each graph replay, not between the launches inside it" : "before each timed run";
}

int graph_launches_for(double launch_ms) {
  constexpr double kReplayMs = 2.0;
  constexpr int kMost = 1000;
  if (!(launch_ms > 0)) return kMost;  // below the events' resolution
  return static_cast<int>(std::clamp(std::ceil(kReplayMs / launch_ms), 1.0, double(kMost)));
}

Status check_timing(const TimingOptions& timing) {
  if (timing.graph_launches < 0 || timing.graph_launches > kMaxGraphLaunches)
    return make_error(ErrorCode::invalid_argument, "graph_launches: " + std::to_string(timing.graph_launches) +
                                                       " is out of range (expected 1 to " +
                                                       std::to_string(kMaxGraphLaunches) + ", or 0: sized by the worker)");
  if (timing.graph_launches != 0 && timing.timer != Timer::graph)
    return make_error(ErrorCode::invalid_argument, std::string("graph_launches is set, but the timer is ") +
                                                       timer_name(timing.timer) + ": launches per graph are for the graph timer");
  return {};
}

std::size_t param_bytes(const KernelArg& a) {
  switch (a.kind) {
    case KernelArg::Kind::i32:
    case KernelArg::Kind::u32:
    case KernelArg::Kind::f32: return 4;
    case KernelArg::Kind::tensor_map: return 128;
    default: return 8;
  }
}

Status check_param_sizes(const std::string& kernel, const std::vector<KernelArg>& args,
                         const std::vector<std::size_t>& sizes) {
  for (std::size_t n = 0; n < args.size() && n < sizes.size(); ++n)
    if (sizes[n] != param_bytes(args[n]))
      return make_error(ErrorCode::invalid_argument,
                        "kernel '" + kernel + "' parameter " + std::to_string(n) + " is " + std::to_string(sizes[n]) +
                            " bytes, but the launch passes " + std::to_string(param_bytes(args[n])));
  if (sizes.size() != args.size())
    return make_error(ErrorCode::invalid_argument, "kernel '" + kernel + "' takes " + std::to_string(sizes.size()) +
                                                       " parameters, the launch passes " + std::to_string(args.size()));
  return {};
}

const char* buffer_role_name(BufferRole r) {
  switch (r) {
    case BufferRole::input: return "input";
    case BufferRole::output: return "output";
    case BufferRole::inout: return "inout";
    case BufferRole::scratch: return "scratch";
  }
  return "?";
}

void to_json(nlohmann::json& j, const LaunchGeometry& g) {
  j = {{"grid", dim3_json(g.grid)},
       {"block", dim3_json(g.block)},
       {"cluster", dim3_json(g.cluster)},
       {"dynamic_smem", g.dynamic_smem},
       {"persistent", g.persistent}};
}

void to_json(nlohmann::json& j, const KernelAttributes& a) {
  j = {{"registers", a.registers},     {"static_smem", a.static_smem},
       {"local_bytes", a.local_bytes}, {"const_bytes", a.const_bytes},
       {"max_threads_per_block", a.max_threads_per_block}, {"binary_version", a.binary_version}};
}

void to_json(nlohmann::json& j, const BaselineResult& b) {
  j = {{"name", b.name}, {"time_ms", b.time_ms}, {"times_ms", b.times_ms}, {"rel_vs_kernel", b.rel_vs_kernel}};
  if (!b.error.empty()) j["error"] = b.error;
}

Message make_launch_request(const LaunchSpec& spec) {
  Message m = make_request("launch");
  m.header["launch"] = launch_json(spec, m);
  return m;
}

Result<LaunchResult> parse_launch_reply(const Message& reply) {
  LaunchResult r;
  TL_RETURN_IF_ERROR(result_from_json(reply.header.value("result", json::object()), reply, r));
  return r;
}

Result<LaunchResult> run_launch(WorkerClient& worker, const LaunchSpec& spec, std::chrono::milliseconds timeout) {
  auto reply = worker.call(make_launch_request(spec), {}, timeout);
  if (!reply) return reply.status();
  return parse_launch_reply(*reply);
}

Status run_sweep(WorkerClient& worker, const std::vector<LaunchSpec>& specs, const SweepItemFn& on_item,
                 std::chrono::milliseconds timeout) {
  Message m = make_request("sweep");
  json items = json::array();
  for (const auto& s : specs) items.push_back(launch_json(s, m));
  m.header["items"] = std::move(items);
  auto reply = worker.call(
      std::move(m),
      [&](const Message& p) {
        auto index = p.header.value("index", std::size_t{0});
        if (!p.header.value("ok", false)) {
          on_item(index, status_from_json(p.header.value("error", json())));
          return;
        }
        LaunchResult r;
        Status s = result_from_json(p.header.value("result", json::object()), p, r);
        if (s.ok()) on_item(index, std::move(r));
        else on_item(index, s);
      },
      timeout);
  return reply.status();
}

Blob host_input(const BufferSpec& spec) {
  if (spec.fill.kind == Fill::Kind::data) return spec.data;
  return make_filled(spec.dtype, spec.count, spec.fill);
}

Comparison check_output(const OutputResult& out, const ElementReferenceFn& reference, Tolerance tol) {
  std::vector<double> ref(out.positions.size());
  for (std::size_t i = 0; i < ref.size(); ++i) ref[i] = reference(out.positions[i]);
  return compare_samples(out.samples.data(), out.dtype, ref, out.positions, tol, out.unwritten.count);
}

// The worker's handlers parse requests with the same helpers; they live in launch_gpu.cpp.
namespace detail {
Status parse_launch(const json& j, const Message& m, LaunchSpec& s) { return launch_from_json(j, m, s); }
json write_result(const LaunchResult& r, Message& m) { return result_json(r, m); }
}  // namespace detail

}  // namespace tl
