// `tl.kernels`, `tl.kernel(name)` (schema, config, can_implement, compile, run) and `tl.device`, over the Session.
#include "scripting/lua_kernels.hpp"

#include <algorithm>
#include <cmath>
#include <string>

extern "C" {
#include <lauxlib.h>
#include <lua.h>
}

#include <nlohmann/json.hpp>

#include "scripting/lua_binding.hpp"
#include "scripting/lua_context.hpp"
#include "scripting/lua_json.hpp"
#include "scripting/lua_timeline.hpp"
#include "scripting/lua_userdata.hpp"

namespace tl::lua {

namespace {

constexpr const char* k_kernel_type = "tilelab.kernel";

// By name, not by spec pointer: a script may redefine its own kernel (tl.define_kernel), replacing the spec.
struct KernelRef {
  std::string name;
};

const KernelSpec& check_kernel(lua_State* L, int index) {
  const std::string& name = check_object<KernelRef>(L, index, k_kernel_type).name;
  auto spec = script_context(L).session().registry().find(name);
  if (!spec) raise("kernel '%s' is no longer defined", name.c_str());
  return **spec;
}

// Pushes nil, message and returns 2: the failure convention of calls whose failure a script should handle.
int fail(lua_State* L, const std::string& message) {
  lua_pushnil(L);
  lua_pushstring(L, message.c_str());
  return 2;
}

void set_number(lua_State* L, const char* key, double v) {
  lua_pushnumber(L, v);
  lua_setfield(L, -2, key);
}
void set_integer(lua_State* L, const char* key, lua_Integer v) {
  lua_pushinteger(L, v);
  lua_setfield(L, -2, key);
}
void set_string(lua_State* L, const char* key, const std::string& v) {
  lua_pushstring(L, v.c_str());
  lua_setfield(L, -2, key);
}

// What a compile produced: ptxas resources, the entry's name expression, whether it came from the cache.
void push_resources(lua_State* L, const CompiledKernel& c, const LaunchGeometry& launch) {
  lua_createtable(L, 0, 12);
  set_integer(L, "registers", c.resources.registers);
  set_integer(L, "smem_static", c.resources.shared_static_bytes);
  set_integer(L, "smem_dynamic", static_cast<lua_Integer>(launch.dynamic_smem));
  set_integer(L, "smem", std::max(0, c.resources.shared_static_bytes) + static_cast<lua_Integer>(launch.dynamic_smem));
  set_integer(L, "spills", std::max(0, c.resources.spill_store_bytes) + std::max(0, c.resources.spill_load_bytes));
  set_integer(L, "spill_store", c.resources.spill_store_bytes);
  set_integer(L, "spill_load", c.resources.spill_load_bytes);
  set_integer(L, "stack", c.resources.stack_frame_bytes);
  set_string(L, "name_expression", c.name_expression);
  set_string(L, "lowered_name", c.lowered_name);
  set_string(L, "arch", c.arch);
  lua_pushboolean(L, c.from_cache);
  lua_setfield(L, -2, "cached");
  set_number(L, "compile_ms", c.compile_ms);
}

// tl.kernels([include_hidden]) -> { {name=, family=, summary=, problem={...}, config={...}, archs=...}, ... }
int l_kernels(lua_State* L) {
  bool hidden = lua_toboolean(L, 1);
  auto specs = script_context(L).session().registry().list(hidden);
  lua_createtable(L, static_cast<int>(specs.size()), 0);
  for (size_t i = 0; i < specs.size(); ++i) {
    push_json(L, nlohmann::json(*specs[i]));
    lua_rawseti(L, -2, static_cast<lua_Integer>(i + 1));
  }
  return 1;
}

// tl.kernel(name) -> kernel object; raises on an unknown name (with the closest known one).
int l_kernel(lua_State* L) {
  const char* name = luaL_checkstring(L, 1);
  auto spec = script_context(L).session().registry().find(name);
  if (!spec) throw std::runtime_error(spec.status().message());
  push_object<KernelRef>(L, k_kernel_type, (*spec)->name);
  return 1;
}

// k:schema() -> {name=, family=, summary=, problem={params...}, config={params...}, archs=}
int l_schema(lua_State* L) {
  push_json(L, nlohmann::json(check_kernel(L, 1)));
  return 1;
}

// k:config{...} / k:problem{...} -> every parameter, typed, defaults filled in; raises naming what is wrong.
int l_config(lua_State* L) {
  const KernelSpec& spec = check_kernel(L, 1);
  auto given = check_key_values(L, 2, "config");
  auto values = spec.config.resolve(given, spec.name + " config");
  if (!values) throw std::runtime_error(values.status().message());
  push_values(L, spec.config, *values);
  return 1;
}

int l_problem(lua_State* L) {
  const KernelSpec& spec = check_kernel(L, 1);
  auto given = check_key_values(L, 2, "problem");
  auto values = spec.problem.resolve(given, spec.name + " problem");
  if (!values) throw std::runtime_error(values.status().message());
  push_values(L, spec.problem, *values);
  return 1;
}

// k:can_implement(problem, config) -> true | false, reason (schema errors and can_implement refusals alike)
int l_can_implement(lua_State* L) {
  const KernelSpec& spec = check_kernel(L, 1);
  auto problem = check_key_values(L, 2, "problem");
  auto config = check_key_values(L, 3, "config");
  auto inst = script_context(L).session().instantiate(spec.name, problem, config);
  lua_pushboolean(L, inst.ok());
  if (inst.ok()) return 1;
  lua_pushstring(L, inst.status().message().c_str());
  return 2;
}

// k:compile(config [, problem [, {timeline=true}]]) -> resources | nil, message. Needs no GPU (compiles for the
// device's arch, or sm_90a). timeline=true: the probe build's (-DTL_TIMELINE=1), what a timeline run launches.
int l_compile(lua_State* L) {
  const KernelSpec& spec = check_kernel(L, 1);
  auto config = check_key_values(L, 2, "config");
  auto problem = check_key_values(L, 3, "problem");
  const bool timeline = lua_istable(L, 4) && opt_bool_field(L, 4, "timeline", false);
  Session& session = script_context(L).session();
  auto prepared = session.prepare(spec.name, problem, config);
  if (!prepared) return fail(L, prepared.status().message());
  if (timeline) {
    if (Status st = add_timeline_build(session.jit(), *prepared); !st.ok()) return fail(L, st.message());
    push_resources(L, *prepared->timeline, prepared->instance.launch);
    return 1;
  }
  push_resources(L, prepared->compiled, prepared->instance.launch);
  return 1;
}

// k:run{problem=, config=, verify=true, timeline=false, rep=N, warmup=N, baseline="cublas"|"cudnn"}
//   -> result | nil, message (invalid config, no GPU, compile error, fault, timeout).
int l_run(lua_State* L) {
  const KernelSpec& spec = check_kernel(L, 1);
  lua_settop(L, 2);
  if (lua_isnil(L, 2)) {
    lua_newtable(L);
    lua_replace(L, 2);
  }
  luaL_checktype(L, 2, LUA_TTABLE);
  lua_getfield(L, 2, "problem");
  auto problem = check_key_values(L, -1, "problem");
  lua_pop(L, 1);
  lua_getfield(L, 2, "config");
  auto config = check_key_values(L, -1, "config");
  lua_pop(L, 1);
  RunOptions ro;
  ro.timing.repeat = static_cast<int>(opt_integer_field(L, 2, "rep", ro.timing.repeat));
  ro.timing.warmup = static_cast<int>(opt_integer_field(L, 2, "warmup", ro.timing.warmup));
  if (ro.timing.repeat < 0 || ro.timing.warmup < 0) raise("run: rep and warmup must be >= 0");
  // verify=false: a smoke check of one sampled position instead of 64Ki (the float64 reference of a large GEMM
  // costs K flops per position on the host; sweeps may not want that per point).
  if (!opt_bool_field(L, 2, "verify", true)) ro.max_samples = 1;
  ro.timeline = ro.timeline_timed = opt_bool_field(L, 2, "timeline", false);
  read_timing_fields(L, 2, "run", ro.timing);
  lua_getfield(L, 2, "baseline");
  if (lua_isstring(L, -1)) ro.vs = lua_tostring(L, -1);
  else if (!lua_isnil(L, -1)) raise("run: 'baseline' must be a string such as \"cublas\" or \"cudnn\" (got %s)", luaL_typename(L, -1));
  lua_pop(L, 1);

  auto bench = script_context(L).session().bench(spec.name, problem, config, ro);
  if (!bench) return fail(L, bench.status().message());
  const RunRecord& r = bench->record;
  if (r.failure) {
    const char* what = r.failure->code == ErrorCode::fault     ? "the kernel faulted"
                       : r.failure->code == ErrorCode::timeout ? "the kernel timed out"
                                                               : "the run failed";
    return fail(L, std::string(what) + ": " + r.failure->message);
  }
  push_run_result(L, *bench);
  return 1;
}

// k:layouts([problem [, config]]) -> { {name=, spec=}, ... }: the layouts the kernel indexes with for this config
// (SPEC strings for tl.layout); {} for kernels that describe none.
int l_layouts(lua_State* L) {
  const KernelSpec& spec = check_kernel(L, 1);
  auto problem = check_key_values(L, 2, "problem");
  auto config = check_key_values(L, 3, "config");
  auto p = spec.problem.resolve(problem, spec.name + " problem");
  if (!p) throw std::runtime_error(p.status().message());
  auto c = spec.config.resolve(config, spec.name + " config");
  if (!c) throw std::runtime_error(c.status().message());
  const std::vector<LayoutInfo> layouts = spec.layouts ? spec.layouts(*p, *c) : std::vector<LayoutInfo>{};
  lua_createtable(L, static_cast<int>(layouts.size()), 0);
  for (size_t i = 0; i < layouts.size(); ++i) {
    lua_createtable(L, 0, 2);
    set_string(L, "name", layouts[i].name);
    set_string(L, "spec", layouts[i].spec);
    lua_rawseti(L, -2, static_cast<lua_Integer>(i + 1));
  }
  return 1;
}

int l_kernel_index(lua_State* L) {
  const KernelSpec& spec = check_kernel(L, 1);
  const char* key = luaL_checkstring(L, 2);
  std::string k = key;
  if (k == "name") lua_pushstring(L, spec.name.c_str());
  else if (k == "family") lua_pushstring(L, spec.family.c_str());
  else if (k == "summary") lua_pushstring(L, spec.summary.c_str());
  else if (k == "probes") {  // its TL_PROBE regions, in region-id order ({} when it records no timeline)
    lua_createtable(L, static_cast<int>(spec.probes.size()), 0);
    for (std::size_t i = 0; i < spec.probes.size(); ++i) {
      lua_pushstring(L, spec.probes[i].c_str());
      lua_rawseti(L, -2, static_cast<lua_Integer>(i + 1));
    }
  } else {
    luaL_getmetatable(L, k_kernel_type);
    lua_getfield(L, -1, "methods");
    lua_getfield(L, -1, key);
  }
  return 1;
}

int l_kernel_tostring(lua_State* L) {
  lua_pushfstring(L, "tl.kernel(%s)", check_kernel(L, 1).name.c_str());
  return 1;
}

// tl.device([{measure=true}]) -> {name=, sms=, memory=, clocks=..., ceilings=...} | nil, why
// Ceilings: the cached measurement, else measured now in the worker (and cached), unless measure=false.
int l_device(lua_State* L) {
  bool measure = true;
  if (lua_istable(L, 1)) measure = opt_bool_field(L, 1, "measure", true);
  Session& s = script_context(L).session();
  const RunTarget& t = s.target();
  if (!t.device) return fail(L, "no GPU: " + t.why_no_device);
  const DeviceInfo& d = *t.device;
  push_json(L, nlohmann::json(d));
  set_string(L, "arch", t.limits.arch);
  set_integer(L, "sms", d.sm_count);
  set_integer(L, "memory", static_cast<lua_Integer>(d.memory_bytes));
  set_number(L, "sm_clock_mhz", d.clock_khz / 1000.0);
  set_number(L, "memory_clock_mhz", d.memory_clock_khz / 1000.0);
  set_number(L, "theoretical_dram_gbps", d.theoretical_dram_bytes_per_s() * 1e-9);
  if (t.ceilings || measure) {
    auto c = s.ceilings();  // measured once when not cached; later runs then report their efficiency
    if (c) push_json(L, nlohmann::json(*c));
    else lua_pushnil(L);
    lua_setfield(L, -2, "ceilings");
    if (!c) set_string(L, "why_no_ceilings", c.status().message());
  } else {
    set_string(L, "why_no_ceilings", "not measured yet (tl.device{measure=true} or `tilelab info --measure`)");
  }
  return 1;
}

const luaL_Reg k_kernel_methods[] = {
    {"schema", guarded<l_schema>},
    {"config", guarded<l_config>},
    {"problem", guarded<l_problem>},
    {"can_implement", guarded<l_can_implement>},
    {"compile", guarded<l_compile>},
    {"run", guarded<l_run>},
    {"layouts", guarded<l_layouts>},
    {nullptr, nullptr},
};

}  // namespace

void read_timing_fields(lua_State* L, int index, const char* who, TimingOptions& timing) {
  auto timer = parse_timer(opt_string_field(L, index, "timer", timer_name(timing.timer)));
  if (!timer) raise("%s: timer: %s", who, timer.status().message().c_str());
  timing.timer = *timer;
  // Past an int: one past the range, so that check_timing refuses it.
  timing.graph_launches = static_cast<int>(std::clamp<lua_Integer>(
      opt_integer_field(L, index, "graph_launches", timing.graph_launches), -1, kMaxGraphLaunches + 1));
  if (Status st = check_timing(timing); !st.ok()) raise("%s: %s", who, st.message().c_str());
}

// The result table of :run: the headline numbers flat, the resources and baseline as sub-tables, and the
// whole RunRecord (the JSON `bench --json` writes) as `record`, which tl.plot.roofline reads.
void push_run_result(lua_State* L, const Session::Bench& b) {
  const RunRecord& r = b.record;
  lua_createtable(L, 0, 24);
  set_string(L, "kernel", r.kernel);
  set_string(L, "device", r.device);
  push_values(L, b.prepared.instance.spec->problem, b.prepared.instance.problem);
  lua_setfield(L, -2, "problem");
  push_values(L, b.prepared.instance.spec->config, b.prepared.instance.config);
  lua_setfield(L, -2, "config");
  set_number(L, "median_ms", r.time_ms.median);
  set_number(L, "min_ms", r.time_ms.min);
  set_number(L, "max_ms", r.time_ms.max);
  set_integer(L, "repeats", static_cast<lua_Integer>(r.time_ms.count));
  set_string(L, "timer", timer_name(r.timer));
  if (r.timer == Timer::graph) set_integer(L, "graph_launches", r.graph_launches);
  set_number(L, "tflops", r.tflops);
  set_number(L, "gbps", r.gbps);
  set_number(L, "flops", r.flops);
  set_number(L, "min_bytes", r.min_bytes);
  if (!r.efficiency.bound.empty()) {
    set_number(L, "efficiency", r.efficiency.value);
    set_string(L, "bound", r.efficiency.bound);
    set_string(L, "ceiling", r.efficiency.ceiling);
  }
  set_number(L, "rel_err", r.rel_error());
  set_number(L, "max_abs_err", r.max_abs_error());
  lua_pushboolean(L, r.verified);
  lua_setfield(L, -2, "verified");
  lua_pushboolean(L, r.passed());
  lua_setfield(L, -2, "passed");
  if (!r.passed()) set_string(L, "failure", r.failure_text());
  push_resources(L, b.prepared.compiled, r.launch);
  lua_setfield(L, -2, "resources");
  nlohmann::json record = r;
  if (r.baseline) {
    push_json(L, record["baseline"]);
    if (r.baseline->error.empty()) {
      set_number(L, "median_ms", r.baseline->time_ms.median);
      set_number(L, "min_ms", r.baseline->time_ms.min);
      set_number(L, "max_ms", r.baseline->time_ms.max);
    }
    lua_setfield(L, -2, "baseline");
  }
  if (r.timeline) {
    push_timeline(L, *r.timeline);
    lua_setfield(L, -2, "timeline");
  } else if (!r.timeline_error.empty()) {
    set_string(L, "timeline_error", r.timeline_error);
  }
  push_json(L, record);
  lua_setfield(L, -2, "record");
}

void open_kernels(lua_State* L, int tl_index) {
  tl_index = lua_absindex(L, tl_index);
  if (new_object_type(L, k_kernel_type)) {
    luaL_newlib(L, k_kernel_methods);
    lua_setfield(L, -2, "methods");
    lua_pushcfunction(L, guarded<l_kernel_index>);
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, guarded<l_kernel_tostring>);
    lua_setfield(L, -2, "__tostring");
    set_object_gc<KernelRef>(L, k_kernel_type);
  }
  lua_pop(L, 1);
  const luaL_Reg functions[] = {
      {"kernels", guarded<l_kernels>},
      {"kernel", guarded<l_kernel>},
      {"device", guarded<l_device>},
      {nullptr, nullptr},
  };
  lua_pushvalue(L, tl_index);
  luaL_setfuncs(L, functions, 0);
  lua_pop(L, 1);
}

}  // namespace tl::lua
