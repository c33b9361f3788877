// What every `tl` binding shares inside one Lua state: the script's options and the Session opened on first use.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "runtime/results_store.hpp"
#include "session.hpp"

struct lua_State;

namespace tl::lua {

struct ScriptOptions {
  SessionOptions session;  // --kernels-dir, --cache-dir, --launch-timeout of `tilelab run`
  std::string db_path;     // results store; "" -> the default location
  bool unsafe = false;     // --unsafe: os.execute, io.popen, package.loadlib allowed
  double timeout_s = 0;    // --timeout: wall-clock limit of the whole script; 0 = none
  std::uint64_t max_instructions = 0;  // --max-instructions: Lua VM instruction budget; 0 = none
  // Set from outside (SIGINT handler, GUI stop button); long operations stop after the current run.
  const std::atomic<bool>* interrupted = nullptr;
};

class ScriptContext {
 public:
  explicit ScriptContext(ScriptOptions options) : m_options(std::move(options)) {}
  ~ScriptContext();  // removes the kernels this script defined from the registry
  ScriptContext(const ScriptContext&) = delete;
  ScriptContext& operator=(const ScriptContext&) = delete;
  const ScriptOptions& options() const { return m_options; }

  // The Session, opened on first use so that scripts that only draw layouts never look for a GPU or kernels.
  // Throws std::runtime_error with the reason when it cannot be opened (bindings run under lua::guarded).
  Session& session();
  // The results store (options().db_path, else the default), opened on first use; throws like session().
  ResultsStore& results_store();

  bool interrupt_requested() const { return m_options.interrupted && m_options.interrupted->load(); }

  // Called by the runner's count hook every `step` VM instructions: the reason to stop the script (budget spent,
  // time up, interrupted), or "" to go on. Once a limit is hit it stays hit, so a pcall cannot swallow it.
  std::string check_limits(std::uint64_t step);

  // Kernels tl.define_kernel put into the registry: their specs call back into this state, so they leave with it.
  void add_user_kernel(const std::string& name) { m_user_kernels.push_back(name); }
  bool defined_here(const std::string& name) const;

  // The Lua thread (main state or coroutine) of the binding running now: script_context(L) records it, so spec
  // callbacks written in Lua run on the thread that asked for them, even from inside a coroutine.
  lua_State* active_thread() const { return m_active; }
  void set_active_thread(lua_State* L) { m_active = L; }

 private:
  ScriptOptions m_options;
  std::unique_ptr<Session> m_session;
  std::chrono::steady_clock::time_point m_start = std::chrono::steady_clock::now();
  std::uint64_t m_instructions = 0;
  std::string m_stop;  // the limit that was hit
  std::vector<std::string> m_user_kernels;
  std::unique_ptr<ResultsStore> m_store;
  lua_State* m_active = nullptr;
};

// Installs a context owned by the state (freed by lua_close) and returns it.
ScriptContext& install_context(lua_State* L, const ScriptOptions& options);
// The state's context (and records L as its active thread); raises a Lua error when none was installed.
ScriptContext& script_context(lua_State* L);

}  // namespace tl::lua
