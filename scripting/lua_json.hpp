// Conversions between Lua values and JSON (nlohmann), used by every binding that returns records.
#pragma once

#include <nlohmann/json.hpp>

struct lua_State;

namespace tl::lua {

// Pushes JSON as a Lua value: objects and arrays become tables (arrays 1-based), null becomes nil.
void push_json(lua_State* L, const nlohmann::json& value);
// Reads the Lua value at `index`; a table with keys 1..n only becomes an array. Throws std::runtime_error
// on values JSON cannot hold (functions, userdata, cycles).
nlohmann::json to_json(lua_State* L, int index);

}  // namespace tl::lua
