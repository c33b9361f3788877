// `tl.define_kernel{...}`: user kernels (CUDA source + Lua callbacks) in the same registry as the library's.
#pragma once

struct lua_State;

namespace tl::lua {

// Adds define_kernel to the `tl` table at `tl_index`.
void open_define(lua_State* L, int tl_index);

}  // namespace tl::lua
