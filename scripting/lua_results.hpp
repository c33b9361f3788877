// tl.results (query, compare) and tl.plot.heatmap: registered into the `tl` module table by open_tl.
#pragma once

#include <string>

struct lua_State;

namespace tl::lua {

// Sets tl.results and tl.plot.heatmap in the table at `tl_index`.
void register_results(lua_State* L, int tl_index);

// The string field `key` of the table at `t`, "" when absent; throws std::runtime_error naming `who` and the key
// when it is something else (call inside guarded<>). Shared by tl.results and tl.sweep.
std::string string_option(lua_State* L, int t, const char* key, const std::string& who);

}  // namespace tl::lua
