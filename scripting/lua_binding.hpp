// Helpers every binding file uses: exception-safe entry points and argument checks.
#pragma once

#include <cstdarg>
#include <cstdio>
#include <exception>
#include <stdexcept>

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

}  // namespace tl::lua
