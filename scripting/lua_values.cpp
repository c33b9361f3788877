// Problem and config values between Lua tables and the runtime's key=value maps and typed Values.
#include "scripting/lua_values.hpp"

#include <cmath>

extern "C" {
#include <lauxlib.h>
#include <lua.h>
}

#include "scripting/lua_binding.hpp"

namespace tl::lua {

bool whole_int64(double v) { return std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 0x1p63; }

std::map<std::string, std::string> check_key_values(lua_State* L, int index, const char* what) {
  std::map<std::string, std::string> out;
  if (lua_isnoneornil(L, index)) return out;
  if (!lua_istable(L, index)) raise("%s must be a table of key = value (got %s)", what, luaL_typename(L, index));
  index = lua_absindex(L, index);
  lua_pushnil(L);
  while (lua_next(L, index)) {
    if (lua_type(L, -2) != LUA_TSTRING) raise("%s: keys must be parameter names (got a %s key)", what, luaL_typename(L, -2));
    std::string key = lua_tostring(L, -2);
    std::string value;
    switch (lua_type(L, -1)) {
      case LUA_TNUMBER:
        if (lua_isinteger(L, -1)) {
          value = std::to_string(lua_tointeger(L, -1));
        } else {
          double v = lua_tonumber(L, -1);
          if (!whole_int64(v))
            raise("%s: '%s' must be a whole number (got %g)", what, key.c_str(), v);
          value = std::to_string(static_cast<long long>(v));
        }
        break;
      case LUA_TBOOLEAN: value = lua_toboolean(L, -1) ? "true" : "false"; break;
      case LUA_TSTRING: value = lua_tostring(L, -1); break;
      default:
        raise("%s: '%s' must be a number, string or boolean (got %s)", what, key.c_str(), luaL_typename(L, -1));
    }
    out[key] = value;
    lua_pop(L, 1);
  }
  return out;
}

void push_values(lua_State* L, const Schema& schema, const Values& values) {
  lua_createtable(L, 0, static_cast<int>(values.map().size()));
  for (const auto& [key, text] : values.map()) {
    const ParamSpec* p = schema.find(key);
    if (p && p->type == ParamType::int_) lua_pushinteger(L, values.integer(key));
    else if (p && p->type == ParamType::bool_) lua_pushboolean(L, values.boolean(key));
    else lua_pushstring(L, text.c_str());
    lua_setfield(L, -2, key.c_str());
  }
}

}  // namespace tl::lua
