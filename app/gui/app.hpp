// The desktop app's state and frame: the workspace, the open kernel, background jobs, runs, and every panel.
#pragma once

// [SECTION] index
//   App ............... owns the workspace, the Session (used only on the job thread), this session's runs
//   panels ............ each a class with draw(App&): sidebar (kernel, config, problem, run controls), and the
//                       main area's tabs: Layouts, Source, PTX, Results, Timeline, Roofline, Lua, Device
//   the `gui` Lua table (script_api.cpp) drives the same App calls the widgets use.

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/gui/job_queue.hpp"
#include "app/gui/layout_panel.hpp"
#include "app/gui/panels.hpp"
#include "app/gui/workspace.hpp"
#include "runtime/bench.hpp"
#include "runtime/device.hpp"
#include "runtime/kernel_spec.hpp"
#include "session.hpp"

namespace tl::gui {

struct AppOptions {
  std::string workspace_path;  // "" : the workspace lives in memory only (test mode)
  SessionOptions session;
};

struct Message {
  enum class Level { info, warning, error } level = Level::info;
  std::string text;
};

// One run of this app session. The results store (branch `sweep`) will add history from earlier sessions;
// until then the Results panel shows these only.
struct RunEntry {
  int id = 0;
  std::string kind;  // "run", "bench", "timeline"
  RunRecord record;
  nlohmann::json json;  // the record as JSON: what the roofline reads
  std::shared_ptr<const Timeline> timeline;
};

// The last compile of the open kernel (or why it failed).
struct CompileResult {
  std::string kernel;
  KeyValues problem, config;
  std::optional<CompiledKernel> compiled;
  std::string error;
  // Error lines of the compile log by source file name (SourceSet name, "gemm/gemm_simt.cuh") and line.
  std::map<std::string, std::map<int, std::string>> error_lines;
};

// The main area's panels, in tab order.
inline constexpr const char* kPanels[] = {"Layouts", "Source", "PTX", "Results", "Timeline", "Roofline", "Lua",
                                          "Device"};

class App {
 public:
  explicit App(AppOptions options);
  ~App();
  App(const App&) = delete;
  App& operator=(const App&) = delete;

  // Builds the whole UI for one frame (between ImGui::NewFrame and ImGui::Render).
  void frame();
  // No job running or waiting, no script running (test mode waits for this before its screenshot).
  bool idle() const;
  // Writes the workspace now when it changed (also called each frame, at most twice a second, and on exit).
  void save_workspace_if_changed(bool force = false);

  // [SECTION] what widgets and the `gui` Lua table do
  Status select_kernel(const std::string& name);
  Status set_config(const std::string& key, const std::string& value);
  Status set_problem(const std::string& key, const std::string& value);
  Status show_panel(const std::string& name, bool select = true);
  void hide_panel(const std::string& name);
  void compile();
  // kind: "run" (run + verify), "bench" (also cuBLAS where the kernel has it), "timeline" (probe build).
  void run(const std::string& kind);
  void message(Message::Level level, std::string text);
  // Runs finished jobs' callbacks until no job is left or `seconds` pass (scripts: gui.wait()); false on timeout.
  bool wait_for_jobs(double seconds);

  // [SECTION] state panels read
  Workspace& workspace() { return m_ws; }
  const SystemInfo& system() const { return m_sys; }
  const KernelSpec* spec() const { return m_spec; }
  const KeyValues& config() { return m_ws.configs[m_ws.kernel]; }
  const KeyValues& problem() { return m_ws.problems[m_ws.kernel]; }
  // The open kernel resolved for its problem and config, or why it cannot run (schema or can_implement).
  const Result<KernelInstance>& instance() const { return m_instance; }
  const DeviceLimits& limits() const { return m_limits; }
  bool has_device() const { return !m_sys.devices.empty(); }
  std::string why_no_device() const { return m_sys.why_no_device; }
  const CompileResult& compiled() const { return m_compile; }
  bool compiling() const { return m_compiling; }
  std::vector<RunEntry>& runs() { return m_runs; }
  const RunEntry* find_run(int id) const;
  int selected_run = -1;  // the run the Timeline and Roofline panels highlight
  const std::optional<Ceilings>& ceilings() const { return m_ceilings; }
  void set_ceilings(std::optional<Ceilings> c, std::string from);
  const std::string& ceilings_from() const { return m_ceilings_from; }
  JobQueue& jobs() { return m_jobs; }
  const std::vector<Message>& messages() const { return m_messages; }
  void mark_changed() { m_changed = true; }
  double startup_ms = 0;  // main() to the first frame, shown in the status bar

  // Panels (public so the `gui` table and the benchmarks can drive them).
  LayoutPanel layouts;
  SourcePanel source;
  ResultsPanel results;
  TimelinePanel timeline;
  RooflinePanel roofline;
  LuaPanel lua;
  DevicePanel device;

 private:
  void revalidate();
  Session& session();  // job thread only: opened on first use
  void draw_menu();
  void draw_sidebar(float width, float height);
  void draw_kernel_browser();
  void draw_params(const Schema& schema, bool is_config);
  void draw_run_controls();
  void draw_main_area();
  void draw_status_bar();

  AppOptions m_options;
  Workspace m_ws, m_saved;
  std::chrono::steady_clock::time_point m_last_save_check;
  bool m_changed = false;
  SystemInfo m_sys;
  DeviceLimits m_limits;
  const KernelSpec* m_spec = nullptr;
  Result<KernelInstance> m_instance{Status(ErrorCode::not_found, "no kernel open")};
  char m_search[64] = {};
  std::string m_select_tab;  // set by show_panel: the tab to select on the next frame
  CompileResult m_compile;
  bool m_compiling = false;
  bool m_auto_compile = false;
  bool m_compile_again = false;
  std::vector<RunEntry> m_runs;
  int m_next_run_id = 1;
  std::optional<Ceilings> m_ceilings;
  std::string m_ceilings_from;
  std::vector<Message> m_messages;
  std::unique_ptr<Session> m_session;  // job thread only
  JobQueue m_jobs;                     // last member: its thread stops before the rest is destroyed
};

}  // namespace tl::gui
