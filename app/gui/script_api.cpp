// The `gui` Lua table of the scripted test mode: select a kernel, set config values, open panels, load files.
#include "app/gui/script_api.hpp"

#include <iterator>
#include <string_view>
#include <exception>

extern "C" {
#include <lauxlib.h>
#include <lua.h>
}

#include "app/gui/app.hpp"
#include "scripting/lua_binding.hpp"
#include "scripting/lua_context.hpp"
#include "scripting/lua_json.hpp"
#include "scripting/lua_runner.hpp"

namespace tl::gui {
namespace {

App& app_of(lua_State* L) { return *static_cast<App*>(lua_touserdata(L, lua_upvalueindex(1))); }

// A Status that failed becomes a Lua error (user mistakes in a test script should stop it, loudly).
void check(const Status& st) {
  if (!st) throw std::runtime_error(st.message());
}

std::string value_text(lua_State* L, int idx) {
  if (lua_type(L, idx) == LUA_TBOOLEAN) return lua_toboolean(L, idx) ? "true" : "false";
  if (lua_isinteger(L, idx)) return std::to_string(lua_tointeger(L, idx));
  return luaL_checkstring(L, idx);
}

// gui.kernel(name)
int l_kernel(lua_State* L) {
  check(app_of(L).select_kernel(luaL_checkstring(L, 1)));
  return 0;
}

// gui.config{k = v, ...} or gui.config(k, v); gui.problem likewise.
template <bool Config>
int l_values(lua_State* L) {
  App& app = app_of(L);
  auto set = [&](const std::string& k, const std::string& v) {
    check(Config ? app.set_config(k, v) : app.set_problem(k, v));
  };
  if (lua_istable(L, 1)) {
    lua_pushnil(L);
    while (lua_next(L, 1)) {
      const std::string k = luaL_checkstring(L, -2);
      const std::string v = value_text(L, -1);
      lua_pop(L, 1);
      set(k, v);
    }
  } else {
    set(luaL_checkstring(L, 1), value_text(L, 2));
  }
  return 0;
}

// gui.show(panel): opens and selects a panel ("Layouts", "Source", ...); gui.hide(panel).
int l_show(lua_State* L) {
  check(app_of(L).show_panel(luaL_checkstring(L, 1)));
  return 0;
}
int l_hide(lua_State* L) {
  app_of(L).hide_panel(luaL_checkstring(L, 1));
  return 0;
}

// gui.layout(spec [, access [, colour]]): the layout viewer's SPEC, bank-overlay access pattern, colour mode.
int l_layout(lua_State* L) {
  App& app = app_of(L);
  app.layouts.set_spec(luaL_checkstring(L, 1));
  app.layouts.set_access(luaL_optstring(L, 2, ""));
  app.layouts.set_color(luaL_optstring(L, 3, "auto"));
  return 0;
}

// gui.layout_repeat(rows, cols [, "thread"|"value" [, "rows"|"cols"]]), gui.layout_replicate(n), gui.layout_undo():
// the Layouts panel's fragment controls (Repeat, Replicate, Undo) on the fragment it shows.
int l_layout_repeat(lua_State* L) {
  const auto rows = static_cast<int>(luaL_checkinteger(L, 1)), cols = static_cast<int>(luaL_checkinteger(L, 2));
  const std::string_view on = luaL_optstring(L, 3, "value"), order = luaL_optstring(L, 4, "rows");
  if (on != "thread" && on != "value") lua::raise("gui.layout_repeat: copies go on \"thread\" or \"value\" (got '%s')", on.data());
  if (order != "rows" && order != "cols") lua::raise("gui.layout_repeat: order is \"rows\" or \"cols\" (got '%s')", order.data());
  check(app_of(L).layouts.repeat(rows, cols, on == "thread", order == "rows"));
  return 0;
}
int l_layout_replicate(lua_State* L) {
  check(app_of(L).layouts.replicate(static_cast<int>(luaL_checkinteger(L, 1))));
  return 0;
}
int l_layout_undo(lua_State* L) {
  check(app_of(L).layouts.undo_op());
  return 0;
}

// gui.layout_grid() -> {spec, error, rows, cols, threads, values, replication}: what the Layouts panel draws.
int l_layout_grid(lua_State* L) {
  LayoutPanel& p = app_of(L).layouts;
  const viz::LayoutGrid& g = p.grid();
  lua_newtable(L);
  lua_pushstring(L, p.spec().c_str());
  lua_setfield(L, -2, "spec");
  lua_pushstring(L, p.error().c_str());
  lua_setfield(L, -2, "error");
  const std::pair<const char*, int> fields[] = {{"rows", g.rows},
                                                {"cols", g.cols},
                                                {"threads", g.num_threads()},
                                                {"values", g.num_values()},
                                                {"replication", g.replication}};
  for (const auto& [name, v] : fields) {
    lua_pushinteger(L, v);
    lua_setfield(L, -2, name);
  }
  return 1;
}

// gui.layout_compare(spec): a second layout beside the first ("" ends the comparison).
int l_layout_compare(lua_State* L) {
  app_of(L).layouts.set_compare(luaL_checkstring(L, 1));
  return 0;
}

// gui.layout_cells("labels" | "fit" | size): how the Layouts panel sizes its cells.
int l_layout_cells(lua_State* L) {
  check(app_of(L).layouts.set_cells(luaL_tolstring(L, 1, nullptr)));
  return 0;
}

// gui.theme(["dark" | "light"]) -> the theme (after setting it when given): the window's and its plots'.
int l_theme(lua_State* L) {
  App& app = app_of(L);
  if (!lua_isnoneornil(L, 1)) {
    const std::string_view t = luaL_checkstring(L, 1);
    if (t != "dark" && t != "light") lua::raise("gui.theme: \"dark\" or \"light\" (got '%s')", t.data());
    app.set_theme(std::string(t));
  }
  lua_pushstring(L, app.dark() ? "dark" : "light");
  return 1;
}

// gui.shortcuts() -> {{keys=, action=, label=}, ...}: the loop's keyboard shortcuts (as the Kernel menu shows them).
// gui.shortcut(keys): does what the shortcut `keys` ("Ctrl+B") does; raises for keys that are no shortcut.
int l_shortcuts(lua_State* L) {
  nlohmann::json out = nlohmann::json::array();
  for (const Shortcut& k : kShortcuts) out.push_back({{"keys", k.keys}, {"action", k.action}, {"label", k.label}});
  lua::push_json(L, out);
  return 1;
}
int l_shortcut(lua_State* L) {
  const std::string keys = luaL_checkstring(L, 1);
  for (const Shortcut& k : kShortcuts) {
    if (keys != k.keys) continue;
    lua_pushboolean(L, app_of(L).do_action(k.action));
    return 1;
  }
  lua::raise("gui.shortcut: '%s' is no shortcut (gui.shortcuts() lists them)", keys.c_str());
}

// gui.timeline_pin(): the Timeline panel keeps what it shows as A of a comparison (the next timeline is B);
// gui.timeline_unpin() ends it; gui.timeline_view("gantt" | "stats" | "occupancy").
int l_timeline_pin(lua_State* L) {
  if (!app_of(L).timeline.pin()) lua::raise("gui.timeline_pin: no timeline is shown to pin");
  return 0;
}
int l_timeline_unpin(lua_State* L) {
  app_of(L).timeline.unpin();
  return 0;
}
int l_timeline_view(lua_State* L) {
  const std::string_view v = luaL_checkstring(L, 1);
  const int view = v == "gantt" ? 0 : v == "stats" ? 1 : v == "occupancy" ? 2 : -1;
  if (view < 0) lua::raise("gui.timeline_view: \"gantt\", \"stats\" or \"occupancy\" (got '%s')", v.data());
  app_of(L).timeline.set_view(view);
  return 0;
}

int l_compile(lua_State* L) {
  app_of(L).compile();
  return 0;
}

// gui.run("run" | "bench" | "timeline"): queued like the buttons (without a GPU it only says why).
int l_run(lua_State* L) {
  app_of(L).run(luaL_optstring(L, 1, "run"));
  return 0;
}

int l_model_timeline(lua_State* L) {
  App& app = app_of(L);
  app.timeline.model_of_open_kernel(app);
  if (!app.timeline.timeline()) throw std::runtime_error("no model timeline for " + app.workspace().kernel);
  return 0;
}

int l_load_trace(lua_State* L) {
  check(app_of(L).timeline.load_trace(luaL_checkstring(L, 1)));
  return 0;
}

int l_device_profile(lua_State* L) {
  App& app = app_of(L);
  check(app.roofline.load_profile(app, luaL_checkstring(L, 1)));
  return 0;
}

int l_load_runs(lua_State* L) {
  check(app_of(L).roofline.load_runs(luaL_checkstring(L, 1)));
  return 0;
}

int l_open_script(lua_State* L) {
  check(app_of(L).lua.open(luaL_checkstring(L, 1)));
  return 0;
}

int l_run_script(lua_State* L) {
  App& app = app_of(L);
  app.lua.run(app);
  return 0;
}

// gui.panels() -> {"Layouts", "Source", ...}
int l_panels(lua_State* L) {
  lua_createtable(L, static_cast<int>(std::size(kPanels)), 0);
  int i = 0;
  for (const char* p : kPanels) {
    lua_pushstring(L, p);
    lua_rawseti(L, -2, ++i);
  }
  return 1;
}

void push_map(lua_State* L, const std::map<std::string, std::string>& m) {
  lua_createtable(L, 0, static_cast<int>(m.size()));
  for (const auto& [k, v] : m) {
    lua_pushstring(L, v.c_str());
    lua_setfield(L, -2, k.c_str());
  }
}

// gui.state() -> {kernel, config = {..}, problem = {..}, tab, valid, reason, layout, script}: what the app shows.
int l_state(lua_State* L) {
  App& app = app_of(L);
  Workspace& w = app.workspace();
  lua_newtable(L);
  lua_pushstring(L, w.kernel.c_str());
  lua_setfield(L, -2, "kernel");
  push_map(L, app.config());
  lua_setfield(L, -2, "config");
  push_map(L, app.problem());
  lua_setfield(L, -2, "problem");
  lua_pushstring(L, w.tab.c_str());
  lua_setfield(L, -2, "tab");
  lua_pushboolean(L, app.instance().ok());
  lua_setfield(L, -2, "valid");
  lua_pushstring(L, app.instance().status().message().c_str());
  lua_setfield(L, -2, "reason");
  lua_pushstring(L, app.layouts.spec().c_str());
  lua_setfield(L, -2, "layout");
  lua_pushstring(L, app.lua.path().c_str());
  lua_setfield(L, -2, "script");
  // The last compile: {ok, error, errors = {{file, line, message}, ...}, registers} (nil before any).
  const CompileResult& c = app.compiled();
  if (c.compiled || !c.error.empty()) {
    lua_newtable(L);
    lua_pushboolean(L, c.compiled.has_value());
    lua_setfield(L, -2, "ok");
    lua_pushstring(L, c.error.c_str());
    lua_setfield(L, -2, "error");
    if (c.compiled) {
      lua_pushinteger(L, c.compiled->resources.registers);
      lua_setfield(L, -2, "registers");
    }
    lua_newtable(L);
    int i = 0;
    for (const auto& [file, lines] : c.error_lines)
      for (const auto& [line, msg] : lines) {
        lua_newtable(L);
        lua_pushstring(L, file.c_str());
        lua_setfield(L, -2, "file");
        lua_pushinteger(L, line);
        lua_setfield(L, -2, "line");
        lua_pushstring(L, msg.c_str());
        lua_setfield(L, -2, "message");
        lua_rawseti(L, -2, ++i);
      }
    lua_setfield(L, -2, "errors");
    lua_setfield(L, -2, "compile");
  }
  // SASS of the last compile, once asked for (gui.sass()).
  const App::Sass& sass = app.sass();
  if (!sass.key.empty()) {
    std::size_t lines = 0;
    for (char ch : sass.text) lines += ch == '\n';
    lua::push_json(L, {{"pending", sass.pending}, {"tool", sass.tool}, {"text", sass.text}, {"lines", lines},
                  {"error", sass.error}});
    lua_setfield(L, -2, "sass");
  }
  // The Results table: how many rows, how many shown (filter), loading, the store's error.
  lua::push_json(L, {{"rows", app.results.rows().size()}, {"shown", app.results.order().size()},
                {"loading", app.results.loading()}, {"error", app.results.error()}});
  lua_setfield(L, -2, "results");
  return 1;
}

// gui.wait([seconds = 120]): lets queued compiles and runs finish (their results land in the panels).
int l_wait(lua_State* L) {
  if (!app_of(L).wait_for_jobs(luaL_optnumber(L, 1, 120)))
    throw std::runtime_error("gui.wait: background work still running after the timeout");
  return 0;
}

// gui.results_history([kernel]) -> the Results table's rows (store history and this session's unstored runs), in
// the table's order: {key, id, session_run, kernel, status, config, problem, median_ms, tflops, ...} (no "record").
int l_results_history(lua_State* L) {
  App& app = app_of(L);
  const std::string kernel = luaL_optstring(L, 1, "");
  nlohmann::json out = nlohmann::json::array();
  for (std::size_t i : app.results.order()) {
    const HistoryRow& h = app.results.rows()[i];
    if (!kernel.empty() && h.run.kernel != kernel) continue;
    nlohmann::json j = h.run;
    j.erase("record");
    j["key"] = h.key();
    j["session_run"] = h.session_run;
    out.push_back(std::move(j));
  }
  lua::push_json(L, out);
  return 1;
}

// gui.results_filter(kernel | ""): the table's kernel filter.
int l_results_filter(lua_State* L) {
  app_of(L).results.set_filter(luaL_optstring(L, 1, ""));
  return 0;
}

// gui.results_db(path): history from (and recording into) another store file; gui.wait() lets it load.
int l_results_db(lua_State* L) {
  const char* path = luaL_checkstring(L, 1);
  lua::script_context(L).check_write(path, "gui.results_db");
  app_of(L).set_results_db(path);
  return 0;
}

// gui.record_runs(bool): store the app's runs and sweep points (default true; --no-store turns it off).
int l_record_runs(lua_State* L) {
  app_of(L).set_record_runs(lua_toboolean(L, 1));
  return 0;
}

// gui.compare(a, b) -> compare_runs' table {a, b, config, problem, metrics = {name = {a, b, ratio}}, ...}; a and b
// are row keys (store ids; minus the session run id for a run not stored). Ticks them in the table.
int l_compare(lua_State* L) {
  App& app = app_of(L);
  const lua_Integer a = luaL_checkinteger(L, 1), b = luaL_checkinteger(L, 2);
  if (!app.results.pick(a, b))
    throw std::runtime_error("gui.compare: no row " + std::to_string(a) + " or " + std::to_string(b) +
                             " in the Results table (gui.results_history() lists them)");
  lua::push_json(L, app.results.comparison());
  return 1;
}

// gui.sweep{space = "block_M=64,128;block_N=64,128", gpus = "all" | "0,1", x =, y =, metric =} or gui.sweep(space):
// starts a sweep of the open kernel like the Start button (gui.wait() waits for it); x, y, metric choose the heat map.
int l_sweep(lua_State* L) {
  App& app = app_of(L);
  std::string space, gpus, x, y, metric;
  if (lua_istable(L, 1)) {
    space = lua::opt_string_field(L, 1, "space");
    gpus = lua::opt_string_field(L, 1, "gpus");
    x = lua::opt_string_field(L, 1, "x");
    y = lua::opt_string_field(L, 1, "y");
    metric = lua::opt_string_field(L, 1, "metric");
  } else {
    space = luaL_checkstring(L, 1);
  }
  if (space.empty()) throw std::runtime_error("gui.sweep: space: expected 'name=v1,v2;name=v1,v2'");
  std::snprintf(app.sweep.space, sizeof app.sweep.space, "%s", space.c_str());
  std::snprintf(app.sweep.gpus, sizeof app.sweep.gpus, "%s", gpus.c_str());
  app.sweep.set_axes(x, y, metric);
  check(app.start_sweep(space, gpus));
  return 0;
}

int l_stop_sweep(lua_State* L) {
  app_of(L).stop_sweep();
  return 0;
}

// gui.sweep_state() -> {running, stopping, id, kernel, space, done, total, stored, any_ran, summary, error,
// points = {to_json(SweepPoint)...}, x, y, metric, heatmap = {x_values, y_values, cells = {{x, y, value, status}},
// best, min, max} | heatmap_error}
int l_sweep_state(lua_State* L) {
  App& app = app_of(L);
  const SweepState& s = app.sweep_state();
  nlohmann::json j = {{"running", s.running}, {"stopping", s.stopping}, {"from_store", s.from_store}, {"id", s.id}, {"kernel", s.kernel},
                      {"space", s.space_text}, {"done", s.done}, {"total", s.total}, {"stored", s.stored},
                      {"any_ran", s.any_ran}, {"summary", s.summary}, {"error", s.error}, {"points", s.points}};
  const viz::HeatmapScene* h = s.points.empty() ? nullptr : app.sweep.heatmap(app);  // also picks default axes
  j["x"] = app.sweep.x();
  j["y"] = app.sweep.y();
  j["metric"] = app.sweep.metric();
  if (!s.points.empty()) {
    if (h) {
      nlohmann::json cells = nlohmann::json::array();
      for (const auto& c : h->cells)
        cells.push_back({{"x", c.x}, {"y", c.y}, {"value", c.value ? nlohmann::json(*c.value) : nlohmann::json()},
                         {"status", c.status}, {"records", c.records}});
      j["heatmap"] = {{"x_values", h->x_values}, {"y_values", h->y_values}, {"cells", cells}, {"min", h->min},
                      {"max", h->max}, {"best", h->best ? nlohmann::json(*h->best + 1) : nlohmann::json()}};
    } else {
      j["heatmap_error"] = app.sweep.heatmap_error();
    }
  }
  lua::push_json(L, j);
  return 1;
}

// gui.sass([show = true]): disassembles the last compile's cubin (nvdisasm or cuobjdump) and shows SASS in the PTX
// tab; after gui.wait(), gui.state().sass = {tool, text, lines, error}.
int l_sass(lua_State* L) {
  App& app = app_of(L);
  if (!app.compiled().compiled) throw std::runtime_error("gui.sass: nothing compiled yet (gui.compile(); gui.wait())");
  app.source.show_sass = lua_isnone(L, 1) || lua_toboolean(L, 1);
  app.disassemble();
  return 0;
}

// gui.wait_sweep(n [, seconds = 600]): lets the sweep run until n points have arrived (or it ended).
int l_wait_sweep(lua_State* L) {
  App& app = app_of(L);
  const auto n = static_cast<std::size_t>(luaL_checkinteger(L, 1));
  if (!app.wait_until([&] { return !app.sweep_state().running || app.sweep_state().points.size() >= n; },
                      luaL_optnumber(L, 2, 600)))
    throw std::runtime_error("gui.wait_sweep: fewer than " + std::to_string(n) + " points after the timeout");
  return 0;
}

// gui.sweeps() -> the sweeps recorded in the store {{id, kernel, runs, space, created, updated}, ...} (waits for
// the store's thread); gui.show_sweep(id): a recorded sweep's rows in the Sweep panel (gui.wait(), then
// gui.sweep_state()).
int l_sweeps(lua_State* L) {
  App& app = app_of(L);
  app.load_sweeps();
  if (!app.wait_for_jobs(120)) throw std::runtime_error("gui.sweeps: the store did not answer");
  nlohmann::json out = nlohmann::json::array();
  for (const auto& s : app.sweep.stored_sweeps())
    out.push_back({{"id", s.id}, {"kernel", s.kernel}, {"runs", s.runs}, {"space", s.space}, {"created", s.created},
                   {"updated", s.updated}});
  lua::push_json(L, out);
  return 1;
}

// gui.sweep_axes(x, y [, metric]): the heat map's axes (config parameters) and metric.
int l_sweep_axes(lua_State* L) {
  app_of(L).sweep.set_axes(luaL_checkstring(L, 1), luaL_checkstring(L, 2), luaL_optstring(L, 3, ""));
  return 0;
}

int l_show_sweep(lua_State* L) {
  check(app_of(L).show_stored_sweep(luaL_checkstring(L, 1)));
  return 0;
}

// gui.screenshot(panel, path): in test mode (--frames N), once the script and the background work are done, shows
// `panel` for N frames and writes the window as PNG to `path`; several calls are taken in order, one process.
int l_screenshot(lua_State* L) {
  App& app = app_of(L);
  const std::string panel = luaL_checkstring(L, 1), path = luaL_checkstring(L, 2);
  lua::script_context(L).check_write(path, "gui.screenshot");
  check(app.show_panel(panel, false));
  app.screenshots.push_back({panel, path});
  return 0;
}

// gui.measure_ceilings(): this GPU's ceilings (cached, else measured in the worker) for the Device and Roofline
// panels, like the Device tab's button; gui.wait() lets it finish, gui.device().ceilings then holds them.
int l_measure_ceilings(lua_State* L) {
  app_of(L).measure_ceilings();
  return 0;
}

// gui.device() -> {has_device, why_no_device, name, arch, ceilings = {hbm_bytes_per_s, bf16_tc_flops, ...} | nil,
// ceilings_from}
int l_device(lua_State* L) {
  App& app = app_of(L);
  nlohmann::json j = {{"has_device", app.has_device()}, {"why_no_device", app.why_no_device()},
                      {"arch", app.limits().arch}, {"ceilings_from", app.ceilings_from()}};
  if (app.has_device()) j["name"] = app.system().devices.front().name;
  if (app.ceilings()) j["ceilings"] = *app.ceilings();
  lua::push_json(L, j);
  return 1;
}

// gui.runs() -> this session's runs, oldest first: {id, kind, kernel, passed, failure, median_ms, tflops, gbps,
// efficiency, rel_error, baseline = {name, median_ms, tflops, error} | nil, timeline_events, timeline_tracks,
// timeline_error, stored_id}
int l_runs(lua_State* L) {
  App& app = app_of(L);
  nlohmann::json out = nlohmann::json::array();
  for (const auto& e : app.runs()) {
    const RunRecord& r = e.record;
    nlohmann::json j = {{"id", e.id}, {"kind", e.kind}, {"kernel", r.kernel}, {"passed", r.passed()},
                        {"failure", r.failure_text()}, {"median_ms", r.time_ms.median}, {"tflops", r.tflops},
                        {"gbps", r.gbps}, {"efficiency", r.efficiency.value}, {"rel_error", r.rel_error()},
                        {"timeline_error", r.timeline_error}, {"stored_id", e.stored_id}};
    if (r.baseline) {
      const double ms = r.baseline->time_ms.median;
      j["baseline"] = {{"name", r.baseline->name}, {"median_ms", ms}, {"error", r.baseline->error},
                       {"tflops", ms > 0 ? r.flops / (ms * 1e-3) * 1e-12 : 0.0}};
    }
    if (e.timeline) {
      j["timeline_events"] = e.timeline->events.size();
      j["timeline_tracks"] = e.timeline->tracks.size();
    }
    out.push_back(std::move(j));
  }
  lua::push_json(L, out);
  return 1;
}

const luaL_Reg kGui[] = {
    {"screenshot", lua::guarded<l_screenshot>},
    {"measure_ceilings", lua::guarded<l_measure_ceilings>},
    {"device", lua::guarded<l_device>},
    {"runs", lua::guarded<l_runs>},
    {"sweeps", lua::guarded<l_sweeps>},
    {"show_sweep", lua::guarded<l_show_sweep>},
    {"sweep_axes", lua::guarded<l_sweep_axes>},
    {"wait_sweep", lua::guarded<l_wait_sweep>},
    {"results_history", lua::guarded<l_results_history>},
    {"results_filter", lua::guarded<l_results_filter>},
    {"results_db", lua::guarded<l_results_db>},
    {"record_runs", lua::guarded<l_record_runs>},
    {"compare", lua::guarded<l_compare>},
    {"sweep", lua::guarded<l_sweep>},
    {"stop_sweep", lua::guarded<l_stop_sweep>},
    {"sweep_state", lua::guarded<l_sweep_state>},
    {"sass", lua::guarded<l_sass>},
    {"state", lua::guarded<l_state>},
    {"wait", lua::guarded<l_wait>},
    {"kernel", lua::guarded<l_kernel>},
    {"config", lua::guarded<l_values<true>>},
    {"problem", lua::guarded<l_values<false>>},
    {"show", lua::guarded<l_show>},
    {"hide", lua::guarded<l_hide>},
    {"layout", lua::guarded<l_layout>},
    {"layout_repeat", lua::guarded<l_layout_repeat>},
    {"layout_replicate", lua::guarded<l_layout_replicate>},
    {"layout_undo", lua::guarded<l_layout_undo>},
    {"layout_grid", lua::guarded<l_layout_grid>},
    {"layout_compare", lua::guarded<l_layout_compare>},
    {"layout_cells", lua::guarded<l_layout_cells>},
    {"theme", lua::guarded<l_theme>},
    {"shortcuts", lua::guarded<l_shortcuts>},
    {"shortcut", lua::guarded<l_shortcut>},
    {"timeline_pin", lua::guarded<l_timeline_pin>},
    {"timeline_unpin", lua::guarded<l_timeline_unpin>},
    {"timeline_view", lua::guarded<l_timeline_view>},
    {"compile", lua::guarded<l_compile>},
    {"run", lua::guarded<l_run>},
    {"model_timeline", lua::guarded<l_model_timeline>},
    {"load_trace", lua::guarded<l_load_trace>},
    {"device_profile", lua::guarded<l_device_profile>},
    {"load_runs", lua::guarded<l_load_runs>},
    {"open_script", lua::guarded<l_open_script>},
    {"run_script", lua::guarded<l_run_script>},
    {"panels", lua::guarded<l_panels>},
    {nullptr, nullptr},
};

}  // namespace

void install_gui_table(lua_State* L, App& app) {
  lua_newtable(L);
  lua_pushlightuserdata(L, &app);
  luaL_setfuncs(L, kGui, 1);
  lua_setglobal(L, "gui");
}

Status run_gui_script(App& app, const std::string& path) {
  lua::RunOptions o;
  o.script = app.script_options();
  o.setup = [&app](lua_State* L) { install_gui_table(L, app); };
  return lua::run_file(path, o);
}

}  // namespace tl::gui
