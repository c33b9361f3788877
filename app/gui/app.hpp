// The desktop app's state and frame: the workspace, the open kernel, background jobs, runs, and every panel.
#pragma once

// [SECTION] index
//   App ............... owns the workspace, the Session (used only on the job thread), this session's runs, the
//                       results store (history and recording, on its own job thread) and the sweep
//   panels ............ each a class with draw(App&): sidebar (kernel, config, problem, run controls), and the
//                       main area's tabs: Layouts, Source, PTX, Results, Sweep, Timeline, Roofline, Lua, Device
//   the `gui` Lua table (script_api.cpp) drives the same App calls the widgets use.

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/gui/history.hpp"
#include "app/gui/job_queue.hpp"
#include "app/gui/layout_panel.hpp"
#include "app/gui/panels.hpp"
#include "app/gui/widgets.hpp"
#include "app/gui/workspace.hpp"
#include "runtime/device/device.hpp"
#include "runtime/measure/bench.hpp"
#include "runtime/spec/kernel_spec.hpp"
#include "scripting/lua_context.hpp"
#include "session/session.hpp"
#include "session/sweep.hpp"

namespace tl::gui {

struct AppOptions {
  std::string workspace_path;  // "" : the workspace lives in memory only (test mode)
  SessionOptions session;
  std::string results_db;   // the results store: history, and where runs and sweeps are recorded ("" = default)
  bool record_runs = true;  // store this app's runs and sweep points there, as `tilelab bench`/`sweep` do
  // Limits and sandbox of Lua scripts (--script and the Lua panel), as `tilelab run` takes them.
  lua::ScriptOptions script;
  float ui_scale = 1;  // --scale (or the monitor's content scale): plots are built at canvas / scale
  std::string theme;   // --theme: "dark" or "light"; "": the workspace's
};

// A keyboard shortcut of the loop, shown in the menus and handled every frame.
struct Shortcut {
  const char* action;  // "compile", "run", "bench", "timeline"
  const char* label;   // the menu item
  const char* keys;    // as the menu shows them: "Ctrl+B"
  bool shift;          // with Ctrl, always
  int key;             // the letter (GLFW's key codes for letters are their ASCII capitals)
};
inline constexpr Shortcut kShortcuts[] = {
    {"compile", "Compile", "Ctrl+B", false, 'B'},
    {"run", "Run + verify", "Ctrl+R", false, 'R'},
    {"bench", "Bench", "Ctrl+Shift+R", true, 'R'},
    {"timeline", "Capture timeline", "Ctrl+T", false, 'T'},
};

struct Message {
  enum class Level { info, warning, error } level = Level::info;
  std::string text;
};

// One run of this app session (the Results panel shows it with the store's history; stored_id once recorded).
struct RunEntry {
  int id = 0;
  std::string kind;  // "run", "bench", "timeline"
  RunRecord record;
  nlohmann::json json;  // the record as JSON: what the roofline reads
  std::shared_ptr<const Timeline> timeline;
  RunContext context;          // what its row in the store carries besides the record
  std::int64_t stored_id = 0;  // its row in the results store, 0 while not stored
};

// The sweep started from the app: its points as they arrive (the heat map reads them), progress, outcome.
struct SweepState {
  bool running = false;
  bool stopping = false;  // Stop pressed: ends after the current point
  std::string id, kernel, space_text, error;
  SweepSpace space;
  std::size_t done = 0, total = 0;
  std::vector<nlohmann::json> points;  // to_json(SweepPoint), in arrival order
  std::size_t stored = 0;              // points stored in the results store
  bool any_ran = false;                // some point ran (with a GPU): run metrics exist
  std::string summary;                 // one line when it ended
  bool from_store = false;             // a sweep of an earlier session, read back from the results store
  int generation = 0;                  // bumped on every change, so the heat map rebuilds only then
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
inline constexpr const char* kPanels[] = {"Layouts", "Source", "PTX", "Results", "Sweep", "Timeline", "Roofline",
                                          "Lua", "Device"};

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
  // kind: "run" (run + verify), "bench" (also cuBLAS or cuDNN where the kernel has one), "timeline" (probe build).
  void run(const std::string& kind);
  void message(Message::Level level, std::string text);
  // What a shortcut (kShortcuts' action) does, when it can: false with a message when it cannot (no GPU, ...).
  bool do_action(const std::string& action);
  // "dark" or "light": the ImGui style and every plot's colours; plots rebuild (theme_generation changes).
  void set_theme(const std::string& theme);
  bool dark() const { return m_ws.theme != "light"; }
  const viz::Theme& plot_theme() const { return dark() ? viz::dark_theme() : viz::light_theme(); }
  int theme_generation() const { return m_theme_generation; }
  float ui_scale() const { return m_options.ui_scale; }
  // [SECTION] results store, sweep, SASS (all on jobs: no SQLite, file or process work in the frame)
  // Reloads the history from the store (newest kHistoryLimit rows) on the store's job thread.
  void load_history();
  // Switches to another results store file and loads its history.
  void set_results_db(const std::string& path);
  const std::string& results_db() const { return m_options.results_db; }
  const lua::ScriptOptions& script_options() const { return m_options.script; }
  bool record_runs() const { return m_options.record_runs; }
  void set_record_runs(bool on) { m_options.record_runs = on; }
  static constexpr std::int64_t kHistoryLimit = 5000;
  // Starts a sweep of the open kernel over `space_text` ("block_M=64,128;block_N=64,128") at the open problem,
  // the open config giving the values the space does not vary. Errors: a sweep is running, the space does not
  // parse or names no config parameter of the kernel.
  // `gpus_text`: the GPUs it runs on, as `tilelab sweep --gpus` takes them ("" or blank: GPU 0).
  Status start_sweep(const std::string& space_text, const std::string& gpus_text = "");
  void stop_sweep();  // after the current point
  // The sweeps recorded in the store (loaded on the store's job thread into sweep.stored_sweeps()).
  void load_sweeps();
  // Shows a recorded sweep's rows in the Sweep panel and its heat map (refused while a sweep runs).
  Status show_stored_sweep(const std::string& id);
  const SweepState& sweep_state() const { return m_sweep; }
  // Disassembles the last compile's cubin (nvdisasm or cuobjdump) on a job; the PTX panel shows the result.
  void disassemble();
  void refresh_sass();  // again, e.g. after installing the toolkit
  struct Sass {
    std::string key;    // compile key + lowered name it belongs to
    bool pending = false;
    std::string tool;   // path of the tool used
    std::string text;   // the listing
    std::string error;  // tool not found, or its failure
  };
  const Sass& sass() const { return m_sass; }

