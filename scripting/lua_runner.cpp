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

constexpr int k_hook_step = 1000;  // VM instructions between limit checks

// Pushes why the script must stop (with the file and line running: inside a hook, level 0), or returns false.
bool push_stop_reason(lua_State* L) {
  const std::string stop = script_context(L).check_limits(k_hook_step);
  if (stop.empty()) return false;
  lua_Debug ar;
  if (lua_getstack(L, 0, &ar) && lua_getinfo(L, "Sl", &ar) && ar.currentline > 0)
    lua_pushfstring(L, "%s:%d: %s", ar.short_src, ar.currentline, stop.c_str());
  else
    lua_pushstring(L, stop.c_str());
  return true;
}

// Count hook: stops the script when a limit was hit (budget, time, Ctrl-C). From then on it fires on every
// instruction, so a pcall that catches the error cannot run on: the first instruction after it raises again, up to
// the top. No C++ object is alive at lua_error.
void limits_hook(lua_State* L, lua_Debug*) {
  if (!push_stop_reason(L)) return;
  lua_sethook(L, limits_hook, LUA_MASKCOUNT, 1);
  lua_error(L);
}

// What a sandboxed script gets instead of a disabled function: an error naming it and the way out.
int disabled(lua_State* L) {
  return luaL_error(L, "%s is disabled in the sandbox (run the script with --unsafe to allow it)",
                    lua_tostring(L, lua_upvalueindex(1)));
}

void disable(lua_State* L, const char* table, const char* name) {
  lua_getglobal(L, table);
  if (!lua_istable(L, -1)) {
    lua_pop(L, 1);
    return;
  }
  lua_pushfstring(L, "%s.%s", table, name);
  lua_pushcclosure(L, disabled, 1);
  lua_setfield(L, -2, name);
  lua_pop(L, 1);
}

// The default environment: no processes (os.execute, io.popen) and no native code (package.loadlib, C modules
// through require); files stay readable and writable through io, as experiments need.
void sandbox(lua_State* L) {
  disable(L, "os", "execute");
  disable(L, "io", "popen");
  disable(L, "package", "loadlib");
  lua_getglobal(L, "package");
  lua_pushstring(L, "");
  lua_setfield(L, -2, "cpath");
  lua_getfield(L, -1, "searchers");  // keep the preload and Lua-file searchers, drop the two C-library ones
  lua_pushnil(L);
  lua_rawseti(L, -2, 4);
  lua_pushnil(L);
  lua_rawseti(L, -2, 3);
  lua_pop(L, 2);
}

struct StateCloser {
  void operator()(lua_State* L) const { lua_close(L); }
};
using StatePtr = std::unique_ptr<lua_State, StateCloser>;

StatePtr new_state(const std::string& script, const RunOptions& options) {
  StatePtr state(luaL_newstate());
  lua_State* L = state.get();
  luaL_openlibs(L);
  if (!options.script.unsafe) sandbox(L);
  const ScriptContext& ctx = install_context(L, options.script);
  if (ctx.options().max_instructions || ctx.options().timeout_s > 0 || ctx.options().interrupted)
    lua_sethook(L, limits_hook, LUA_MASKCOUNT, k_hook_step);
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
