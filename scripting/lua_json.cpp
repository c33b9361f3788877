// Lua <-> JSON conversion: arrays are tables with keys exactly 1..n, everything else is an object.
#include "scripting/lua_json.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

extern "C" {
#include <lauxlib.h>
#include <lua.h>
}

namespace tl::lua {

std::size_t json_too_deep_at(std::string_view text) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > k_max_json_depth) return i;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return std::string_view::npos;
}

void push_json(lua_State* L, const nlohmann::json& v) {
  luaL_checkstack(L, 4, "JSON value too deep");
  switch (v.type()) {
    case nlohmann::json::value_t::null: lua_pushnil(L); break;
    case nlohmann::json::value_t::boolean: lua_pushboolean(L, v.get<bool>()); break;
    case nlohmann::json::value_t::number_integer: lua_pushinteger(L, v.get<std::int64_t>()); break;
    case nlohmann::json::value_t::number_unsigned:
      lua_pushinteger(L, static_cast<lua_Integer>(v.get<std::uint64_t>()));
      break;
    case nlohmann::json::value_t::number_float: lua_pushnumber(L, v.get<double>()); break;
    case nlohmann::json::value_t::string: {
      const auto& s = v.get_ref<const std::string&>();
      lua_pushlstring(L, s.data(), s.size());
      break;
    }
    case nlohmann::json::value_t::array: {
      lua_createtable(L, static_cast<int>(v.size()), 0);
      lua_Integer i = 1;
      for (const auto& item : v) {
        push_json(L, item);
        lua_rawseti(L, -2, i++);
      }
      break;
    }
    case nlohmann::json::value_t::object: {
      lua_createtable(L, 0, static_cast<int>(v.size()));
      for (const auto& [key, item] : v.items()) {
        push_json(L, item);
        lua_setfield(L, -2, key.c_str());
      }
      break;
    }
    default: lua_pushnil(L); break;
  }
}

namespace {

nlohmann::json convert_table(lua_State* L, int index, std::vector<const void*>& path);

// `path` holds the tables being converted, outermost first: meeting one again is a cycle.
nlohmann::json convert(lua_State* L, int index, std::vector<const void*>& path) {
  index = lua_absindex(L, index);
  switch (lua_type(L, index)) {
    case LUA_TNIL: return nullptr;
    case LUA_TBOOLEAN: return static_cast<bool>(lua_toboolean(L, index));
    case LUA_TNUMBER:
      if (lua_isinteger(L, index)) return static_cast<std::int64_t>(lua_tointeger(L, index));
      return lua_tonumber(L, index);
    case LUA_TSTRING: {
      size_t len = 0;
      const char* s = lua_tolstring(L, index, &len);
      return std::string(s, len);
    }
    case LUA_TTABLE: {
      const void* table = lua_topointer(L, index);
      if (std::find(path.begin(), path.end(), table) != path.end())
        throw std::runtime_error("a table that contains itself (a cycle) cannot become JSON");
      if (path.size() >= static_cast<std::size_t>(k_max_json_depth))
        throw std::runtime_error("tables nested deeper than " + std::to_string(k_max_json_depth) +
                                 " levels cannot become JSON");
      if (!lua_checkstack(L, 4)) throw std::runtime_error("no Lua stack left to convert a table to JSON");
      path.push_back(table);
      nlohmann::json j = convert_table(L, index, path);
      path.pop_back();
      return j;
    }
    default:
      throw std::runtime_error(std::string("a ") + luaL_typename(L, index) + " cannot become JSON");
  }
}

// A table: an array when its keys are exactly 1..n, else an object.
nlohmann::json convert_table(lua_State* L, int index, std::vector<const void*>& path) {
  lua_Integer n = static_cast<lua_Integer>(lua_rawlen(L, index));
  lua_Integer keys = 0;
  bool all_int = true;
  lua_pushnil(L);
  while (lua_next(L, index)) {
    ++keys;
    if (!lua_isinteger(L, -2)) all_int = false;
    lua_pop(L, 1);
  }
  if (all_int && keys == n && n > 0) {
    auto arr = nlohmann::json::array();
    for (lua_Integer i = 1; i <= n; ++i) {
      lua_rawgeti(L, index, i);
      arr.push_back(convert(L, -1, path));
      lua_pop(L, 1);
    }
    return arr;
  }
  auto obj = nlohmann::json::object();
  lua_pushnil(L);
  while (lua_next(L, index)) {
    std::string key;
    if (lua_type(L, -2) == LUA_TSTRING) {
      key = lua_tostring(L, -2);
    } else if (lua_isinteger(L, -2)) {
      key = std::to_string(lua_tointeger(L, -2));
    } else {
      std::string type = luaL_typename(L, -2);
      lua_pop(L, 2);
      throw std::runtime_error("table key of type " + type + " cannot become JSON");
    }
    obj[key] = convert(L, -1, path);
    lua_pop(L, 1);
  }
  return obj;
}

}  // namespace

nlohmann::json to_json(lua_State* L, int index) {
  std::vector<const void*> path;
  return convert(L, index, path);
}

}  // namespace tl::lua