  // Runs finished jobs' callbacks until no job is left or `seconds` pass (scripts: gui.wait()); false on timeout.
  bool wait_for_jobs(double seconds);
  // Runs callbacks until `done()` holds or `seconds` pass (scripts: gui.wait_sweep(n)); false on timeout.
  bool wait_until(const std::function<bool()>& done, double seconds);

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
  // This GPU's ceilings on a job: the cached ones, else measured in the worker and cached, as `tilelab info
  // --measure` does (about 10 s); the Device and Roofline panels then use them.
  void measure_ceilings();
  bool measuring_ceilings() const { return m_measuring; }
  const std::string& ceilings_from() const { return m_ceilings_from; }
  JobQueue& jobs() { return m_jobs; }
  const std::vector<Message>& messages() const { return m_messages; }
  void mark_changed() { m_changed = true; }
  double startup_ms = 0;  // main() to the first frame, shown in the status bar
  // Test mode: screenshots a script asked for (gui.screenshot), taken in order once background work is done,
  // each after its panel has been shown for --frames frames.
  struct Screenshot {
    std::string panel, path;
  };
  std::vector<Screenshot> screenshots;

  // Panels (public so the `gui` table and the benchmarks can drive them).
  LayoutPanel layouts;
  SourcePanel source;
  ResultsPanel results;
  SweepPanel sweep;
  TimelinePanel timeline;
  RooflinePanel roofline;
  LuaPanel lua;
  DevicePanel device;

 private:
  void revalidate();
  Session& session();  // job thread only: opened on first use
  void draw_menu();
  void handle_shortcuts();
  bool can_run(const std::string& kind, std::string* why = nullptr) const;
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
  int m_theme_generation = 0;
  float m_footer_h = 0;  // the sidebar's pinned run controls, as tall as they were last frame
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
  bool m_measuring = false;
  void draw_last_run();
  std::vector<Message> m_messages;
  void record_run(const RunEntry& e);
  ResultsStore* store_on_store_thread();  // opened on first use; null (and m_store_error set) when it can't be
  // The store history is read from: the recording one when open, else the file opened read-only (a read-only file
  // shows its history; a missing one is not created). Null with m_store_error empty when there is no store yet.
  ResultsStore* reader_on_store_thread();
  std::string m_store_error;              // store thread only; copied into the panel by callbacks
  std::string m_store_path;               // store thread only (set before the first job): the file m_store opens
  SweepState m_sweep;
  std::atomic<bool> m_sweep_stop{false};
  Sass m_sass;
  std::unique_ptr<Session> m_session;  // job thread only
  std::unique_ptr<ResultsStore> m_store;        // store-job thread only: run inserts, and queries once open
  std::unique_ptr<ResultsStore> m_reader;       // store-job thread only: queries before anything was recorded
  std::unique_ptr<ResultsStore> m_sweep_store;  // job thread only: the sweep engine stores each point as it arrives
  // The store's own queue, so that loading history never waits behind a compile or a long sweep. Last members:
  // their threads stop before the rest is destroyed (m_jobs first).
  JobQueue m_store_jobs;
  JobQueue m_jobs;
};

}  // namespace tl::gui
