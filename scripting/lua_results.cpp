// tl.results.query / tl.results.compare over the results store, and tl.plot.heatmap over results or sweep points.
#include "scripting/lua_results.hpp"

#include <stdexcept>

extern "C" {
#include <lauxlib.h>
#include <lua.h>
}

#include <nlohmann/json.hpp>

#include "scripting/lua_binding.hpp"
#include "scripting/lua_context.hpp"
#include "scripting/lua_json.hpp"
#include "scripting/lua_plot.hpp"
#include "viz/heatmap_scene.hpp"

namespace tl::lua {
namespace {

// tl.results.query{kernel=, since=, sweep=, limit=, best=METRIC} -> list of rows (oldest first)
int l_query(lua_State* L) {
  if (!lua_isnoneornil(L, 1)) luaL_checktype(L, 1, LUA_TTABLE);  // before any C++ object: it may longjmp
  ResultsQuery q;
  if (!lua_isnoneornil(L, 1)) {
    q.kernel = opt_string_field(L, 1, "kernel");
    q.since = opt_string_field(L, 1, "since");
    q.sweep_id = opt_string_field(L, 1, "sweep");
    q.best = opt_string_field(L, 1, "best");
    lua_getfield(L, 1, "limit");
    if (lua_isinteger(L, -1)) q.limit = lua_tointeger(L, -1);
    lua_pop(L, 1);
  }
  auto rows = script_context(L).results_reader().query(q);
  if (!rows) throw std::runtime_error("tl.results.query: " + rows.status().message());
  push_json(L, nlohmann::json(*rows));
  return 1;
}

// A run id, or a row table with an `id`.
std::int64_t run_id(lua_State* L, int index) {
  if (lua_isinteger(L, index)) return lua_tointeger(L, index);
  if (lua_istable(L, index)) {
    lua_getfield(L, index, "id");
    const bool ok = lua_isinteger(L, -1);
    const std::int64_t id = ok ? lua_tointeger(L, -1) : 0;
    lua_pop(L, 1);
    if (ok) return id;
    lua_getfield(L, index, "row_id");  // a sweep point
    const bool ok2 = lua_isinteger(L, -1) && lua_tointeger(L, -1) > 0;
    const std::int64_t row = ok2 ? lua_tointeger(L, -1) : 0;
    lua_pop(L, 1);
    if (ok2) return row;
  }
  throw std::runtime_error("tl.results.compare: argument " + std::to_string(index) +
                           ": expected a run id or a stored result (a table with id or row_id)");
}

// tl.results.compare(a, b) -> {a=, b=, config={param={va, vb}}, problem=, same_problem=, metrics={...}} | nil, message
int l_compare(lua_State* L) {
  const std::int64_t a = run_id(L, 1), b = run_id(L, 2);
  ResultsQuery q;
  q.ids = {a, b};
  const ResultsStore& store = script_context(L).results_reader();
  auto rows = store.query(q);
  if (!rows) throw std::runtime_error("tl.results.compare: " + rows.status().message());
  const StoredRun *x = nullptr, *y = nullptr;
  for (const auto& r : *rows) {
    if (r.id == a) x = &r;
    if (r.id == b) y = &r;
  }
  if (!x || !y) {
    lua_pushnil(L);
    lua_pushfstring(L, "no run %I in %s", static_cast<lua_Integer>(x ? b : a), store.path().c_str());
    return 2;
  }
  push_json(L, compare_runs(*x, *y));
  return 1;
}

// tl.plot.heatmap{results=, x=, y=, metric="tflops", title=, device=} -> plot
int l_heatmap(lua_State* L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  viz::HeatmapOptions o;
  o.x = opt_string_field(L, 1, "x");
  o.y = opt_string_field(L, 1, "y");
  const std::string metric = opt_string_field(L, 1, "metric");
  if (!metric.empty()) o.metric = metric;
  o.title = opt_string_field(L, 1, "title");
  o.device = opt_string_field(L, 1, "device");
  lua_getfield(L, 1, "results");
  if (!lua_istable(L, -1))
    throw std::runtime_error("tl.plot.heatmap: results: expected a list of results (from tl.sweep or tl.results.query)");
  // Element by element: tl.sweep's list also carries .id, .summary and .best.
  std::vector<nlohmann::json> records;
  const lua_Integer n = luaL_len(L, -1);
  for (lua_Integer i = 1; i <= n; ++i) {
    lua_geti(L, -1, i);
    records.push_back(to_json(L, -1));
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  auto h = viz::build_heatmap_scene(records, o);
  if (!h) throw std::runtime_error("tl.plot.heatmap: " + h.status().message());
  push_plot(L, std::move(h->scene), "heatmap");
  return 1;
}

const luaL_Reg k_results_functions[] = {
    {"query", guarded<l_query>},
    {"compare", guarded<l_compare>},
    {nullptr, nullptr},
};

}  // namespace

void register_results(lua_State* L, int tl_index) {
  tl_index = lua_absindex(L, tl_index);
  luaL_newlib(L, k_results_functions);
  lua_setfield(L, tl_index, "results");
  push_plot_table(L, tl_index);
  lua_pushcfunction(L, guarded<l_heatmap>);
  lua_setfield(L, -2, "heatmap");
  lua_pop(L, 1);
}

}  // namespace tl::lua
