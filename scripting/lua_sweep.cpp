// tl.sweep{...}: the sweep engine from Lua, with a Lua filter and per-result callback, progress, stored results.
#include "scripting/lua_sweep.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

extern "C" {
#include <lauxlib.h>
#include <lua.h>
}

#include <nlohmann/json.hpp>

#include "scripting/lua_binding.hpp"
#include "scripting/lua_context.hpp"
#include "scripting/lua_json.hpp"
#include "scripting/lua_kernels.hpp"
#include "scripting/lua_results.hpp"
#include "session/sweep.hpp"

namespace tl::lua {
namespace {

// A config or problem value as the schemas read it: integers without ".0", booleans as true/false.
std::string value_text(lua_State* L, int index, const std::string& what) {
  switch (lua_type(L, index)) {
    case LUA_TSTRING: return lua_tostring(L, index);
    case LUA_TBOOLEAN: return lua_toboolean(L, index) ? "true" : "false";
    case LUA_TNUMBER: {
      if (lua_isinteger(L, index)) return std::to_string(lua_tointeger(L, index));
      double v = lua_tonumber(L, index);
      if (v == std::floor(v) && std::fabs(v) < 9e15) return std::to_string(static_cast<long long>(v));
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.17g", v);
      return buf;
    }
    default: throw std::runtime_error(what + ": expected a number, string or boolean, got " + luaL_typename(L, index));
  }
}

// {M=4096, dtype="bf16"} -> ParamMap. The table is at `index`.
ParamMap param_map(lua_State* L, int index, const std::string& what) {
  index = lua_absindex(L, index);
  if (!lua_istable(L, index)) throw std::runtime_error(what + ": expected a table of name = value");
  ParamMap m;
  lua_pushnil(L);
  while (lua_next(L, index)) {
    if (lua_type(L, -2) != LUA_TSTRING) {
      lua_pop(L, 2);
      throw std::runtime_error(what + ": keys must be parameter names");
    }
    std::string key = lua_tostring(L, -2);
    try {
      m[key] = value_text(L, -1, what + "." + key);
    } catch (...) {
      lua_pop(L, 2);
      throw;
    }
    lua_pop(L, 1);
  }
  return m;
}

// space = {block_M = {64, 128}, block_N = {128, 256}} -> axes sorted by name (Lua tables have no order).
SweepSpace space_of(lua_State* L, int index) {
  index = lua_absindex(L, index);
  if (!lua_istable(L, index)) throw std::runtime_error("tl.sweep: space: expected a table of name = {values...}");
  SweepSpace space;
  lua_pushnil(L);
  while (lua_next(L, index)) {
    if (lua_type(L, -2) != LUA_TSTRING || !lua_istable(L, -1)) {
      lua_pop(L, 2);
      throw std::runtime_error("tl.sweep: space: each entry is name = {v1, v2, ...}");
    }
    std::string name = lua_tostring(L, -2);
    std::vector<std::string> values;
    const lua_Integer n = luaL_len(L, -1);
    for (lua_Integer i = 1; i <= n; ++i) {
      lua_geti(L, -1, i);
      try {
        values.push_back(value_text(L, -1, "tl.sweep: space." + name));
      } catch (...) {
        lua_pop(L, 3);
        throw;
      }
      lua_pop(L, 1);
    }
    space.emplace_back(name, std::move(values));
    lua_pop(L, 1);
  }
  std::sort(space.begin(), space.end());
  return space;
}

void push_params(lua_State* L, const ParamMap& m) {
  lua_createtable(L, 0, static_cast<int>(m.size()));
  for (const auto& [k, v] : m) {
    lua_Integer i = 0;
    char* end = nullptr;
    i = std::strtoll(v.c_str(), &end, 10);
    if (!v.empty() && end == v.c_str() + v.size()) lua_pushinteger(L, i);
    else lua_pushstring(L, v.c_str());
    lua_setfield(L, -2, k.c_str());
  }
}

lua_Integer opt_integer(lua_State* L, int t, const char* key, lua_Integer def) {
  lua_getfield(L, t, key);
  if (lua_isnil(L, -1)) {
    lua_pop(L, 1);
    return def;
  }
  if (!lua_isinteger(L, -1)) {
    lua_pop(L, 1);
    throw std::runtime_error(std::string("tl.sweep: ") + key + ": expected an integer");
  }
  lua_Integer v = lua_tointeger(L, -1);
  lua_pop(L, 1);
  return v;
}

// gpus = "all" | 1 | {0, 1} -> the GPU list of `tilelab sweep --gpus` (nil: none given).
std::string gpus_text(lua_State* L, int t) {
  lua_getfield(L, t, "gpus");
  std::string text;
  const int type = lua_type(L, -1);
  if (type == LUA_TSTRING || (type == LUA_TNUMBER && lua_isinteger(L, -1))) {
    text = lua_tostring(L, -1);
  } else if (type == LUA_TTABLE) {
    const lua_Integer n = luaL_len(L, -1);
    for (lua_Integer i = 1; i <= n; ++i) {
      lua_geti(L, -1, i);
      const bool integer = lua_isinteger(L, -1);
      if (integer) text.append(i > 1 ? "," : "").append(std::to_string(lua_tointeger(L, -1)));
      lua_pop(L, 1);
      if (!integer) {
        lua_pop(L, 1);
        throw std::runtime_error("tl.sweep: gpus[" + std::to_string(i) + "]: expected a GPU index (an integer)");
      }
    }
    if (n == 0) {
      lua_pop(L, 1);
      throw std::runtime_error("tl.sweep: gpus: an empty list; give \"all\" or GPU indices, e.g. {0, 1}");
    }
  } else if (type != LUA_TNIL) {
    lua_pop(L, 1);
    throw std::runtime_error("tl.sweep: gpus: expected \"all\", a GPU index or a list of them, e.g. {0, 1}");
  }
  lua_pop(L, 1);
  return text;
}

bool opt_bool(lua_State* L, int t, const char* key, bool def) {
  lua_getfield(L, t, key);
  bool v = lua_isnil(L, -1) ? def : lua_toboolean(L, -1);
  lua_pop(L, 1);
  return v;
}

// tl.sweep{kernel=, problem= | problems={...}, space={...}, config=, filter=function(cfg, problem), jobs=N,
//          gpus="all" | {0, 1}, on_result=function(point, done, total), rep=, warmup=, samples=, store=true,
//          resume=true, best="tflops", progress=true}
//   -> results (a list of points, with .best, .id, .summary), best point (or nil)
int l_sweep(lua_State* L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  ScriptContext& ctx = script_context(L);
  SweepSpec spec;
  spec.kernel = opt_string_field(L, 1, "kernel");
  if (spec.kernel.empty()) throw std::runtime_error("tl.sweep: kernel: a kernel name is required (see tl.kernels())");
  lua_getfield(L, 1, "problems");
  if (!lua_isnil(L, -1)) {
    if (!lua_istable(L, -1)) throw std::runtime_error("tl.sweep: problems: expected a list of problem tables");
    spec.problems.clear();
    const lua_Integer n = luaL_len(L, -1);
    for (lua_Integer i = 1; i <= n; ++i) {
      lua_geti(L, -1, i);
      spec.problems.push_back(param_map(L, -1, "tl.sweep: problems[" + std::to_string(i) + "]"));
      lua_pop(L, 1);
    }
  }
  lua_pop(L, 1);
  lua_getfield(L, 1, "problem");
  if (!lua_isnil(L, -1)) spec.problems = {param_map(L, -1, "tl.sweep: problem")};
  lua_pop(L, 1);
  lua_getfield(L, 1, "space");
  if (lua_isnil(L, -1)) throw std::runtime_error("tl.sweep: space: required, e.g. space = {block_M = {64, 128}}");
  spec.space = space_of(L, -1);
  lua_pop(L, 1);
  lua_getfield(L, 1, "config");
  if (!lua_isnil(L, -1)) spec.base_config = param_map(L, -1, "tl.sweep: config");
  lua_pop(L, 1);
  spec.jobs = static_cast<int>(opt_integer(L, 1, "jobs", 0));
  spec.run.timing.repeat = static_cast<int>(opt_integer(L, 1, "rep", spec.run.timing.repeat));  // `repeat` is a Lua keyword
  spec.run.timing.warmup = static_cast<int>(opt_integer(L, 1, "warmup", spec.run.timing.warmup));
  read_timing_fields(L, 1, "tl.sweep", spec.run.timing);
  spec.run.max_samples = static_cast<std::uint64_t>(opt_integer(L, 1, "samples", static_cast<lua_Integer>(spec.run.max_samples)));
  spec.resume = opt_bool(L, 1, "resume", true);
  const bool store_results = opt_bool(L, 1, "store", true);
  const bool progress = opt_bool(L, 1, "progress", true);
  std::string best_metric = opt_string_field(L, 1, "best");
  if (best_metric.empty()) best_metric = "tflops";

  // The callbacks stay on the stack at fixed slots while the sweep runs; a Lua error in them is kept and raised
  // after the sweep has unwound (never through its C++ frames).
  lua_getfield(L, 1, "filter");
  const int filter_slot = lua_gettop(L);
  if (!lua_isnil(L, filter_slot) && !lua_isfunction(L, filter_slot))
    throw std::runtime_error("tl.sweep: filter: expected a function(config, problem) returning true to keep a point");
  lua_getfield(L, 1, "on_result");
  const int on_result_slot = lua_gettop(L);
  if (!lua_isnil(L, on_result_slot) && !lua_isfunction(L, on_result_slot))
    throw std::runtime_error("tl.sweep: on_result: expected a function(point, done, total)");

  std::string callback_error;
  std::atomic<bool> stop{false};
  if (lua_isfunction(L, filter_slot)) {
    spec.filter = [&](const ParamMap& problem, const ParamMap& config, std::string& why) {
      if (!callback_error.empty()) return false;
      lua_pushvalue(L, filter_slot);
      push_params(L, config);
      push_params(L, problem);
      if (call_script(L, 2, 2) != LUA_OK) {
        callback_error = std::string("tl.sweep: filter: ") + (lua_tostring(L, -1) ? lua_tostring(L, -1) : "error");
        lua_pop(L, 1);
        stop = true;
        return false;
      }
      const bool keep = lua_toboolean(L, -2);
      if (lua_type(L, -1) == LUA_TSTRING) why = lua_tostring(L, -1);
      lua_pop(L, 2);
      return keep;
    };
  }
  Session& session = ctx.session();
  if (const std::string gpus = gpus_text(L, 1); !gpus.empty()) {
    auto list = parse_gpus(gpus, session.gpu_count(), session.target().why_no_device);
    if (!list) throw std::runtime_error("tl.sweep: gpus: " + list.status().message());
    spec.gpus = *list;
  }
  ResultsStore* store = store_results ? &ctx.results_store() : nullptr;
  SweepPrinter printer(stdout, false, spec.gpus.size() > 1);
  const bool show = progress;  // a bar on a terminal, plain lines otherwise
  std::size_t points_done = 0;
  OnSweepPoint on_point = [&](const SweepPoint& p, const SweepProgress& pr) {
    points_done = pr.done;
    if (show) printer.point(p, pr);
    if (ctx.interrupt_requested()) stop = true;
    if (!lua_isfunction(L, on_result_slot) || !callback_error.empty()) return;
    lua_pushvalue(L, on_result_slot);
    push_json(L, nlohmann::json(p));
    lua_pushinteger(L, static_cast<lua_Integer>(pr.done));
    lua_pushinteger(L, static_cast<lua_Integer>(pr.total));
    if (call_script(L, 3, 0) != LUA_OK) {
      callback_error = std::string("tl.sweep: on_result: ") + (lua_tostring(L, -1) ? lua_tostring(L, -1) : "error");
      lua_pop(L, 1);
      stop = true;
    }
  };
  if (ctx.interrupt_requested()) stop = true;
  auto sum = run_sweep(session, store, spec, on_point, &stop, best_metric);
  if (show) printer.finish();
  if (!callback_error.empty()) throw std::runtime_error(callback_error);
  if (!sum) throw std::runtime_error("tl.sweep: " + sum.status().message());
  // Ctrl-C ends the script, not just the sweep: what ran is stored; a rerun resumes after it.
  if (sum->interrupted || ctx.interrupt_requested())
    raise("tl.sweep: interrupted (Ctrl-C) after %zu of %zu points (each stored as it finished; the same sweep run "
          "again skips the stored ones)", points_done, sum->points.size());
  lua_settop(L, 1);

  // results[i] = point i; results.id, results.summary, results.best
  lua_createtable(L, static_cast<int>(sum->points.size()), 3);
  for (std::size_t i = 0; i < sum->points.size(); ++i) {
    push_json(L, nlohmann::json(sum->points[i]));
    lua_rawseti(L, -2, static_cast<lua_Integer>(i + 1));
  }
  lua_pushstring(L, sum->id.c_str());
  lua_setfield(L, -2, "id");
  push_json(L, nlohmann::json(*sum));
  lua_setfield(L, -2, "summary");
  if (sum->best) {
    lua_rawgeti(L, -1, static_cast<lua_Integer>(*sum->best + 1));
    lua_pushvalue(L, -1);
    lua_setfield(L, -3, "best");
  } else {
    lua_pushnil(L);
  }
  return 2;
}

}  // namespace

void register_sweep(lua_State* L, int tl_index) {
  tl_index = lua_absindex(L, tl_index);
  lua_pushcfunction(L, guarded<l_sweep>);
  lua_setfield(L, tl_index, "sweep");
}

}  // namespace tl::lua
