// The main area's panels other than the layout viewer: source/PTX, results, timeline, roofline, Lua, device.
#pragma once

#include <atomic>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "app/gui/history.hpp"
#include "runtime/device/ceilings.hpp"
#include "runtime/trace/timeline.hpp"
#include "viz/heatmap_scene.hpp"
#include "viz/imgui_painter.hpp"
#include "viz/palette.hpp"
#include "viz/roofline_scene.hpp"
#include "viz/timeline_scene.hpp"

namespace tl::gui {

class App;

// The open kernel's source (and the files it includes) with compile errors inline, reloaded when the file changes
// on disk; and the PTX of the last compile.
class SourcePanel {
 public:
  void draw_source(App& app);
  void draw_ptx(App& app);
  bool show_sass = false;  // the PTX tab shows SASS (gui.sass() sets it)

 private:
  void load(App& app, const std::string& name);
  std::string m_name;  // SourceSet name being shown
  std::string m_path;  // on disk ("" when the sources are the embedded copy)
  std::filesystem::file_time_type m_mtime{};
  std::vector<std::string> m_lines;
  std::vector<std::string> m_files;  // the include closure of the kernel's main source
  std::string m_kernel;
  std::string m_error;
  char m_ptx_filter[64] = {};
  std::vector<std::string> m_ptx_lines;
  std::string m_ptx_key;  // cache key + name of the compile whose PTX is split into m_ptx_lines
  std::vector<std::string> m_sass_lines;  // the SASS listing split once per listing
  std::string m_sass_key;
  double m_last_poll = 0;
};

// The results store's history and this session's runs in one table: filter by kernel, sort by any column, tick two
// to compare (compare_runs, as `tilelab results --compare`). Rows arrive from jobs; order is recomputed only when
// rows, filter or sort change.
class ResultsPanel {
 public:
  void draw(App& app);
  void add_rows(std::vector<HistoryRow> rows);  // merge (replaces rows with the same store id)
  void set_loading(bool on) { m_loading = on; }
  void set_error(std::string e) { m_error = std::move(e); }
  void set_loaded_from(std::string path, std::size_t n) { m_db = std::move(path), m_loaded = n; }
  void set_filter(std::string kernel) { m_view.kernel = std::move(kernel), m_dirty = true; }
  // Picks two rows (by HistoryRow::key) to compare; false when either is not in the table.
  bool pick(std::int64_t a, std::int64_t b);
  // The comparison of the picked rows (compare_runs' JSON), null when fewer than two are picked.
  const nlohmann::json& comparison();
  const std::vector<HistoryRow>& rows() const { return m_rows; }
  const std::vector<std::size_t>& order();  // the shown rows, filtered and sorted
  const std::string& error() const { return m_error; }
  bool loading() const { return m_loading; }

 private:
  const HistoryRow* find(std::int64_t key) const;
  std::vector<HistoryRow> m_rows;
  std::vector<std::string> m_kernels;  // the filter's choices
  HistoryView m_view;
  std::vector<std::size_t> m_order;
  bool m_dirty = true;
  bool m_loading = false;
  std::string m_error, m_db;
  std::size_t m_loaded = 0;
  std::int64_t m_pick_a = 0, m_pick_b = 0;  // row keys, 0: none
  nlohmann::json m_compare;
  std::int64_t m_compared_a = 0, m_compared_b = 0;
  char m_db_path[256] = {};
};

// Start/stop a sweep of the open kernel and its heat map: two axes from the swept parameters and a metric.
class SweepPanel {
 public:
  void draw(App& app);
  void set_axes(std::string x, std::string y, std::string metric);
  const std::string& x() const { return m_x; }
  const std::string& y() const { return m_y; }
  const std::string& metric() const { return m_metric; }
  // The heat map of the current points (rebuilt when points or axes change); null with m_error when it can't be.
  const viz::HeatmapScene* heatmap(App& app);
  const std::string& heatmap_error() const { return m_error; }
  void set_stored_sweeps(std::vector<SweepRow> rows) { m_stored = std::move(rows), m_stored_loaded = true; }
  const std::vector<SweepRow>& stored_sweeps() const { return m_stored; }
  char space[256] = {};  // the space being edited ("block_M=64,128;block_N=64,128")
  char gpus[64] = {};    // the GPUs it runs on ("all", "0,1"; empty: GPU 0)

