// tilelab's kernels: the list and schemas, config/problem values, can_implement, compile, layouts, run/bench
// (through the worker, as `tilelab bench`), model timelines, the device and the host.
#include <nanobind/stl/map.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>

#include "library/library.hpp"
#include "py_common.hpp"
#include "runtime/device/device.hpp"
#include "runtime/measure/bench.hpp"
#include "session/sweep.hpp"

namespace tl::py {

namespace {

using nb::literals::operator""_a;

nb::dict resources(const CompiledKernel& c, const LaunchGeometry& launch) {
  nb::dict d;
  const auto dynamic = static_cast<long long>(launch.dynamic_smem);
  d["registers"] = c.resources.registers;
  d["smem_static"] = c.resources.shared_static_bytes;
  d["smem_dynamic"] = dynamic;
  d["smem"] = std::max(0, c.resources.shared_static_bytes) + dynamic;
  d["spills"] = std::max(0, c.resources.spill_store_bytes) + std::max(0, c.resources.spill_load_bytes);
  d["spill_store"] = c.resources.spill_store_bytes;
  d["spill_load"] = c.resources.spill_load_bytes;
  d["stack"] = c.resources.stack_frame_bytes;
  d["name_expression"] = c.name_expression;
  d["lowered_name"] = c.lowered_name;
  d["arch"] = c.arch;
  d["cached"] = c.from_cache;
  d["compile_ms"] = c.compile_ms;
  return d;
}

nb::dict values(const std::string& kernel, const std::string& which, nb::handle given) {
  const KernelSpec& spec = find_kernel(kernel);
  const Schema& schema = which == "config" ? spec.config : spec.problem;
  const Values v = take(schema.resolve(param_map(given, which), spec.name + " " + which));
  return typed_values(schema, v);
}

nb::tuple can_implement(const std::string& kernel, nb::handle problem, nb::handle config) {
  auto inst = session().instantiate(kernel, param_map(problem, "problem"), param_map(config, "config"));
  if (inst) return nb::make_tuple(true, nb::none());
  if (inst.status().code() == ErrorCode::not_found) raise(inst.status());
  return nb::make_tuple(false, inst.status().message());
}

// compile(kernel, config, problem, timeline) -> resources, name expression, PTX and log; no GPU needed.
nb::dict compile(const std::string& kernel, nb::handle config, nb::handle problem, bool timeline) {
  Session& s = session();
  PreparedKernel prepared = take(s.prepare(kernel, param_map(problem, "problem"), param_map(config, "config")));
  if (timeline) {
    Status st = add_timeline_build(s.jit(), prepared);
    if (!st) raise(st);
  }
  const CompiledKernel& c = timeline ? *prepared.timeline : prepared.compiled;
  nb::dict d = resources(c, prepared.instance.launch);
  d["ptx"] = c.ptx;
  d["log"] = c.log;
  d["timeline"] = timeline;
  return d;
}

nb::list layouts(const std::string& kernel, nb::handle problem, nb::handle config) {
  const KernelSpec& spec = find_kernel(kernel);
  const Values p = take(spec.problem.resolve(param_map(problem, "problem"), spec.name + " problem"));
  const Values c = take(spec.config.resolve(param_map(config, "config"), spec.name + " config"));
  nb::list l;
  if (!spec.layouts) return l;
  for (const LayoutInfo& info : spec.layouts(p, c)) {
    nb::dict d;
    d["name"] = info.name;
    d["spec"] = info.spec;
    l.append(d);
  }
  return l;
}

nb::object wrap_timeline(Timeline t) { return nb::cast(PyTimeline{std::make_shared<const Timeline>(std::move(t))}); }

// The run's result as Lua's k:run gives it: headline numbers flat, resources and baseline nested, the whole
// RunRecord (`bench --json`'s object) as "record"; the timeline as a tilelab.Timeline.
nb::dict run_result(const Session::Bench& b) {
  const RunRecord& r = b.record;
  const KernelInstance& inst = b.prepared.instance;
  nb::dict d;
  d["kernel"] = r.kernel;
  d["device"] = r.device;
  d["problem"] = typed_values(inst.spec->problem, inst.problem);
  d["config"] = typed_values(inst.spec->config, inst.config);
  d["median_ms"] = r.time_ms.median;
  d["min_ms"] = r.time_ms.min;
  d["max_ms"] = r.time_ms.max;
  d["repeats"] = r.time_ms.count;
  d["timer"] = timer_name(r.timer);
  if (r.timer == Timer::graph) d["graph_launches"] = r.graph_launches;
  d["tflops"] = r.tflops;
  d["gbps"] = r.gbps;
  d["flops"] = r.flops;
  d["min_bytes"] = r.min_bytes;
  if (!r.efficiency.bound.empty()) {
    d["efficiency"] = r.efficiency.value;
    d["bound"] = r.efficiency.bound;
    d["ceiling"] = r.efficiency.ceiling;
  }
  d["rel_err"] = r.rel_error();
  d["max_abs_err"] = r.max_abs_error();
  d["verified"] = r.verified;
  d["passed"] = r.passed();
  if (!r.passed()) d["failure"] = r.failure_text();
  d["resources"] = resources(b.prepared.compiled, r.launch);
  const nlohmann::json record = r;
  if (r.baseline) {
    nb::dict baseline = nb::borrow<nb::dict>(to_python(record["baseline"]));
    if (r.baseline->error.empty()) {
      baseline["median_ms"] = r.baseline->time_ms.median;
      baseline["min_ms"] = r.baseline->time_ms.min;
      baseline["max_ms"] = r.baseline->time_ms.max;
    }
    d["baseline"] = baseline;
  }
  if (r.timeline) d["timeline"] = wrap_timeline(*r.timeline);
  else if (!r.timeline_error.empty()) d["timeline_error"] = r.timeline_error;
  d["record"] = to_python(record);
  return d;
}

// run(kernel, problem, config, ...) -> the run result; raises what keeps it from running (invalid config, no GPU,
// compile error) and a fault or timeout; a failed check is a result with passed=False. `store` records it in the
// results store as `tilelab bench` does.
nb::dict run(const std::string& kernel, nb::handle problem, nb::handle config, int rep, int warmup, bool verify,
             bool timeline, const std::string& baseline, bool store, const std::string& timer, int graph_launches) {
  if (rep < 0 || warmup < 0) raise(ErrorCode::invalid_argument, "run: rep and warmup must be >= 0");
  RunOptions ro;
  ro.timing.repeat = rep;
  ro.timing.warmup = warmup;
  set_timing(ro.timing, timer, graph_launches, "run");
  if (!verify) ro.max_samples = 1;  // a smoke check of one sampled position, as Lua's verify=false
  ro.timeline = ro.timeline_timed = timeline;
  ro.vs = baseline;
  Session& s = session();
  ResultsStore* results = store ? &results_store() : nullptr;  // opened first: a store that cannot record says so
  Session::Bench b = take(s.bench(kernel, param_map(problem, "problem"), param_map(config, "config"), ro));
  const RunRecord& r = b.record;
  if (r.failure && r.failure->code != ErrorCode::ok) {
    const char* what = r.failure->code == ErrorCode::fault     ? "the kernel faulted"
                       : r.failure->code == ErrorCode::timeout ? "the kernel timed out"
                                                               : "the run failed";
    raise(r.failure->code, std::string(what) + ": " + r.failure->message);
  }
  nb::dict d = run_result(b);
  if (results) d["stored_id"] = take(results->insert(r, session_run_context(s, b.prepared.instance)));
  return d;
}

nb::object model_timeline(const std::string& kernel, nb::handle problem, nb::handle config) {
  Session& s = session();
  KernelInstance inst = take(s.instantiate(kernel, param_map(problem, "problem"), param_map(config, "config")));
  const RunTarget& t = s.target();
  return wrap_timeline(take(tl::model_timeline(
      inst, model_device(t.ceilings ? &*t.ceilings : nullptr, t.device ? &*t.device : nullptr))));
}

// device(measure) -> the GPU's description and ceilings (measured once in the worker when not cached and `measure`).
nb::dict device(bool measure) {
  Session& s = session();
  const RunTarget& t = s.target();
  if (!t.device) raise(ErrorCode::no_device, "no GPU: " + t.why_no_device);
  const DeviceInfo& dev = *t.device;
  nb::dict d = nb::borrow<nb::dict>(to_python(nlohmann::json(dev)));
  d["arch"] = t.limits.arch;
  d["sms"] = dev.sm_count;
  d["memory"] = dev.memory_bytes;
  d["sm_clock_mhz"] = dev.clock_khz / 1000.0;
  d["memory_clock_mhz"] = dev.memory_clock_khz / 1000.0;
  d["theoretical_dram_gbps"] = dev.theoretical_dram_bytes_per_s() * 1e-9;
  if (t.ceilings || measure) {
    auto c = s.ceilings();
    d["ceilings"] = c ? to_python(nlohmann::json(*c)) : nb::none();
    if (!c) d["why_no_ceilings"] = c.status().message();
  } else {
    d["ceilings"] = nb::none();
    d["why_no_ceilings"] = "not measured yet (tilelab.device(measure=True) or `tilelab info --measure`)";
  }
  return d;
}

nb::list kernels(bool all) {
  nb::list l;
  for (const KernelSpec* spec : library_registry().list(all)) l.append(to_python(nlohmann::json(*spec)));
  return l;
}

}  // namespace

void bind_kernels(nb::module_& m) {
  m.def("kernels", &kernels, "all"_a = false);
  m.def("schema", [](const std::string& name) { return to_python(nlohmann::json(find_kernel(name))); }, "name"_a);
  m.def("values", &values, "kernel"_a, "which"_a, "given"_a.none());
  m.def("can_implement", &can_implement, "kernel"_a, "problem"_a.none(), "config"_a.none());
  m.def("compile", &compile, "kernel"_a, "config"_a.none(), "problem"_a.none(), "timeline"_a = false);
  m.def("layouts", &layouts, "kernel"_a, "problem"_a.none(), "config"_a.none());
  m.def("run", &run, "kernel"_a, "problem"_a.none(), "config"_a.none(), "rep"_a, "warmup"_a, "verify"_a,
        "timeline"_a, "baseline"_a, "store"_a, "timer"_a = "events", "graph_launches"_a = 0);
  m.def("model_timeline", &model_timeline, "kernel"_a, "problem"_a.none(), "config"_a.none());
  m.def("device", &device, "measure"_a = true);
  m.def("info", [] { return to_python(nlohmann::json(query_system())); });
}

}  // namespace tl::py
