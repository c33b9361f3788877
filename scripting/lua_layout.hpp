// `tl.layout`, `tl.layouts`, `tl.banks`, `tl.plot.layout`, `tl.plot.banks`: kernels/tile layouts from Lua.
#pragma once

struct lua_State;

namespace tl::lua {

// Adds layout, layouts, banks to the `tl` table at `tl_index`, and layout, banks to its `plot` table.
void open_layout(lua_State* L, int tl_index);

}  // namespace tl::lua
