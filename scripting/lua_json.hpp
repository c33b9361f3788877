// Conversions between Lua values and JSON (nlohmann), used by every binding that returns records.
#pragma once

#include <cstddef>
#include <string_view>

#include <nlohmann/json.hpp>

struct lua_State;

namespace tl::lua {

// How deep arrays and objects may nest, either way: deeper documents are refused before any recursion.
constexpr int k_max_json_depth = 512;

// The byte offset at which `text` opens an array or object nested deeper than k_max_json_depth, or npos. A scan
// of the text alone, so tl.json_decode can refuse such a document before it is parsed.
std::size_t json_too_deep_at(std::string_view text);

// Pushes JSON as a Lua value: objects and arrays become tables (arrays 1-based), null becomes nil.
void push_json(lua_State* L, const nlohmann::json& value);
// Reads the Lua value at `index`; a table with keys 1..n only becomes an array. Throws std::runtime_error
// on values JSON cannot hold (functions, userdata, a table that contains itself, nesting past k_max_json_depth).
nlohmann::json to_json(lua_State* L, int index);

}  // namespace tl::lua
