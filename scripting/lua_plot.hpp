// The Lua plot object every tl.plot.* function returns: a viz::Scene with :save(file) and :size().
#pragma once

#include <string>

#include "viz/scene.hpp"

struct lua_State;

namespace tl::lua {

// Pushes a plot object owning `scene`. `kind` names it in messages and tostring ("layout", "roofline", ...).
void push_plot(lua_State* L, viz::Scene scene, const std::string& kind);
// The scene of the plot object at `index`; raises a Lua argument error when it is not one.
const viz::Scene& check_plot(lua_State* L, int index);
// Pushes the `tl.plot` table (created on first call, stored in the `tl` module table at `tl_index`).
void push_plot_table(lua_State* L, int tl_index);

}  // namespace tl::lua
