// The per-state ScriptContext: a full userdata in the Lua registry, destroyed by its __gc when the state closes.
#include "scripting/lua_context.hpp"

#include <cstdio>
#include <new>
#include <stdexcept>

#include "library.hpp"

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

ScriptContext::~ScriptContext() {
  for (const auto& name : m_user_kernels) library_registry().remove(name);
}

bool ScriptContext::defined_here(const std::string& name) const {
  for (const auto& n : m_user_kernels)
    if (n == name) return true;
  return false;
}

std::string ScriptContext::check_limits(std::uint64_t step) {
  if (!m_stop.empty()) return m_stop;
  m_instructions += step;
  if (m_options.max_instructions && m_instructions > m_options.max_instructions) {
    m_stop = "the script ran past its instruction budget (" + std::to_string(m_options.max_instructions) +
             " instructions; raise it with --max-instructions N, 0 = none)";
  } else if (m_options.timeout_s > 0 &&
             std::chrono::duration<double>(std::chrono::steady_clock::now() - m_start).count() > m_options.timeout_s) {
    char limit[32];
    std::snprintf(limit, sizeof limit, "%g", m_options.timeout_s);
    m_stop = std::string("the script ran past its time limit (--timeout ") + limit + " s)";
  } else if (interrupt_requested()) {
    m_stop = "interrupted (Ctrl-C)";
  }
  return m_stop;
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
  ctx->set_active_thread(L);
  return *ctx;
}

}  // namespace tl::lua
