// `tl.kernels`, `tl.kernel(name)` and `tl.device`: the kernel registry and the Session from Lua.
#pragma once

#include <map>
#include <string>

#include "scripting/lua_values.hpp"
#include "session/session.hpp"

struct lua_State;

namespace tl::lua {

// Adds kernels, kernel and device to the `tl` table at `tl_index`.
void open_kernels(lua_State* L, int tl_index);

// The fields timer= ("events", "cupti", "graph") and graph_launches= of the options table at `index` (k:run,
// tl.sweep) into `timing`; raises naming `who` and the field on a wrong value.
void read_timing_fields(lua_State* L, int index, const char* who, TimingOptions& timing);

// The result table of k:run (times, rates, efficiency, errors, resources, baseline, timeline, record).
void push_run_result(lua_State* L, const Session::Bench& bench);

}  // namespace tl::lua
