// Timelines and rooflines from Lua: the timeline object (:stats, :trace, :plot), `tl.model_timeline`,
// `tl.load_timeline`, `tl.plot.timeline` and `tl.plot.roofline`.
#include "scripting/lua_timeline.hpp"

#include <fstream>
#include <memory>

extern "C" {
#include <lauxlib.h>
#include <lua.h>
}

#include <nlohmann/json.hpp>

#include "scripting/lua_binding.hpp"
#include "scripting/lua_context.hpp"
#include "scripting/lua_json.hpp"
#include "scripting/lua_plot.hpp"
#include "scripting/lua_userdata.hpp"
#include "scripting/lua_values.hpp"
#include "viz/roofline_scene.hpp"
#include "viz/timeline_scene.hpp"

namespace tl::lua {
namespace {

constexpr const char* k_timeline_type = "tilelab.timeline";

struct LuaTimeline {
  std::shared_ptr<const Timeline> timeline;
};

const Timeline& check_timeline(lua_State* L, int index) {
  return *check_object<LuaTimeline>(L, index, k_timeline_type).timeline;
}

// The timeline an argument names: a timeline object, a run result with `timeline`, or a Chrome-trace file.
std::shared_ptr<const Timeline> timeline_arg(lua_State* L, int index) {
  if (auto* t = test_object<LuaTimeline>(L, index, k_timeline_type)) return t->timeline;
  if (lua_type(L, index) == LUA_TSTRING) {
    auto t = read_chrome_trace(lua_tostring(L, index));
    if (!t) throw std::runtime_error(t.status().message());
    return std::make_shared<const Timeline>(std::move(*t));
  }
  if (lua_istable(L, index)) {
    lua_getfield(L, index, "timeline");
    auto* t = test_object<LuaTimeline>(L, -1, k_timeline_type);
    lua_pop(L, 1);
    if (t) return t->timeline;
    lua_getfield(L, index, "timeline_error");
    std::string why = lua_isstring(L, -1) ? lua_tostring(L, -1) : "run it with timeline = true";
    lua_pop(L, 1);
    raise("this run has no timeline: %s", why.c_str());
  }
  raise("expected a timeline, a run result with a timeline, or a Chrome-trace file (got %s)", luaL_typename(L, index));
}

// The view of a timeline as a plot: opts {view="gantt"|"stats"|"occupancy", t0=µs, t1=µs, tracks=N, first_track=N,
// width=, title=}.
int plot_timeline(lua_State* L, const Timeline& t, int opts) {
  if (!lua_isnoneornil(L, opts) && !lua_istable(L, opts)) raise("plot: options must be a table (got %s)", luaL_typename(L, opts));
  std::string view = opt_string_field(L, opts, "view", "gantt");
  double width = opt_number_field(L, opts, "width", view == "gantt" ? 1400 : 1000);
  viz::Scene scene;
  if (view == "stats") {
    scene = viz::build_region_stats_scene(t, region_statistics(t), width);
  } else if (view == "occupancy") {
    scene = viz::build_occupancy_scene(t, stage_occupancy(t), width);
  } else if (view == "gantt") {
    viz::GanttStyle style;
    style.width = width;
    style.t0_ns = opt_number_field(L, opts, "t0", 0) * 1e3;
    style.t1_ns = opt_number_field(L, opts, "t1", 0) * 1e3;
    style.max_tracks = static_cast<int>(opt_number_field(L, opts, "tracks", style.max_tracks));
    style.first_track = static_cast<int>(opt_number_field(L, opts, "first_track", 0));
    style.title = opt_string_field(L, opts, "title", "");
    scene = viz::build_gantt_scene(t, style);
  } else {
    raise("plot: unknown view '%s' (gantt, stats or occupancy)", view.c_str());
  }
  push_plot(L, std::move(scene), "timeline");
  return 1;
}

// t:stats() -> {regions={ {name=, count=, mean_ns=, median_ns=, p90_ns=, ...}, ... }, occupancy={...}, model=, ...}
int l_stats(lua_State* L) {
  const Timeline& t = check_timeline(L, 1);
  push_json(L, timeline_summary_json(t, region_statistics(t), stage_occupancy(t)));
  return 1;
}

// t:trace(path) -> path | nil, message: the Chrome trace (opens in Perfetto)
int l_trace(lua_State* L) {
  const Timeline& t = check_timeline(L, 1);
  const char* path = luaL_checkstring(L, 2);
  script_context(L).check_write(path, "timeline:trace");
  std::ofstream out(path, std::ios::binary);
  out << to_chrome_trace(t).dump() << '\n';
  if (!out) {
    lua_pushnil(L);
    lua_pushfstring(L, "cannot write '%s'", path);
    return 2;
  }
  lua_pushstring(L, path);
  return 1;
}

int l_plot(lua_State* L) { return plot_timeline(L, check_timeline(L, 1), 2); }

int l_index(lua_State* L) {
  const Timeline& t = check_timeline(L, 1);
  std::string key = luaL_checkstring(L, 2);
  if (key == "kernel") lua_pushstring(L, t.kernel.c_str());
  else if (key == "label") lua_pushstring(L, t.label.c_str());
  else if (key == "model") lua_pushboolean(L, t.model);
  else if (key == "duration_ns") lua_pushnumber(L, t.duration_ns);
  else if (key == "events") lua_pushinteger(L, static_cast<lua_Integer>(t.events.size()));
  else if (key == "tracks") lua_pushinteger(L, static_cast<lua_Integer>(t.tracks.size()));
  else if (key == "blocks") lua_pushinteger(L, static_cast<lua_Integer>(t.blocks.size()));
  else if (key == "dropped_marks") lua_pushinteger(L, static_cast<lua_Integer>(t.dropped_marks()));
  else {
    luaL_getmetatable(L, k_timeline_type);
    lua_getfield(L, -1, "methods");
    lua_getfield(L, -1, key.c_str());
  }
  return 1;
}

int l_tostring(lua_State* L) {
  const Timeline& t = check_timeline(L, 1);
  lua_pushfstring(L, "tl.timeline(%s%s, %d events)", t.model ? "MODEL " : "", t.kernel.c_str(),
                  static_cast<int>(t.events.size()));
  return 1;
}

// tl.model_timeline{kernel=, problem=, config=} -> timeline computed from the config (no GPU; labelled MODEL)
int l_model_timeline(lua_State* L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_getfield(L, 1, "kernel");
  if (lua_type(L, -1) != LUA_TSTRING) raise("model_timeline: 'kernel' must be a kernel name (got %s)", luaL_typename(L, -1));
  std::string kernel = lua_tostring(L, -1);
  lua_getfield(L, 1, "problem");
  auto problem = check_key_values(L, -1, "problem");
  lua_getfield(L, 1, "config");
  auto config = check_key_values(L, -1, "config");
  lua_pop(L, 3);
  Session& s = script_context(L).session();
  auto inst = s.instantiate(kernel, problem, config);
  if (!inst) throw std::runtime_error(inst.status().message());
  const RunTarget& target = s.target();
  auto m = model_timeline(*inst, model_device(target.ceilings ? &*target.ceilings : nullptr,
                                              target.device ? &*target.device : nullptr));
  if (!m) throw std::runtime_error(m.status().message());
  push_timeline(L, std::move(*m));
  return 1;
}

// tl.load_timeline(path) -> timeline | nil, message (a Chrome trace written by TileLab)
int l_load_timeline(lua_State* L) {
  std::string path = luaL_checkstring(L, 1);
  auto t = read_chrome_trace(path);
  if (!t) {
    lua_pushnil(L);
    lua_pushstring(L, t.status().message().c_str());
    return 2;
  }
  push_timeline(L, std::move(*t));
  return 1;
}

// tl.plot.timeline(timeline | run | trace file [, opts]) -> plot
int l_plot_timeline(lua_State* L) {
  auto t = timeline_arg(L, 1);
  return plot_timeline(L, *t, 2);
}

// A run record from a run result table (its `record`) or a record table itself (bench --json's object).
nlohmann::json record_of(lua_State* L, int index) {
  if (!lua_istable(L, index)) raise("roofline: runs must be run results or records (got %s)", luaL_typename(L, index));
  lua_getfield(L, index, "record");
  bool nested = lua_istable(L, -1);
  nlohmann::json j = to_json(L, nested ? -1 : index);
  lua_pop(L, 1);
  return j;
}

// tl.plot.roofline{run, run, ..., device_profile=FILE, color_by=PARAM, title=, width=, height=, runs={...}} -> plot
// Ceilings: the profile, else this machine's GPU 0 (measured once, cached), else the cached ceilings.
int l_plot_roofline(lua_State* L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  std::vector<nlohmann::json> records;
  const lua_Integer n = static_cast<lua_Integer>(lua_rawlen(L, 1));
  for (lua_Integer i = 1; i <= n; ++i) {
    lua_rawgeti(L, 1, i);
    records.push_back(record_of(L, -1));
    lua_pop(L, 1);
  }
  lua_getfield(L, 1, "runs");
  if (lua_istable(L, -1)) {
    const lua_Integer m = static_cast<lua_Integer>(lua_rawlen(L, -1));
    for (lua_Integer i = 1; i <= m; ++i) {
      lua_rawgeti(L, -1, i);
      records.push_back(record_of(L, -1));
      lua_pop(L, 1);
    }
  } else if (!lua_isnil(L, -1)) {
    raise("roofline: 'runs' must be a list of run results (got %s)", luaL_typename(L, -1));
  }
  lua_pop(L, 1);
  const std::string profile = opt_string_field(L, 1, "device_profile", "");
  viz::RooflineOptions options;
  options.color_by = opt_string_field(L, 1, "color_by", "");
  options.title = opt_string_field(L, 1, "title", "");
  options.width = opt_number_field(L, 1, "width", options.width);
  options.height = opt_number_field(L, 1, "height", options.height);
  ScriptContext& ctx = script_context(L);
  Session& session = ctx.session();
  Result<CeilingsSource> ceilings = make_error(ErrorCode::internal, "unset");
  if (profile.empty() && session.has_device()) {
    auto c = session.ceilings();  // measured once and kept for the efficiency of this script's later runs
    ceilings = c ? Result<CeilingsSource>(CeilingsSource{*c, "GPU 0"}) : Result<CeilingsSource>(c.status());
  } else {
    ceilings = find_ceilings(profile, session.cache_dir(), records);
  }
  if (!ceilings && ceilings.status().code() == ErrorCode::not_found && profile.empty())
    raise("roofline: %s: pass device_profile = FILE (write one on the GPU machine with `tilelab info --measure "
          "--save-profile FILE`)",
          ceilings.status().message().c_str());
  if (!ceilings) throw std::runtime_error("roofline: " + ceilings.status().message());
  auto scene = viz::build_roofline_scene(ceilings->ceilings, records, options);
  if (!scene) throw std::runtime_error("roofline: " + scene.status().message());
  push_plot(L, std::move(scene->scene), "roofline");
  return 1;
}

const luaL_Reg k_methods[] = {
    {"stats", guarded<l_stats>},
    {"trace", guarded<l_trace>},
    {"plot", guarded<l_plot>},
    {nullptr, nullptr},
};

void ensure_metatable(lua_State* L) {
  if (new_object_type(L, k_timeline_type)) {
    luaL_newlib(L, k_methods);
    lua_setfield(L, -2, "methods");
    const luaL_Reg meta[] = {{"__index", guarded<l_index>}, {"__tostring", guarded<l_tostring>}, {nullptr, nullptr}};
    luaL_setfuncs(L, meta, 0);
    set_object_gc<LuaTimeline>(L, k_timeline_type);
  }
  lua_pop(L, 1);
}

}  // namespace

void push_timeline(lua_State* L, Timeline timeline) {
  ensure_metatable(L);
  push_object<LuaTimeline>(L, k_timeline_type, std::make_shared<const Timeline>(std::move(timeline)));
}

void open_timeline(lua_State* L, int tl_index) {
  tl_index = lua_absindex(L, tl_index);
  ensure_metatable(L);
  lua_pushvalue(L, tl_index);
  const luaL_Reg functions[] = {{"model_timeline", guarded<l_model_timeline>},
                                {"load_timeline", guarded<l_load_timeline>},
                                {nullptr, nullptr}};
  luaL_setfuncs(L, functions, 0);
  lua_pop(L, 1);
  push_plot_table(L, tl_index);
  const luaL_Reg plots[] = {{"timeline", guarded<l_plot_timeline>}, {"roofline", guarded<l_plot_roofline>}, {nullptr, nullptr}};
  luaL_setfuncs(L, plots, 0);
  lua_pop(L, 1);
}

}  // namespace tl::lua
