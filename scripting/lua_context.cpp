// The per-state ScriptContext: owned by the runner, found by the bindings through the Lua registry; the write sandbox.
#include "scripting/lua_context.hpp"

#include <algorithm>
#include <cstdio>
#include <stdexcept>

#include "library/library.hpp"

extern "C" {
#include <lauxlib.h>
#include <lua.h>
}

namespace tl::lua {
namespace {

namespace fs = std::filesystem;

constexpr const char* k_context_key = "tilelab.context";

// Where writing `path` really lands: its folder resolved through symbolic links and `..` (as the kernel would), and
// the file itself followed when it is a symbolic link (writing through it writes its target, even a missing one).
fs::path resolve_for_write(const fs::path& path, int links = 0) {
  const fs::path absolute = fs::absolute(path);
  const fs::path name = absolute.filename();
  if (name.empty() || name == "." || name == "..") return fs::weakly_canonical(absolute);
  const fs::path folder = fs::weakly_canonical(absolute.parent_path());
  const fs::path full = folder / name;
  if (!fs::is_symlink(fs::symlink_status(full))) return full;
  if (links >= 40) throw fs::filesystem_error("too many levels of symbolic links", full, std::error_code());
  const fs::path target = fs::read_symlink(full);
  return resolve_for_write(target.is_absolute() ? target : folder / target, links + 1);
}

bool is_under(const fs::path& path, const fs::path& root) {
  return std::mismatch(root.begin(), root.end(), path.begin(), path.end()).first == root.end();
}

}  // namespace

ScriptContext::ScriptContext(ScriptOptions options, MemoryBudget* budget)
    : m_options(std::move(options)), m_budget(budget) {
  std::error_code ec;
  m_write_roots.push_back(fs::weakly_canonical(fs::current_path(ec), ec));
  for (const auto& dir : m_options.allow_write) {
    try {
      m_write_roots.push_back(resolve_for_write(dir));
    } catch (const fs::filesystem_error&) {
      // a folder that cannot be resolved allows nothing
    }
  }
}

std::string ScriptContext::write_refusal(const std::string& path, const char* what) const {
  if (m_options.unsafe) return "";
  std::string where;
  try {
    const fs::path resolved = resolve_for_write(path);
    for (const auto& root : m_write_roots)
      if (is_under(resolved, root)) return "";
    where = resolved.string();
  } catch (const fs::filesystem_error& e) {
    where = path + " (" + e.what() + ")";
  }
  std::string roots;
  for (const auto& root : m_write_roots) roots += (roots.empty() ? "" : ", ") + root.string();
  std::string message = std::string(what) + ": writing '" + path + "'";
  if (where != path) message += " (" + where + ")";
  return message + " is outside the allowed folders (" + roots + "); pass --allow-write DIR or --unsafe to " +
         m_options.command;
}

void ScriptContext::check_write(const std::string& path, const char* what) const {
  const std::string refusal = write_refusal(path, what);
  if (!refusal.empty()) throw std::runtime_error(refusal);
}

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
  if (m_budget && m_budget->exceeded) {
    m_stop = m_budget->stop_message();
  } else if (m_options.max_instructions && m_instructions > m_options.max_instructions) {
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

void ScriptContext::request_exit(int code) {
  m_exit = code;
  m_stop = "os.exit(" + std::to_string(code) + ")";
}

ResultsStore& ScriptContext::results_store() {
  if (!m_store) {
    auto opened = ResultsStore::open(m_options.db_path);
    if (!opened) throw std::runtime_error(opened.status().message());
    m_store = std::move(*opened);
  }
  return *m_store;
}

const ResultsStore& ScriptContext::results_reader() {
  if (m_store) return *m_store;
  if (!m_reader) {
    auto opened = ResultsStore::open_read_only(m_options.db_path);
    if (!opened) throw std::runtime_error(opened.status().message());
    m_reader = std::move(*opened);
  }
  return *m_reader;
}

void install_context(lua_State* L, ScriptContext& context) {
  lua_pushlightuserdata(L, &context);
  lua_setfield(L, LUA_REGISTRYINDEX, k_context_key);
}

ScriptContext& script_context(lua_State* L) {
  lua_getfield(L, LUA_REGISTRYINDEX, k_context_key);
  // Only C code makes light userdata: a script that reached the registry cannot forge one.
  auto* ctx = lua_type(L, -1) == LUA_TLIGHTUSERDATA ? static_cast<ScriptContext*>(lua_touserdata(L, -1)) : nullptr;
  lua_pop(L, 1);
  if (!ctx) luaL_error(L, "internal error: this Lua state has no TileLab context");
  ctx->set_active_thread(L);
  return *ctx;
}

}  // namespace tl::lua
