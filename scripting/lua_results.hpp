// tl.results (query, compare) and tl.plot.heatmap: registered into the `tl` module table by open_tl.
#pragma once

struct lua_State;

namespace tl::lua {

// Sets tl.results and tl.plot.heatmap in the table at `tl_index`.
void register_results(lua_State* L, int tl_index);

}  // namespace tl::lua
