// The default environment of a script: the standard library less what can crash the process, escape the limits,
// start programs or write outside the allowed folders.
#include "scripting/lua_sandbox.hpp"

#include <cstdio>
#include <cstring>
#include <exception>

extern "C" {
#include <lauxlib.h>
#include <lua.h>
}

#include "scripting/lua_context.hpp"

namespace tl::lua {
namespace {

// What a sandboxed script gets instead of a disabled function: an error naming it and the way out.
int disabled(lua_State* L) {
  return luaL_error(L, "%s is disabled in the sandbox (run the script with --unsafe to allow it)",
                    lua_tostring(L, lua_upvalueindex(1)));
}

void push_disabled(lua_State* L, const char* table, const char* name) {
  lua_pushfstring(L, "%s.%s", table, name);
  lua_pushcclosure(L, disabled, 1);
}

// table[name] = f, with the function it replaces as f's upvalue 1 (when f needs it).
void replace(lua_State* L, const char* table, const char* name, lua_CFunction f) {
  lua_getglobal(L, table);
  if (!lua_istable(L, -1)) {
    lua_pop(L, 1);
    return;
  }
  lua_getfield(L, -1, name);
  lua_pushcclosure(L, f, 1);
  lua_setfield(L, -2, name);
  lua_pop(L, 1);
}

void disable(lua_State* L, const char* table, const char* name) {
  lua_getglobal(L, table);
  if (!lua_istable(L, -1)) {
    lua_pop(L, 1);
    return;
  }
  push_disabled(L, table, name);
  lua_setfield(L, -2, name);
  lua_pop(L, 1);
}

// Calls the function in upvalue 1 with this call's arguments and returns all it returns.
int call_original(lua_State* L) {
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_insert(L, 1);
  lua_call(L, lua_gettop(L) - 1, LUA_MULTRET);
  return lua_gettop(L);
}

// Pushes "file:line: what: writing PATH is outside the allowed folders …" and returns true when `path` may not be
// written; false (nothing pushed) when it may.
bool push_write_refusal(lua_State* L, const char* path, const char* what) {
  ScriptContext& ctx = script_context(L);
  char message[1024] = "";
  try {
    std::snprintf(message, sizeof message, "%s", ctx.write_refusal(path, what).c_str());
  } catch (const std::exception& e) {
    std::snprintf(message, sizeof message, "%s: %s", what, e.what());
  }
  if (!message[0]) return false;
  luaL_where(L, 1);
  lua_pushstring(L, message);
  lua_concat(L, 2);
  return true;
}

// Raises when the path argument at `index` lies outside the allowed folders.
// os.exit([code]): ends the script, not the process (ScriptContext::request_exit). The count hook then fires on every
// instruction, so a pcall around it cannot run on. true or nil is 0 (success), false 1, as Lua's own.
int sandboxed_exit(lua_State* L) {
  int code = 0;
  if (lua_isboolean(L, 1)) code = lua_toboolean(L, 1) ? 0 : 1;
  else if (!lua_isnoneornil(L, 1)) code = static_cast<int>(luaL_checkinteger(L, 1));
  script_context(L).request_exit(code);
  if (lua_Hook hook = lua_gethook(L)) lua_sethook(L, hook, LUA_MASKCOUNT, 1);
  lua_pushfstring(L, "os.exit(%d)", code);
  return lua_error(L);
}

void check_write_arg(lua_State* L, int index, const char* what) {
  if (push_write_refusal(L, luaL_checkstring(L, index), what)) lua_error(L);
}

// io.open(path [, mode]): a mode that writes ("w", "a", any "+") needs an allowed path.
int checked_open(lua_State* L) {
  if (std::strpbrk(luaL_optstring(L, 2, "r"), "wa+")) check_write_arg(L, 1, "io.open");
  return call_original(L);
}

// io.output([file | path]): opening a path makes it the default output file.
int checked_output(lua_State* L) {
  if (lua_isstring(L, 1)) check_write_arg(L, 1, "io.output");
  return call_original(L);
}

int checked_remove(lua_State* L) {
  check_write_arg(L, 1, "os.remove");
  return call_original(L);
}

int checked_rename(lua_State* L) {
  check_write_arg(L, 1, "os.rename");
  check_write_arg(L, 2, "os.rename");
  return call_original(L);
}

// os.tmpname(): the file it makes (in /tmp) is a write like any other; refused, it is removed again.
int checked_tmpname(lua_State* L) {
  call_original(L);
  const char* name = lua_tostring(L, -1);
  if (name && push_write_refusal(L, name, "os.tmpname")) {
    std::remove(name);
    return lua_error(L);
  }
  return 1;
}

// load(chunk [, name [, mode [, env]]]) and loadfile([file [, mode [, env]]]) with the mode argument (`ModeArg`)
// forced to "t": a binary chunk is refused with Lua's own "attempt to load a binary chunk (mode is 't')".
template <int ModeArg>
int text_only(lua_State* L) {
  if (lua_gettop(L) < ModeArg) lua_settop(L, ModeArg);
  lua_pushliteral(L, "t");
  lua_replace(L, ModeArg);
  return call_original(L);
}

// setmetatable(t, mt) with a metatable that has a __gc field: refused. Lua runs finalizers with its debug hooks off
// (during any collection, and at the end of the script when the state closes, after the memory limit is lifted), so
// a finalizer is code no limit can stop: `while true do end` in one hangs tilelab past --timeout and
// --max-instructions. Only setmetatable's own check marks a table for finalization (a __gc added to the metatable
// later marks nothing), and debug.setmetatable is disabled, so this is the one way in.
int checked_setmetatable(lua_State* L) {
  luaL_checktype(L, 1, LUA_TTABLE);  // Lua's own checks, here so that their messages name setmetatable
  luaL_argexpected(L, lua_type(L, 2) == LUA_TNIL || lua_istable(L, 2), 2, "nil or table");
  if (lua_istable(L, 2)) {
    lua_pushliteral(L, "__gc");
    if (lua_rawget(L, 2) != LUA_TNIL)
      return luaL_error(L, "setmetatable: a __gc finalizer is disabled in the sandbox (finalizers run outside the "
                           "script's time, instruction and memory limits; use a to-be-closed variable (local x "
                           "<close>) or run the script with --unsafe)");
    lua_pop(L, 1);
  }
  return call_original(L);
}

int dofile_results(lua_State* L, int, lua_KContext) { return lua_gettop(L) - 1; }

// dofile([file]) of a text chunk; yields through it work as with Lua's own.
int text_dofile(lua_State* L) {
  const char* file = luaL_optstring(L, 1, nullptr);
  lua_settop(L, 1);
  if (luaL_loadfilex(L, file, "t") != LUA_OK) return lua_error(L);
  lua_callk(L, 0, LUA_MULTRET, 0, dofile_results);
  return dofile_results(L, 0, 0);
}

// require's searcher for Lua files (package.searchers[2]), text only: package.searchpath over package.path (the
// package table is upvalue 1), then a text-mode load; returns the chunk and its file, or why nothing was found.
int text_searcher(lua_State* L) {
  const char* name = luaL_checkstring(L, 1);
  lua_getfield(L, lua_upvalueindex(1), "searchpath");
  lua_pushstring(L, name);
  lua_getfield(L, lua_upvalueindex(1), "path");
  lua_call(L, 2, 2);
  if (lua_isnil(L, -2)) return 1;
  const char* file = lua_tostring(L, -2);
  if (luaL_loadfilex(L, file, "t") != LUA_OK)
    return luaL_error(L, "error loading module '%s' from file '%s':\n\t%s", name, file, lua_tostring(L, -1));
  lua_pushstring(L, file);
  return 2;
}

// Every field of `debug` but traceback (the message handler's companion scripts may call) becomes disabled.
void keep_only_traceback(lua_State* L) {
  lua_getglobal(L, "debug");
  if (!lua_istable(L, -1)) {
    lua_pop(L, 1);
    return;
  }
  lua_pushnil(L);
  while (lua_next(L, -2)) {
    lua_pop(L, 1);
    if (lua_type(L, -1) != LUA_TSTRING || std::strcmp(lua_tostring(L, -1), "traceback") == 0) continue;
    lua_pushvalue(L, -1);
    push_disabled(L, "debug", lua_tostring(L, -1));
    lua_rawset(L, -4);  // changing an existing field during lua_next is allowed
  }
  lua_pop(L, 1);
}

void text_chunks_only(lua_State* L) {
  replace(L, "_G", "load", text_only<3>);
  replace(L, "_G", "loadfile", text_only<2>);
  lua_pushcfunction(L, text_dofile);
  lua_setglobal(L, "dofile");
  disable(L, "string", "dump");
  lua_getglobal(L, "package");
  lua_getfield(L, -1, "searchers");
  lua_pushvalue(L, -2);
  lua_pushcclosure(L, text_searcher, 1);
  lua_rawseti(L, -2, 2);
  // keep the preload and Lua-file searchers, drop the two C-library ones
  lua_pushnil(L);
  lua_rawseti(L, -2, 4);
  lua_pushnil(L);
  lua_rawseti(L, -2, 3);
  lua_pop(L, 2);
}

}  // namespace

void install_sandbox(lua_State* L) {
  disable(L, "os", "execute");
  disable(L, "io", "popen");
  disable(L, "package", "loadlib");
  lua_getglobal(L, "package");
  lua_pushstring(L, "");
  lua_setfield(L, -2, "cpath");
  lua_pop(L, 1);
  text_chunks_only(L);
  keep_only_traceback(L);
  replace(L, "io", "open", checked_open);
  replace(L, "io", "output", checked_output);
  replace(L, "os", "remove", checked_remove);
  replace(L, "os", "rename", checked_rename);
  replace(L, "os", "tmpname", checked_tmpname);
  replace(L, "os", "exit", sandboxed_exit);
  replace(L, "_G", "setmetatable", checked_setmetatable);
}

}  // namespace tl::lua
