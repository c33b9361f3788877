// The per-state ScriptContext: a full userdata in the Lua registry, destroyed by its __gc when the state closes.
#include "scripting/lua_context.hpp"

#include <new>
#include <stdexcept>

extern "C" {
#include <lauxlib.h>
#include <lua.h>
}

namespace tl::lua {
namespace {

constexpr const char* k_context_key = "tilelab.context";

int context_gc(lua_State* L) {
  auto* ctx = static_cast<ScriptContext*>(lua_touserdata(L, 1));
  if (ctx) ctx->~ScriptContext();
  return 0;
}

}  // namespace

Session& ScriptContext::session() {
  if (!m_session) {
    auto opened = Session::open(m_options.session);
    if (!opened) throw std::runtime_error(opened.status().message());
    m_session = std::move(*opened);
  }
  return *m_session;
}

ResultsStore& ScriptContext::results_store() {
  if (!m_store) {
    auto opened = ResultsStore::open(m_options.db_path);
    if (!opened) throw std::runtime_error(opened.status().message());
    m_store = std::move(*opened);
  }
  return *m_store;
}

ScriptContext& install_context(lua_State* L, const ScriptOptions& options) {
  void* memory = lua_newuserdatauv(L, sizeof(ScriptContext), 0);
  auto* ctx = new (memory) ScriptContext(options);
  lua_createtable(L, 0, 1);
  lua_pushcfunction(L, context_gc);
  lua_setfield(L, -2, "__gc");
  lua_setmetatable(L, -2);
  lua_setfield(L, LUA_REGISTRYINDEX, k_context_key);
  return *ctx;
}

ScriptContext& script_context(lua_State* L) {
  lua_getfield(L, LUA_REGISTRYINDEX, k_context_key);
  auto* ctx = static_cast<ScriptContext*>(lua_touserdata(L, -1));
  lua_pop(L, 1);
  if (!ctx) luaL_error(L, "internal error: this Lua state has no TileLab context");
  return *ctx;
}

}  // namespace tl::lua
