// Helpers every binding file uses: exception-safe entry points and argument checks.
#pragma once

#include <cstdarg>
#include <cstdio>
#include <exception>
#include <stdexcept>
#include <string>

extern "C" {
#include <lauxlib.h>
#include <lua.h>
}

#include "scripting/lua_memory.hpp"

namespace tl::lua {

// Wraps a binding so that a C++ exception never meets lua_error's longjmp: the exception is caught,
// its message copied out, every C++ frame unwound, and only then is the Lua error raised. While it runs, its Lua
// allocations may pass --max-memory (a memory error would longjmp through its frames); once it has returned, a
// limit it passed stops the script.
template <int (*F)(lua_State*)>
int guarded(lua_State* L) {
  char message[1024];
  MemoryBudget* budget = memory_budget(L);
  const bool nested = budget && budget->in_binding;
  if (budget) budget->in_binding = true;
  int results = -1;
  try {
    results = F(L);
  } catch (const std::exception& e) {
    std::snprintf(message, sizeof(message), "%s", e.what());
  } catch (...) {
    std::snprintf(message, sizeof(message), "unknown C++ exception");
  }
  if (budget) {
    budget->in_binding = nested;
    if (budget->exceeded && !nested) {
      std::snprintf(message, sizeof(message), "%s", budget->stop_message().c_str());
      results = -1;
    }
  }
  if (results >= 0) return results;
  return luaL_error(L, "%s", message);
}

// lua_pcall for a binding that calls back into the script (a filter, a reference function): the callback runs under
// the memory limit like any script code, and the binding's allowance comes back when it returns.
inline int call_script(lua_State* L, int nargs, int nresults) {
  MemoryBudget* budget = memory_budget(L);
  const bool in_binding = budget && budget->in_binding;
  if (budget) budget->in_binding = false;
  const int status = lua_pcall(L, nargs, nresults, 0);
  if (budget) budget->in_binding = in_binding;
  return status;
}

// Raises a script error from inside a guarded binding, printf-style: a C++ exception, so every C++ object on the
// way out is destroyed before guarded<> turns it into a Lua error (luaL_error would longjmp past them).
[[noreturn]] inline void raise(const char* format, ...) {
  char message[1024];
  va_list args;
  va_start(args, format);
  std::vsnprintf(message, sizeof(message), format, args);
  va_end(args);
  throw std::runtime_error(message);
}

// Optional fields of the options table at `index`: an absent table or a nil field gives `def`; a field of the
// wrong type raises naming it (call inside guarded<>).
inline std::string opt_string_field(lua_State* L, int index, const char* key, const std::string& def = {}) {
  if (!lua_istable(L, index)) return def;
  lua_getfield(L, index, key);
  std::string v = def;
  if (lua_type(L, -1) == LUA_TSTRING) v = lua_tostring(L, -1);
  else if (!lua_isnil(L, -1)) raise("'%s' must be a string (got %s)", key, luaL_typename(L, -1));
  lua_pop(L, 1);
  return v;
}

inline double opt_number_field(lua_State* L, int index, const char* key, double def) {
  if (!lua_istable(L, index)) return def;
  lua_getfield(L, index, key);
  double v = def;
  if (lua_type(L, -1) == LUA_TNUMBER) v = lua_tonumber(L, -1);
  else if (!lua_isnil(L, -1)) raise("'%s' must be a number (got %s)", key, luaL_typename(L, -1));
  lua_pop(L, 1);
  return v;
}

inline lua_Integer opt_integer_field(lua_State* L, int index, const char* key, lua_Integer def) {
  if (!lua_istable(L, index)) return def;
  lua_getfield(L, index, key);
  lua_Integer v = def;
  if (lua_isinteger(L, -1)) v = lua_tointeger(L, -1);
  else if (!lua_isnil(L, -1)) raise("'%s' must be an integer (got %s)", key, luaL_typename(L, -1));
  lua_pop(L, 1);
  return v;
}

inline bool opt_bool_field(lua_State* L, int index, const char* key, bool def) {
  if (!lua_istable(L, index)) return def;
  lua_getfield(L, index, key);
  bool v = def;
  if (lua_isboolean(L, -1)) v = lua_toboolean(L, -1);
  else if (!lua_isnil(L, -1)) raise("'%s' must be a boolean (got %s)", key, luaL_typename(L, -1));
  lua_pop(L, 1);
  return v;
}

}  // namespace tl::lua
