// Timelines and rooflines from Lua: the timeline object, `tl.model_timeline`, `tl.load_timeline`,
// `tl.plot.timeline` and `tl.plot.roofline`.
#pragma once

#include "runtime/trace/timeline.hpp"

struct lua_State;

namespace tl::lua {

// Pushes a timeline object (fields kernel, model, duration_ns, events, ...; methods :stats, :trace, :plot).
void push_timeline(lua_State* L, Timeline timeline);
// Adds model_timeline, load_timeline to the `tl` table at `tl_index`, and timeline, roofline to its `plot` table.
void open_timeline(lua_State* L, int tl_index);

}  // namespace tl::lua