 private:
  void choose_defaults(App& app);
  std::string m_x, m_y, m_metric;
  std::optional<viz::HeatmapScene> m_scene;
  std::string m_error;
  int m_built_generation = -1;
  std::string m_built_key;
  std::string m_kernel;  // the kernel `space` was suggested for
  std::vector<SweepRow> m_stored;  // sweeps recorded in the store (the "recorded" combo)
  bool m_stored_loaded = false;
  viz::View m_view;
};

// A run's timeline, a model timeline of the open config, or a Chrome trace file: Gantt with zoom/pan/hover and
// selection statistics, region statistics, stage occupancy. A timeline can be pinned and compared with the next one
// (two Gantts on one time window, or their statistics side by side).
class TimelinePanel {
 public:
  void draw(App& app);
  void set(std::shared_ptr<const Timeline> t, std::string from);
  Status load_trace(const std::string& path);
  void model_of_open_kernel(App& app);
  const Timeline* timeline() const { return m_timeline.get(); }
  void set_window(double t0_ns, double t1_ns) { m_t0 = t0_ns, m_t1 = t1_ns; }  // the Gantt's time window
  // Keeps the shown timeline as the comparison's first (A): the next one shown is compared with it. False when
  // there is none.
  bool pin();
  void unpin() { m_pinned.reset(); }
  const Timeline* pinned() const { return m_pinned ? m_pinned->timeline.get() : nullptr; }
  void set_view(int view) { m_view = view; }  // 0 Gantt, 1 region statistics, 2 stage occupancy

 private:
  // One timeline as drawn: its source and the scenes built for it (rebuilt when the window, size or theme change).
  struct Slot {
    std::shared_ptr<const Timeline> timeline;
    std::string from;
    viz::Scene gantt;
    viz::GanttInfo info;
    viz::GanttStyle built;
    bool dirty = true;
    std::vector<RegionStats> stats;
    std::optional<StageOccupancy> occupancy;
    viz::Scene side;
    viz::View side_view;
    int side_built = -1;
    ImVec2 side_size{0, 0};
    int theme = -1;
  };
  void draw_gantt(App& app, Slot& slot, const char* id, ImVec2 canvas, bool with_selection);
  void draw_side(App& app, Slot& slot, const char* id, ImVec2 canvas);
  void draw_selection_stats(const Timeline& t);
  std::shared_ptr<const Timeline> m_timeline;  // == m_shown.timeline
  Slot m_shown;
  std::optional<Slot> m_pinned;
  int m_view = 0;  // 0 gantt, 1 region stats, 2 occupancy
  double m_t0 = 0, m_t1 = 0;
  int m_first_track = 0;
  double m_sel0 = -1, m_sel1 = -1;  // selected time range (ns), sel1 < 0: none
  bool m_selecting = false;
  char m_path[256] = "trace.json";
};

// This session's runs on the device's measured roofline; hover says the config, click selects the run.
class RooflinePanel {
 public:
  void draw(App& app);
  Status load_profile(App& app, const std::string& path);
  Status load_runs(const std::string& path);

 private:
  void rebuild(App& app, ImVec2 canvas);
  std::optional<viz::RooflineScene> m_scene;
  ImVec2 m_built_size{0, 0};
  int m_built_theme = -1;
  std::vector<int> m_point_run;          // point index -> run id (-1: from a file)
  std::vector<nlohmann::json> m_file_records;
  std::string m_error;
  std::size_t m_built_runs = ~std::size_t{0};
  int m_built_selected = -2;
  const void* m_built_ceilings = nullptr;
  char m_profile[256] = {};
  char m_runs_path[256] = {};
  char m_color_by[64] = {};
  viz::View m_view;
};

// Lua editor and console: open, edit, save and run a script on its own thread, output and errors, error line.
class LuaPanel {
 public:
  LuaPanel();
  ~LuaPanel();
  void draw(App& app);
  Status open(const std::string& path);
  void run(App& app);
  bool running() const { return m_running.load(); }
  const std::string& path() const { return m_path; }

 private:
  void join();
  std::string m_path;
  std::string m_text;
  bool m_modified = false;
  std::string m_output;  // console: what the last run printed, then its error
  int m_error_line = 0;  // 1-based line of the last error in this script, 0: none
  std::string m_error;
  bool m_show_listing = false;
  std::atomic<bool> m_running{false};
  std::atomic<bool> m_interrupt{false};
  std::thread m_thread;
  std::mutex m_mutex;  // guards m_pending_* written by the script thread
  std::string m_pending_output;
  std::optional<std::string> m_pending_error;
  bool m_pending_done = false;
};

// The GPU: name, SMs, memory, clocks, and the measured ceilings.
class DevicePanel {
 public:
  void draw(App& app);
};

// Parses the error line out of a Lua message for chunk `chunk` ("script.lua:12: ..." -> 12), 0 when none.
int lua_error_line(const std::string& message, const std::string& chunk);

}  // namespace tl::gui
