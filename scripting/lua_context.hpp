// What every `tl` binding shares inside one Lua state: the script's options and the Session opened on first use.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "runtime/results/results_store.hpp"
#include "scripting/lua_memory.hpp"
#include "session/session.hpp"

struct lua_State;

namespace tl::lua {

constexpr std::uint64_t k_default_max_memory_mib = 2048;

struct ScriptOptions {
  SessionOptions session;  // --kernels-dir, --cache-dir, --launch-timeout of `tilelab run`
  std::string db_path;     // results store; "" -> the default location
  // --unsafe: no sandbox (processes, C modules, the debug library, binary chunks, writes anywhere); limits stay.
  bool unsafe = false;
  double timeout_s = 0;    // --timeout: wall-clock limit of the whole script; 0 = none
  std::uint64_t max_instructions = 0;  // --max-instructions: Lua VM instruction budget; 0 = none
  std::uint64_t max_memory_mib = k_default_max_memory_mib;  // --max-memory: what Lua may allocate
  // --allow-write: folders the sandbox lets the script write under, besides the current directory.
  std::vector<std::string> allow_write;
  // The command whose --allow-write/--unsafe lift the sandbox, named in its refusals ("tilelab run", "tilelab gui").
  std::string command = "tilelab run";
  // Set from outside (SIGINT handler, GUI stop button); long operations stop after the current run.
  const std::atomic<bool>* interrupted = nullptr;
};

class ScriptContext {
 public:
  ScriptContext(ScriptOptions options, MemoryBudget* budget);
  ~ScriptContext();  // removes the kernels this script defined from the registry
  ScriptContext(const ScriptContext&) = delete;
  ScriptContext& operator=(const ScriptContext&) = delete;
  const ScriptOptions& options() const { return m_options; }

  // The Session, opened on first use so that scripts that only draw layouts never look for a GPU or kernels.
  // Throws std::runtime_error with the reason when it cannot be opened (bindings run under lua::guarded).
  Session& session();
  // The results store (options().db_path, else the default), opened on first use; throws like session().
  ResultsStore& results_store();
  // The same store for reading (tl.results): the one above when this script opened it, else opened read-only, so a
  // query creates no file and needs no write access; a missing store throws "no results store at X".
  const ResultsStore& results_reader();

  bool interrupt_requested() const { return m_options.interrupted && m_options.interrupted->load(); }

  // Called by the runner's count hook every `step` VM instructions: the reason to stop the script (budget spent,
  // time up, memory limit passed, interrupted), or "" to go on. Once a limit is hit it stays hit, so a pcall cannot
  // swallow it.
  std::string check_limits(std::uint64_t step);

  // os.exit(code) in the sandbox: the script stops as at a limit (a pcall cannot catch it), and its host ends it with
  // this status instead of the process ending under it (the desktop app stays up; `tilelab run` exits with it).
  void request_exit(int code);
  std::optional<int> exit_requested() const { return m_exit; }

  // Why the sandbox refuses to let `what` (io.open, tl.write_file, ...) write `path`, or "" when it may: the path,
  // its `..` and its symbolic links resolved, must lie under the current directory or an --allow-write folder.
  std::string write_refusal(const std::string& path, const char* what) const;
  // The same as an exception (std::runtime_error), for bindings under lua::guarded.
  void check_write(const std::string& path, const char* what) const;

  // Kernels tl.define_kernel put into the registry: their specs call back into this state, so they leave with it.
  void add_user_kernel(const std::string& name) { m_user_kernels.push_back(name); }
  bool defined_here(const std::string& name) const;

  // The Lua thread (main state or coroutine) of the binding running now: script_context(L) records it, so spec
  // callbacks written in Lua run on the thread that asked for them, even from inside a coroutine.
  lua_State* active_thread() const { return m_active; }
  void set_active_thread(lua_State* L) { m_active = L; }

 private:
  ScriptOptions m_options;
  MemoryBudget* m_budget;                            // the state's allocator, or nullptr
  std::vector<std::filesystem::path> m_write_roots;  // resolved: the current directory, then --allow-write
  std::unique_ptr<Session> m_session;
  std::chrono::steady_clock::time_point m_start = std::chrono::steady_clock::now();
  std::uint64_t m_instructions = 0;
  std::string m_stop;  // the limit that was hit
  std::optional<int> m_exit;
  std::vector<std::string> m_user_kernels;
  std::unique_ptr<ResultsStore> m_store, m_reader;
  lua_State* m_active = nullptr;
};

// Makes `context` the state's (the runner owns it and destroys it after lua_close).
void install_context(lua_State* L, ScriptContext& context);
// The state's context (and records L as its active thread); raises a Lua error when none was installed.
ScriptContext& script_context(lua_State* L);

}  // namespace tl::lua
