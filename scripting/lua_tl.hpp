// The `tl` Lua module: opens it into a state (as global `tl` and for require "tl").
#pragma once

struct lua_State;

namespace tl::lua {

int open_tl(lua_State* L);  // leaves the module table on the stack

}  // namespace tl::lua
