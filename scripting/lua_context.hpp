// What every `tl` binding shares inside one Lua state: the script's options and the Session opened on first use.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <utility>

#include "runtime/results_store.hpp"
#include "session.hpp"

struct lua_State;

namespace tl::lua {

struct ScriptOptions {
  SessionOptions session;  // --kernels-dir, --cache-dir, per-launch --timeout of `tilelab run`
  std::string db_path;     // results store; "" -> the default location
  bool unsafe = false;     // --unsafe: os.execute, io.popen, package.loadlib allowed
  // Set from outside (SIGINT handler, GUI stop button); long operations stop after the current run.
  const std::atomic<bool>* interrupted = nullptr;
};

class ScriptContext {
 public:
  explicit ScriptContext(ScriptOptions options) : m_options(std::move(options)) {}
  const ScriptOptions& options() const { return m_options; }

  // The Session, opened on first use so that scripts that only draw layouts never look for a GPU or kernels.
  // Throws std::runtime_error with the reason when it cannot be opened (bindings run under lua::guarded).
  Session& session();
  // The results store (options().db_path, else the default), opened on first use; throws like session().
  ResultsStore& results_store();

  bool interrupt_requested() const { return m_options.interrupted && m_options.interrupted->load(); }

 private:
  ScriptOptions m_options;
  std::unique_ptr<Session> m_session;
  std::unique_ptr<ResultsStore> m_store;
};

// Installs a context owned by the state (freed by lua_close) and returns it.
ScriptContext& install_context(lua_State* L, const ScriptOptions& options);
// The state's context; raises a Lua error when none was installed.
ScriptContext& script_context(lua_State* L);

}  // namespace tl::lua
