// tl.sweep: registered into the `tl` module table by open_tl.
#pragma once

struct lua_State;

namespace tl::lua {

// Sets tl.sweep in the table at `tl_index`.
void register_sweep(lua_State* L, int tl_index);

}  // namespace tl::lua
