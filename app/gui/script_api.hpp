// The scripted test mode: a Lua script (with `tl`) drives the app through a `gui` table before the first frame.
#pragma once

#include <string>

#include "runtime/core/status.hpp"

struct lua_State;

namespace tl::gui {

class App;

// gui.kernel(name), gui.config{k=v}, gui.problem{k=v}, gui.show(panel), gui.hide(panel),
// gui.layout(spec [, access [, colour]]), gui.compile(), gui.run(kind), gui.model_timeline(), gui.load_trace(path),
// gui.device_profile(path), gui.load_runs(path), gui.open_script(path), gui.run_script(), gui.panels(),
// gui.wait([seconds]) (let queued compiles/runs finish),
// gui.state() -> {kernel, config, problem, tab, valid, reason, layout, script, compile = {ok, error, errors}}.
void install_gui_table(lua_State* L, App& app);
// Runs FILE on the UI thread with `tl` and `gui`, under the app's script limits and sandbox (AppOptions::script); a
// Lua error or a limit comes back as "FILE:LINE: message" + traceback.
Status run_gui_script(App& app, const std::string& path);

}  // namespace tl::gui
