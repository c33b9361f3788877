// Helpers every binding file uses: exception-safe entry points and argument checks.
#pragma once

#include <cstdio>
#include <exception>
#include <stdexcept>
#include <string>

extern "C" {
#include <lauxlib.h>
#include <lua.h>
}

namespace tl::lua {

// Wraps a binding so that a C++ exception never meets lua_error's longjmp: the exception is caught,
// its message copied out, every C++ frame unwound, and only then is the Lua error raised.
template <int (*F)(lua_State*)>
int guarded(lua_State* L) {
  char message[1024];
  try {
    return F(L);
  } catch (const std::exception& e) {
    std::snprintf(message, sizeof(message), "%s", e.what());
  } catch (...) {
    std::snprintf(message, sizeof(message), "unknown C++ exception");
  }
  return luaL_error(L, "%s", message);
}

// The string field `key` of the table at `t`, "" when absent; throws std::runtime_error naming `who` and the key
// when it is something else (bindings run under guarded, so the throw becomes a Lua error).
inline std::string string_field(lua_State* L, int t, const char* key, const std::string& who) {
  lua_getfield(L, t, key);
  const int type = lua_type(L, -1);
  std::string s = type == LUA_TSTRING ? lua_tostring(L, -1) : "";
  lua_pop(L, 1);
  if (type != LUA_TNIL && type != LUA_TSTRING)
    throw std::runtime_error(who + ": " + key + ": expected a string, got " + lua_typename(L, type));
  return s;
}

}  // namespace tl::lua
