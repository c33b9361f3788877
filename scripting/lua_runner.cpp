// The Lua runner: a fresh state per script, `tl` preloaded, errors reported with file:line and a traceback.
#include "scripting/lua_runner.hpp"

#include <filesystem>
#include <memory>

extern "C" {
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
}

#include "scripting/lua_tl.hpp"

namespace tl::lua {
namespace {

// Message handler for lua_pcall: appends a traceback to the error message.
int traceback_handler(lua_State* L) {
  const char* msg = lua_tostring(L, 1);
  if (!msg) {
    if (luaL_callmeta(L, 1, "__tostring") && lua_type(L, -1) == LUA_TSTRING) return 1;
    msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
  }
  luaL_traceback(L, L, msg, 1);
  return 1;
}

int require_tl(lua_State* L) { return open_tl(L); }

struct StateCloser {
  void operator()(lua_State* L) const { lua_close(L); }
};
using StatePtr = std::unique_ptr<lua_State, StateCloser>;

StatePtr new_state(const std::string& script, const RunOptions& options) {
  StatePtr state(luaL_newstate());
  lua_State* L = state.get();
  luaL_openlibs(L);
  install_context(L, options.script);
  luaL_requiref(L, "tl", require_tl, 1);
  lua_pop(L, 1);
  lua_createtable(L, static_cast<int>(options.args.size()), 1);
  lua_pushstring(L, script.c_str());
  lua_rawseti(L, -2, 0);
  for (size_t i = 0; i < options.args.size(); ++i) {
    lua_pushstring(L, options.args[i].c_str());
    lua_rawseti(L, -2, static_cast<lua_Integer>(i + 1));
  }
  lua_setglobal(L, "arg");
  if (options.setup) options.setup(L);
  return state;
}

Status call_loaded(lua_State* L, int load_status) {
  if (load_status != LUA_OK) {
    std::string msg = lua_tostring(L, -1) ? lua_tostring(L, -1) : "cannot load script";
    return make_error(load_status == LUA_ERRSYNTAX ? ErrorCode::parse : ErrorCode::io, msg);
  }
  int base = lua_gettop(L);
  lua_pushcfunction(L, traceback_handler);
  lua_insert(L, base);
  int status = lua_pcall(L, 0, 0, base);
  lua_remove(L, base);
  if (status != LUA_OK) {
    std::string msg = lua_tostring(L, -1) ? lua_tostring(L, -1) : "error in script";
    return make_error(ErrorCode::invalid_argument, msg);
  }
  return Status::success();
}

}  // namespace

Status run_file(const std::string& path, const RunOptions& options) {
  if (!std::filesystem::exists(path)) return make_error(ErrorCode::not_found, "script '" + path + "' not found");
  auto state = new_state(path, options);
  return call_loaded(state.get(), luaL_loadfile(state.get(), path.c_str()));
}

Status run_string(const std::string& source, const std::string& chunk_name, const RunOptions& options) {
  auto state = new_state(chunk_name, options);
  std::string name = "@" + chunk_name;
  return call_loaded(state.get(), luaL_loadbuffer(state.get(), source.data(), source.size(), name.c_str()));
}

}  // namespace tl::lua
