// C++ objects as Lua full userdata: a metatable scripts cannot reach and a finalizer that runs the destructor once.
#pragma once

#include <new>
#include <utility>

extern "C" {
#include <lauxlib.h>
#include <lua.h>
}

namespace tl::lua {

// The object and whether its destructor has run. A script that calls __gc itself (through the debug library of
// --unsafe) must meet a Lua error on the next use, never freed memory.
template <class T>
struct Boxed {
  alignas(T) unsigned char storage[sizeof(T)];
  bool live;
  T& get() { return *std::launder(reinterpret_cast<T*>(storage)); }
};

// Creates the metatable of `type` in the registry (luaL_newmetatable) and leaves it on the stack. Its __metatable
// field makes getmetatable() answer a placeholder, so no script reaches __gc or swaps __index. Returns true when
// the table is new, so the caller fills it (luaL_newmetatable's convention).
inline bool new_object_type(lua_State* L, const char* type) {
  if (!luaL_newmetatable(L, type)) return false;
  lua_pushfstring(L, "%s (protected)", type);
  lua_setfield(L, -2, "__metatable");
  return true;
}

// The object at `index`: raises when it is not a `type` or was already freed (before any C++ object exists).
template <class T>
T& check_object(lua_State* L, int index, const char* type) {
  auto* box = static_cast<Boxed<T>*>(luaL_checkudata(L, index, type));
  if (!box->live) luaL_error(L, "this %s was already freed", type);
  return box->get();
}

// Like check_object, but nullptr when the value is no `type`.
template <class T>
T* test_object(lua_State* L, int index, const char* type) {
  auto* box = static_cast<Boxed<T>*>(luaL_testudata(L, index, type));
  if (!box) return nullptr;
  if (!box->live) luaL_error(L, "this %s was already freed", type);
  return &box->get();
}

// Pushes a new `type` object built from `args`; the metatable must exist (new_object_type).
template <class T, class... Args>
T& push_object(lua_State* L, const char* type, Args&&... args) {
  auto* box = static_cast<Boxed<T>*>(lua_newuserdatauv(L, sizeof(Boxed<T>), 0));
  box->live = false;
  luaL_setmetatable(L, type);
  new (box->storage) T{std::forward<Args>(args)...};
  box->live = true;
  return box->get();
}

// __gc of a `type` object (the type name is upvalue 1): destroys it once; a second call raises.
template <class T>
int gc_object(lua_State* L) {
  T& object = check_object<T>(L, 1, lua_tostring(L, lua_upvalueindex(1)));
  auto* box = static_cast<Boxed<T>*>(lua_touserdata(L, 1));
  box->live = false;
  object.~T();
  return 0;
}

// Sets __gc = gc_object<T> in the metatable on the top of the stack.
template <class T>
void set_object_gc(lua_State* L, const char* type) {
  lua_pushstring(L, type);
  lua_pushcclosure(L, gc_object<T>, 1);
  lua_setfield(L, -2, "__gc");
}

}  // namespace tl::lua
