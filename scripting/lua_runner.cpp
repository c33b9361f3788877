// The Lua runner: a fresh state per script, `tl` preloaded, the sandbox and the limits armed, errors reported with
// file:line and a traceback.
#include "scripting/lua_runner.hpp"

#include <cstdio>
#include <filesystem>
#include <memory>
#include <new>

extern "C" {
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
}

#include "scripting/lua_memory.hpp"
#include "scripting/lua_sandbox.hpp"
#include "scripting/lua_tl.hpp"

namespace tl::lua {
namespace {

// Pushes "file:line: " of the first Lua function at or above stack `level`, or "" when there is none.
void push_where(lua_State* L, int level) {
  lua_Debug ar;
  for (; lua_getstack(L, level, &ar); ++level) {
    if (lua_getinfo(L, "Sl", &ar) && ar.currentline > 0) {
      lua_pushfstring(L, "%s:%d: ", ar.short_src, ar.currentline);
      return;
    }
  }
  lua_pushliteral(L, "");
}

// Message handler for lua_pcall: appends a traceback to the error message. An error object (a table, with or
// without __tostring) carries no position, so the handler adds where it was raised.
int traceback_handler(lua_State* L) {
  const char* msg = lua_tostring(L, 1);
  if (!msg) {
    if (!luaL_callmeta(L, 1, "__tostring") || lua_type(L, -1) != LUA_TSTRING)
      lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
    push_where(L, 1);
    lua_insert(L, -2);
    lua_concat(L, 2);
    msg = lua_tostring(L, -1);
  }
  luaL_traceback(L, L, msg, 1);
  return 1;
}

int require_tl(lua_State* L) { return open_tl(L); }

constexpr int k_hook_step = 1000;  // VM instructions between limit checks

// Pushes why the script must stop (where it is: inside a hook, level 0), or returns false to go on.
bool push_stop_reason(lua_State* L) {
  const std::string stop = script_context(L).check_limits(k_hook_step);
  if (stop.empty()) return false;
  push_where(L, 0);
  lua_pushstring(L, stop.c_str());
  lua_concat(L, 2);
  return true;
}

// Count hook: stops the script when a limit was hit (budget, time, memory, Ctrl-C). From then on it fires on every
// instruction, so a pcall that catches the error cannot run on: the first instruction after it raises again, up to
// the top. No C++ object is alive at lua_error. The VM runs no binding while it executes instructions, so a binding
// that left by a Lua error (an argument check) gives back its memory allowance here.
void limits_hook(lua_State* L, lua_Debug*) {
  if (MemoryBudget* budget = memory_budget(L)) budget->in_binding = false;
  if (!push_stop_reason(L)) return;
  lua_sethook(L, limits_hook, LUA_MASKCOUNT, 1);
  lua_error(L);
}

int at_panic(lua_State* L) {
  std::fprintf(stderr, "tilelab: error: unprotected Lua error (%s)\n", lua_tostring(L, -1));
  return 0;  // Lua aborts
}

struct StateCloser {
  void operator()(lua_State* L) const { lua_close(L); }
};

// A Lua state, the budget its allocator counts against and the context its bindings share; the state closes first.
struct ScriptState {
  MemoryBudget budget;
  std::unique_ptr<ScriptContext> context;
  std::unique_ptr<lua_State, StateCloser> state;
  lua_State* get() const { return state.get(); }
};

std::unique_ptr<ScriptState> new_state(const std::string& script, const RunOptions& options) {
  auto s = std::make_unique<ScriptState>();
  s->budget.limit_mib = options.script.max_memory_mib;
  s->state.reset(lua_newstate(&MemoryBudget::allocate, &s->budget));
  if (!s->state) throw std::bad_alloc();
  lua_State* L = s->get();
  lua_atpanic(L, at_panic);
  luaL_openlibs(L);
  s->context = std::make_unique<ScriptContext>(options.script, &s->budget);
  install_context(L, *s->context);
  if (!options.script.unsafe) install_sandbox(L);
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
  return s;
}

// Loads the script with `load` (text chunks only) and runs it under the memory limit, which covers the script
// alone: the runner's own calls outside lua_pcall must never meet a memory error (it would abort the process).
template <class Load>
Status run_chunk(ScriptState& s, const std::string& script, int* exit_status, const Load& load) {
  lua_State* L = s.get();
  s.budget.limit = s.budget.limit_mib > (SIZE_MAX >> 20) ? SIZE_MAX : static_cast<std::size_t>(s.budget.limit_mib) << 20;
  lua_pushcfunction(L, traceback_handler);
  const int handler = lua_gettop(L);
  int status = load(L);
  const bool loaded = status == LUA_OK;
  if (loaded) status = lua_pcall(L, 0, 0, handler);
  s.budget.limit = SIZE_MAX;
  if (auto code = s.context->exit_requested()) {
    if (exit_status) *exit_status = *code;
    if (*code == 0) return Status::success();
    return make_error(ErrorCode::invalid_argument, script + ": the script ended with os.exit(" + std::to_string(*code) + ")");
  }
  if (status == LUA_ERRMEM) return make_error(ErrorCode::invalid_argument, script + ": " + s.budget.stop_message());
  if (status != LUA_OK) {
    std::string msg = lua_tostring(L, -1) ? lua_tostring(L, -1) : "error in script";
    if (loaded) return make_error(ErrorCode::invalid_argument, msg);
    if (msg.rfind(script, 0) != 0) msg = script + ": " + msg;  // "attempt to load a binary chunk" names no file
    return make_error(status == LUA_ERRSYNTAX ? ErrorCode::parse : ErrorCode::io, msg);
  }
  // A limit hit in the script's last instructions (the hook checks every k_hook_step), or a Ctrl-C during its
  // last call, still counts: the script did not finish its work.
  const std::string stop = s.context->check_limits(0);
  if (!stop.empty()) return make_error(ErrorCode::invalid_argument, script + ": " + stop);
  return Status::success();
}

}  // namespace

Status run_file(const std::string& path, const RunOptions& options) {
  if (!std::filesystem::exists(path)) return make_error(ErrorCode::not_found, "script '" + path + "' not found");
  auto state = new_state(path, options);
  return run_chunk(*state, path, options.exit_status, [&](lua_State* L) { return luaL_loadfilex(L, path.c_str(), "t"); });
}

Status run_string(const std::string& source, const std::string& chunk_name, const RunOptions& options) {
  auto state = new_state(chunk_name, options);
  const std::string name = "@" + chunk_name;
  return run_chunk(*state, chunk_name, options.exit_status, [&](lua_State* L) {
    return luaL_loadbufferx(L, source.data(), source.size(), name.c_str(), "t");
  });
}

}  // namespace tl::lua
