// Lua <-> JSON conversion: arrays are tables with keys exactly 1..n, everything else is an object.
#include "scripting/lua_json.hpp"

#include <cmath>
#include <stdexcept>
#include <string>

extern "C" {
#include <lauxlib.h>
#include <lua.h>
}

namespace tl::lua {

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

nlohmann::json convert(lua_State* L, int index, int depth) {
  if (depth > 64) throw std::runtime_error("table nested more than 64 deep (a cycle?) cannot become JSON");
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
      // An array when the keys are exactly 1..n.
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
          arr.push_back(convert(L, -1, depth + 1));
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
        obj[key] = convert(L, -1, depth + 1);
        lua_pop(L, 1);
      }
      return obj;
    }
    default:
      throw std::runtime_error(std::string("a ") + luaL_typename(L, index) + " cannot become JSON");
  }
}

}  // namespace

nlohmann::json to_json(lua_State* L, int index) { return convert(L, index, 0); }

}  // namespace tl::lua
