// The App: workspace load/save, the open kernel and its validation, jobs (compile, run), sidebar and main area.
#include "app/gui/app.hpp"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <filesystem>
#include <regex>
#include <thread>

#include <imgui.h>
#include <imgui_stdlib.h>

#include "library/library.hpp"

namespace tl::gui {
namespace {


// "path:12: error: ..." lines of a formatted NVRTC log -> file name -> line -> message. `sources` maps display
// paths back to SourceSet names.
std::map<std::string, std::map<int, std::string>> parse_error_lines(const std::string& log, const SourceSet& sources) {
  std::map<std::string, std::string> by_path;
  for (const auto& name : sources.names()) by_path[sources.display_path(name)] = name;
  std::map<std::string, std::map<int, std::string>> out;
  static const std::regex re(R"(^(.+?):(\d+): (error|warning)[^:]*: (.*)$)");
  std::size_t pos = 0;
  while (pos < log.size()) {
    std::size_t end = log.find('\n', pos);
    if (end == std::string::npos) end = log.size();
    std::string line = log.substr(pos, end - pos);
    pos = end + 1;
    std::smatch m;
    if (!std::regex_match(line, m, re)) continue;
    std::string file = m[1];
    if (auto it = by_path.find(file); it != by_path.end()) file = it->second;
    std::string& slot = out[file][std::stoi(m[2])];
    if (!slot.empty()) slot += "; ";
    slot += m[3].str() + ": " + m[4].str();
  }
  return out;
}

}  // namespace

// [SECTION] lifetime and workspace

App::App(AppOptions options) : m_options(std::move(options)), m_sys(query_system()) {
  m_store_path = m_options.results_db;
  m_limits = m_sys.devices.empty() ? limits_for_arch("sm_90a") : limits_for_device(m_sys.devices.front());
  if (!m_options.workspace_path.empty()) {
    auto w = load_workspace(m_options.workspace_path);
    if (w) {
      m_ws = *w;
    } else {
      // Keep the bad file aside rather than overwrite it on the next save.
      std::error_code ec;
      const std::string aside = m_options.workspace_path + ".bad";
      std::filesystem::rename(m_options.workspace_path, aside, ec);
      message(Message::Level::error, w.status().message() + "; started with defaults (the file was kept as " +
                                         aside + ")");
    }
  }
  m_saved = m_ws;
  m_last_save_check = std::chrono::steady_clock::now();
  set_theme(m_options.theme.empty() ? m_ws.theme : m_options.theme);
  std::string kernel = m_ws.kernel;
  if (!library_registry().find(kernel)) {
    auto all = library_registry().list();
    kernel = all.empty() ? "" : all.front()->name;
    for (const auto* s : all)
      if (s->name == "gemm.mma") kernel = s->name;
  }
  if (!kernel.empty()) (void)select_kernel(kernel);
  if (!m_ws.layout_spec.empty()) layouts.set_spec(m_ws.layout_spec);
  if (!m_ws.script.empty() && std::filesystem::exists(m_ws.script)) (void)lua.open(m_ws.script);
  if (!m_ws.device_profile.empty()) (void)roofline.load_profile(*this, m_ws.device_profile);
  m_select_tab = m_ws.tab;
  // The Session (kernel sources, device, cached ceilings) opens on the job thread, off the start-up path.
  m_jobs.post("open session", [this]() -> JobQueue::Done {
    Session& s = session();
    std::optional<Ceilings> c = s.target().ceilings;
    return [this, c] {
      if (c && !m_ceilings) set_ceilings(c, "measured on this GPU (tilelab info --measure)");
    };
  }, [this](const std::string& e) { message(Message::Level::error, e); });
  load_history();
}

App::~App() {
  m_sweep_stop = true;  // a running sweep ends after its current point instead of holding up the exit
  save_workspace_if_changed(true);
}

void App::save_workspace_if_changed(bool force) {
  if (m_options.workspace_path.empty()) return;
  auto now = std::chrono::steady_clock::now();
  if (!force && now - m_last_save_check < std::chrono::milliseconds(500)) return;
  m_last_save_check = now;
  m_ws.layout_spec = layouts.spec();
  m_ws.script = lua.path();
  if (m_ws == m_saved) return;
  Status st = save_workspace(m_options.workspace_path, m_ws);
  if (!st) {
    message(Message::Level::error, "cannot save the workspace: " + st.message());
    return;
  }
  m_saved = m_ws;
}

void App::message(Message::Level level, std::string text) {
  m_messages.push_back({level, std::move(text)});
  if (m_messages.size() > 200) m_messages.erase(m_messages.begin());
}

void App::set_theme(const std::string& theme) {
  m_ws.theme = theme == "light" ? "light" : "dark";
  if (dark()) ImGui::StyleColorsDark();
  else ImGui::StyleColorsLight();
  ++m_theme_generation;
}

bool App::can_run(const std::string& kind, std::string* why) const {
  std::string reason;
  if (!m_spec) reason = "no kernel is open";
  else if (!m_instance) reason = "the config cannot run: " + m_instance.status().message();
  else if (kind != "compile" && !has_device()) reason = "no GPU (" + why_no_device() + ")";
  else if (kind == "timeline" && m_spec->probes.empty()) reason = m_spec->name + " has no timeline probes";
  if (why) *why = reason;
  return reason.empty();
}

bool App::do_action(const std::string& action) {
  std::string why;
  if (!can_run(action, &why)) {
    message(Message::Level::warning, "cannot " + (action == "timeline" ? std::string("capture a timeline") : action) +
                                         ": " + why);
    return false;
  }
  if (action == "compile") compile();
  else run(action);
  return true;
}

bool App::wait_for_jobs(double seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  // A callback of one queue may post to the other (a run's row goes to the store), so wait for both together.
  while (m_jobs.busy() || m_store_jobs.busy()) {
    if (m_jobs.drain() + m_store_jobs.drain() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    if (std::chrono::steady_clock::now() > end) return false;
  }
  return true;
}

bool App::wait_until(const std::function<bool()>& done, double seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (!done()) {
    if (m_jobs.drain() + m_store_jobs.drain() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    if (std::chrono::steady_clock::now() > end) return false;
  }
  return true;
}

bool App::idle() const { return !m_jobs.busy() && !m_store_jobs.busy() && !m_compiling && !lua.running(); }

Session& App::session() {
  if (!m_session) {
    auto s = Session::open(m_options.session);
    if (!s) throw std::runtime_error(s.status().message());
    m_session = std::move(*s);
  }
  return *m_session;
}

// [SECTION] the open kernel

Status App::select_kernel(const std::string& name) {
  auto spec = library_registry().find(name);
  if (!spec) return spec.status();
  m_spec = *spec;
  m_ws.kernel = name;
  m_ws.configs[name];
  m_ws.problems[name];
  revalidate();
  return Status::success();
}

static Status set_value(const KernelSpec* spec, const Schema& schema, KeyValues& into, const std::string& key,
                        const std::string& value, const char* what) {
  if (!spec) return make_error(ErrorCode::not_found, "no kernel is open");
  KeyValues trial = into;
  trial[key] = value;
  auto r = schema.resolve(trial, what);
  if (!r) return r.status();
  into[key] = value;
  return Status::success();
}

Status App::set_config(const std::string& key, const std::string& value) {
  Status st = set_value(m_spec, m_spec ? m_spec->config : Schema{}, m_ws.configs[m_ws.kernel], key, value, "config");
  if (st) revalidate();
  return st;
}

Status App::set_problem(const std::string& key, const std::string& value) {
  Status st = set_value(m_spec, m_spec ? m_spec->problem : Schema{}, m_ws.problems[m_ws.kernel], key, value, "problem");
  if (st) revalidate();
  return st;
}

void App::revalidate() {
  m_changed = true;
  if (!m_spec) return;
  m_instance = tl::instantiate(*m_spec, problem(), config(), m_limits);
  layouts.set_kernel_layouts(m_instance ? (m_spec->layouts ? m_spec->layouts(m_instance->problem, m_instance->config)
                                                          : std::vector<LayoutInfo>{})
                                        : std::vector<LayoutInfo>{});
  if (m_auto_compile && m_instance) compile();
}

Status App::show_panel(const std::string& name, bool select) {
  for (const char* p : kPanels) {
    if (name == p) {
      m_ws.panels[p] = true;
      if (select) m_select_tab = p;
      return Status::success();
    }
  }
  std::string all;
  for (const char* p : kPanels) all += (all.empty() ? "" : ", ") + std::string(p);
  return make_error(ErrorCode::invalid_argument, "no panel '" + name + "' (panels: " + all + ")");
}

void App::hide_panel(const std::string& name) { m_ws.panels[name] = false; }

const RunEntry* App::find_run(int id) const {
  for (const auto& r : m_runs)
    if (r.id == id) return &r;
  return nullptr;
}

void App::set_ceilings(std::optional<Ceilings> c, std::string from) {
  m_ceilings = std::move(c);
  m_ceilings_from = std::move(from);
}

void App::measure_ceilings() {
  if (m_measuring) return;
  if (!has_device()) {
    message(Message::Level::warning, "cannot measure ceilings: no GPU (" + why_no_device() + ")");
    return;
  }
  m_measuring = true;
  m_jobs.post("measure ceilings", [this]() -> JobQueue::Done {
    auto c = session().ceilings();
    return [this, c = std::move(c)]() mutable {
      m_measuring = false;
      if (!c) {
        message(Message::Level::error, "measure ceilings: " + c.status().message());
        return;
      }
      set_ceilings(*c, "measured on this GPU (" + c->measured_at + ")");
      message(Message::Level::info, "ceilings of " + c->device_name + " measured");
    };
  }, [this](const std::string& e) {
    m_measuring = false;
    message(Message::Level::error, e);
  });
}

// [SECTION] jobs

void App::compile() {
  if (!m_spec) return;
  if (m_compiling) {
    m_compile_again = true;  // one more when this one finishes: the config changed meanwhile
    return;
  }
  m_compiling = true;
  std::string kernel = m_ws.kernel;
  KeyValues problem = this->problem(), config = this->config();
  m_jobs.post("compile " + kernel, [this, kernel, problem, config]() -> JobQueue::Done {
    CompileResult r;
    r.kernel = kernel;
    r.problem = problem;
    r.config = config;
    Session& s = session();
    auto p = s.prepare(kernel, problem, config);
    if (p) {
      r.compiled = std::move(p->compiled);
      r.error_lines = parse_error_lines(r.compiled->log, s.jit().sources());
    } else {
      r.error = p.status().message();
      r.error_lines = parse_error_lines(r.error, s.jit().sources());
    }
    return [this, r = std::move(r)]() mutable {
      m_compiling = false;
      if (!r.error.empty()) message(Message::Level::error, r.error);
      m_compile = std::move(r);
      if (m_compile_again) {
        m_compile_again = false;
        compile();
      }
    };
  }, [this](const std::string& e) {
    m_compiling = false;
    m_compile = {};
    m_compile.error = e;
    message(Message::Level::error, e);
  });
}

void App::run(const std::string& kind) {
  if (!m_spec) return;
  if (!has_device()) {
    message(Message::Level::warning, "cannot run: no GPU (" + why_no_device() + ")");
    return;
  }
  std::string kernel = m_ws.kernel;
  KeyValues problem = this->problem(), config = this->config();
  m_jobs.post(kind + " " + kernel, [this, kind, kernel, problem, config]() -> JobQueue::Done {
    Session& s = session();
    RunEntry e;
    e.kind = kind;
    auto p = s.prepare(kernel, problem, config);
    if (!p) {
      e.record = failed_record(kernel, problem, config, p.status());
    } else {
      RunOptions o;
      if (kind == "bench") o.vs = baseline_of(p->instance);
      if (kind == "timeline") {
        Status st = add_timeline_build(s.jit(), *p);
        if (!st) e.record = failed_record(kernel, problem, config, st);
        o.timeline = st.ok();
      }
      if (kind != "timeline" || o.timeline) e.record = s.run(*p, o);
      e.context = session_run_context(s, p->instance);
    }
    to_json(e.json, e.record);
    if (e.record.timeline) e.timeline = std::make_shared<const Timeline>(*e.record.timeline);
    return [this, e = std::move(e)]() mutable {
      e.id = m_next_run_id++;
      const RunRecord& r = e.record;
      if (r.failure)
        message(Message::Level::error, "run " + std::to_string(e.id) + " (" + e.kind + " " + r.kernel +
                                           "): " + r.failure_text());
      else
        message(r.passed() ? Message::Level::info : Message::Level::warning,
                "run " + std::to_string(e.id) + ": " + r.kernel + " " + (r.passed() ? "PASS" : "FAIL") + ", " +
                    std::to_string(r.time_ms.median) + " ms");
      if (!r.timeline_error.empty()) message(Message::Level::warning, "timeline: " + r.timeline_error);
      selected_run = e.id;
      if (e.timeline) timeline.set(e.timeline, "run " + std::to_string(e.id));
      record_run(e);
      m_runs.push_back(std::move(e));
    };
  }, [this](const std::string& e) { message(Message::Level::error, e); });
}

// [SECTION] results store

ResultsStore* App::store_on_store_thread() {
  if (!m_store) {
    auto opened = ResultsStore::open(m_store_path);
    if (!opened) {
      m_store_error = opened.status().message();
      return nullptr;
    }
    m_store = std::move(*opened);
    m_reader.reset();
    m_store_error.clear();
  }
  return m_store.get();
}

ResultsStore* App::reader_on_store_thread() {
  if (m_store) return m_store.get();
  if (!m_reader) {
    const std::string path = m_store_path.empty() ? default_results_db_path() : m_store_path;
    std::error_code ec;
    m_store_error.clear();
    if (!std::filesystem::exists(path, ec)) return nullptr;  // nothing recorded yet
    auto opened = ResultsStore::open_read_only(path);
    if (!opened) {
      m_store_error = opened.status().message();
      return nullptr;
    }
    m_reader = std::move(*opened);
  }
  return m_reader.get();
}

void App::load_history() {
  results.set_loading(true);
  m_store_jobs.post("load results history", [this]() -> JobQueue::Done {
    ResultsStore* store = reader_on_store_thread();
    if (!store) return [this, e = m_store_error] {
      results.set_loading(false);
      results.set_error(e);
    };
    ResultsQuery q;
    q.limit = kHistoryLimit;
    auto rows = store->query(q);
    if (!rows) return [this, e = rows.status().message()] {
      results.set_loading(false);
      results.set_error(e);
    };
    std::vector<HistoryRow> fresh;
    fresh.reserve(rows->size());
    for (auto& r : *rows) fresh.push_back(make_history_row(std::move(r)));
    return [this, fresh = std::move(fresh), path = store->path()]() mutable {
      results.set_loading(false);
      results.set_error("");
      results.set_loaded_from(path, fresh.size());
      // Rows this session stored keep their link to the run (timeline, roofline).
      for (auto& f : fresh)
        for (const auto& r : m_runs)
          if (r.stored_id == f.run.id) f.session_run = r.id;
      results.add_rows(std::move(fresh));
    };
  });
}

void App::set_results_db(const std::string& path) {
  m_store_jobs.post("open results store " + path, [this, path]() -> JobQueue::Done {
    m_store.reset();
    m_reader.reset();
    m_store_path = path;
    return [this, path] {
      m_options.results_db = path;
      results = ResultsPanel();  // another store: other history
      for (const auto& r : m_runs) results.add_rows({make_history_row(stored_run_of(r.record, r.context), r.id)});
      load_history();
    };
  });
}

// Recording runs the way `tilelab bench` does (one row per run, its context), on the store's thread; the row then
// joins the table. With recording off, or no store, the run is shown unstored.
void App::record_run(const RunEntry& e) {
  if (!m_options.record_runs || (e.record.failure && e.record.failure->code == ErrorCode::no_device)) {
    results.add_rows({make_history_row(stored_run_of(e.record, e.context), e.id)});
    return;
  }
  m_store_jobs.post("store run " + std::to_string(e.id), [this, id = e.id, record = e.record,
                                                           context = e.context]() -> JobQueue::Done {
    ResultsStore* store = store_on_store_thread();
    std::string why = m_store_error;
    if (store) {
      auto row = store->insert(record, context);
      if (row) {
        ResultsQuery q;
        q.ids = {*row};
        auto rows = store->query(q);
        if (rows && rows->size() == 1)
          return [this, id, r = std::move(rows->front())]() mutable {
            for (auto& run : m_runs)
              if (run.id == id) run.stored_id = r.id;
            results.add_rows({make_history_row(std::move(r), id)});
          };
        why = rows ? "the stored row was not found again" : rows.status().message();
      } else {
        why = row.status().message();
      }
    }
    return [this, id, record, context, why] {
      message(Message::Level::error, "run " + std::to_string(id) + " not recorded: " + why);
      results.add_rows({make_history_row(stored_run_of(record, context), id)});
    };
  });
}

// [SECTION] sweep

Status App::start_sweep(const std::string& space_text, const std::string& gpus_text) {
  if (!m_spec) return make_error(ErrorCode::not_found, "no kernel is open");
  if (m_sweep.running) return make_error(ErrorCode::invalid_argument, "a sweep is running: stop it first");
  auto space = parse_sweep_space(space_text);
  if (!space) return make_error(ErrorCode::invalid_argument, "sweep space: " + space.status().message());
  std::vector<int> gpus;
  if (gpus_text.find_first_not_of(" \t") != std::string::npos) {
    auto parsed = parse_gpus(gpus_text, static_cast<int>(m_sys.devices.size()), why_no_device());
    if (!parsed) return make_error(ErrorCode::invalid_argument, "sweep GPUs: " + parsed.status().message());
    gpus = *parsed;
  }
  for (const auto& [name, values] : *space) {
    const bool known = std::any_of(m_spec->config.params.begin(), m_spec->config.params.end(),
                                   [&](const ParamSpec& p) { return p.name == name; });
    if (!known) {
      std::string names;
      for (const auto& p : m_spec->config.params) names += (names.empty() ? "" : ", ") + p.name;
      return make_error(ErrorCode::invalid_argument, "sweep space: '" + name + "' is not a config parameter of " +
                                                         m_ws.kernel + " (" + names + ")");
    }
  }
  SweepSpec spec;
  spec.kernel = m_ws.kernel;
  spec.problems = {problem()};
  spec.space = *space;
  spec.gpus = gpus;
  for (const auto& [k, v] : config()) {
    const bool swept = std::any_of(space->begin(), space->end(), [&](const auto& ax) { return ax.first == k; });
    if (!swept) spec.base_config[k] = v;
  }
  m_sweep = SweepState();
  m_sweep.running = true;
  m_sweep.kernel = spec.kernel;
  m_sweep.space_text = space_text;
  m_sweep.space = spec.space;
  m_sweep.id = sweep_id(spec);
  m_sweep.total = spec.problems.size();
  for (const auto& ax : spec.space) m_sweep.total *= ax.second.size();  // the engine's count, known before any point
  ++m_sweep.generation;
  m_sweep_stop = false;
  const bool record = m_options.record_runs;
  const std::string db = m_options.results_db;
  m_jobs.post("sweep " + spec.kernel, [this, spec, record, db]() -> JobQueue::Done {
    Session& s = session();
    std::string store_note;
    if (record && m_sweep_store && m_sweep_store->path() != (db.empty() ? default_results_db_path() : db))
      m_sweep_store.reset();  // the user switched stores since the last sweep
    if (record && !m_sweep_store) {
      auto opened = ResultsStore::open(db);
      if (opened) m_sweep_store = std::move(*opened);
      else store_note = opened.status().message();
    }
    ResultsStore* store = record ? m_sweep_store.get() : nullptr;
    auto on_point = [this](const SweepPoint& p, const SweepProgress& pr) {
      nlohmann::json j = p;
      m_jobs.deliver([this, j = std::move(j), pr, row = p.row_id] {
        m_sweep.points.push_back(j);
        m_sweep.done = pr.done;
        m_sweep.total = pr.total;
        if (j.contains("record") && j["status"] != "skipped" && j["status"] != "not_run") m_sweep.any_ran = true;
        ++m_sweep.generation;
        if (row > 0) {
          ++m_sweep.stored;
          // The stored row joins the Results table (read back on the store's thread).
          m_store_jobs.post("read run " + std::to_string(row), [this, row]() -> JobQueue::Done {
            ResultsStore* st = store_on_store_thread();
            if (!st) return {};
            ResultsQuery q;
            q.ids = {row};
            auto rows = st->query(q);
            if (!rows || rows->empty()) return {};
            return [this, r = std::move(rows->front())]() mutable { results.add_rows({make_history_row(std::move(r))}); };
          });
        }
      });
    };
    auto sum = run_sweep(s, store, spec, on_point, &m_sweep_stop);
    return [this, sum = std::move(sum), store_note]() mutable {
      m_sweep.running = m_sweep.stopping = false;
      ++m_sweep.generation;
      if (!store_note.empty()) message(Message::Level::warning, "sweep not recorded: " + store_note);
      if (!sum) {
        m_sweep.error = sum.status().message();
        message(Message::Level::error, "sweep: " + m_sweep.error);
        return;
      }
      char line[256];
      std::snprintf(line, sizeof line, "%zu points: %zu ran (%zu passed), %zu skipped, %zu not run (no GPU), %zu already "
                    "stored; %zu compiled (%zu from cache) in %.1f s", sum->total, sum->ran, sum->passed, sum->skipped,
                    sum->not_run, sum->resumed, sum->compiled, sum->compile_cache_hits, sum->wall_s);
      m_sweep.summary = line;
      if (sum->gpus.size() > 1)
        for (const SweepGpu& g : sum->gpus)
          m_sweep.summary += "; GPU " + std::to_string(g.index) + " ran " + std::to_string(g.ran) +
                             (g.restarts ? " (" + std::to_string(g.restarts) + " worker restarts)" : "");
      if (sum->interrupted) m_sweep.summary += "; stopped (start again to continue)";
      message(Message::Level::info, "sweep " + sum->id + ": " + m_sweep.summary);
    };
  }, [this](const std::string& e) {
    m_sweep.running = m_sweep.stopping = false;
    m_sweep.error = e;
    ++m_sweep.generation;
    message(Message::Level::error, e);
  });
  return Status::success();
}

void App::stop_sweep() {
  if (!m_sweep.running) return;
  m_sweep_stop = true;
  m_sweep.stopping = true;
  ++m_sweep.generation;
}

void App::load_sweeps() {
  m_store_jobs.post("list sweeps", [this]() -> JobQueue::Done {
    ResultsStore* store = reader_on_store_thread();
    if (!store && m_store_error.empty()) return [this] { sweep.set_stored_sweeps({}); };  // no store yet
    if (!store) return [this, e = m_store_error] { message(Message::Level::error, e); };
    auto rows = store->sweeps();
    if (!rows) return [this, e = rows.status().message()] { message(Message::Level::error, e); };
    return [this, rows = std::move(*rows)]() mutable { sweep.set_stored_sweeps(std::move(rows)); };
  });
}

Status App::show_stored_sweep(const std::string& id) {
  if (m_sweep.running) return make_error(ErrorCode::invalid_argument, "a sweep is running: stop it first");
  m_store_jobs.post("read sweep " + id, [this, id]() -> JobQueue::Done {
    ResultsStore* store = reader_on_store_thread();
    if (!store) return [this, e = m_store_error.empty() ? "no results store yet: no sweep " + id : m_store_error] {
      message(Message::Level::error, e);
    };
    auto sweeps = store->sweeps();
    ResultsQuery q;
    q.sweep_id = id;
    auto rows = store->query(q);
    if (!rows || !sweeps) return [this, e = (!rows ? rows.status() : sweeps.status()).message()] {
      message(Message::Level::error, e);
    };
    SweepState st;
    st.id = id;
    st.from_store = true;
    for (const auto& sw : *sweeps)
      if (sw.id == id) {
        st.kernel = sw.kernel;
        for (const auto& ax : sw.space) {
          std::vector<std::string> values;
          for (const auto& v : ax["values"]) values.push_back(v.is_string() ? v.get<std::string>() : v.dump());
          st.space.push_back({ax["name"].get<std::string>(), values});
          std::string text;
          for (const auto& v : values) text += (text.empty() ? "" : ",") + v;
          st.space_text += (st.space_text.empty() ? "" : ";") + ax["name"].get<std::string>() + "=" + text;
        }
      }
    if (st.kernel.empty()) return [this, id] { message(Message::Level::error, "no sweep " + id + " in the results store"); };
    // Rows as the heat map reads them (config, status, metrics, resources), without the bulky record.
    for (auto& r : *rows) {
      nlohmann::json j = r;
      // smem as a live sweep's points have it: static + the launch's dynamic shared memory.
      if (j["record"].is_object() && j["record"].contains("launch") && j["record"]["launch"].is_object())
        j["smem"] = std::max(0, r.resources.value("shared_static_bytes", 0)) +
                    j["record"]["launch"].value("dynamic_smem", 0);
      j.erase("record");
      st.any_ran = st.any_ran || (r.status != "skipped" && r.median_ms > 0);
      st.points.push_back(std::move(j));
    }
    st.done = st.total = st.stored = st.points.size();
    st.summary = "sweep " + id + " of " + st.kernel + " from the results store: " + std::to_string(st.points.size()) +
                 " stored point(s) over " + st.space_text;
    return [this, st = std::move(st)]() mutable {
      if (m_sweep.running) return;  // one was started meanwhile: it owns the panel
      st.generation = m_sweep.generation + 1;
      m_sweep = std::move(st);
      if (!m_sweep.kernel.empty() && m_sweep.kernel != m_ws.kernel) (void)select_kernel(m_sweep.kernel);
    };
  });
  return Status::success();
}

// [SECTION] SASS

void App::disassemble() {
  if (!m_compile.compiled) return;
  const std::string key = m_compile.compiled->key + m_compile.compiled->lowered_name;
  if (m_sass.pending || (m_sass.key == key && (!m_sass.text.empty() || !m_sass.error.empty()))) return;
  m_sass = Sass();
  m_sass.key = key;
  m_sass.pending = true;
  // On the store's queue: it never waits behind a compile or a sweep, and the cubin travels with the job.
  m_store_jobs.post("disassemble " + m_compile.compiled->lowered_name.substr(0, 40),
                    [this, key, cubin = m_compile.compiled->cubin]() -> JobQueue::Done {
    Sass out;
    out.key = key;
    const char* path = std::getenv("PATH");
    const auto dirs = cuda_bin_dirs();
    auto tool = find_disassembler(path ? path : "", dirs);
    if (!tool) {
      out.error = no_disassembler_message(dirs);
    } else {
      out.tool = tool->path;
      auto text = tl::gui::disassemble(*tool, cubin);
      if (text) out.text = std::move(*text);
      else out.error = text.status().message();
    }
    return [this, out = std::move(out)]() mutable {
      if (out.key == m_sass.key) m_sass = std::move(out);
    };
  });
}

void App::refresh_sass() {
  m_sass = Sass();
  disassemble();
}

// [SECTION] frame

void App::frame() {
  m_jobs.drain();
  m_store_jobs.drain();
  handle_shortcuts();
  const ImGuiViewport* vp = ImGui::GetMainViewport();
  ImGui::SetNextWindowPos(vp->WorkPos);
  ImGui::SetNextWindowSize(vp->WorkSize);
  const ImGuiWindowFlags host = ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoMove |
                                ImGuiWindowFlags_NoBringToFrontOnFocus | ImGuiWindowFlags_NoSavedSettings |
                                ImGuiWindowFlags_MenuBar;
  ImGui::PushStyleVar(ImGuiStyleVar_WindowRounding, 0);
  ImGui::Begin("TileLab##main", nullptr, host);
  ImGui::PopStyleVar();
  draw_menu();
  const float status_h = ImGui::GetFrameHeightWithSpacing() + 4;
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const float body_h = avail.y - status_h;
  const bool sidebar = m_ws.shown("Sidebar");
  if (sidebar) {
    m_ws.sidebar_width = std::clamp(m_ws.sidebar_width, 220.0f, std::max(220.0f, avail.x - 300));
    draw_sidebar(m_ws.sidebar_width, body_h);
    ImGui::SameLine(0, ui(0));
    // The splitter: drag to resize the sidebar.
    ImGui::InvisibleButton("##splitter", ImVec2(6, body_h));
    if (ImGui::IsItemActive()) {
      m_ws.sidebar_width += ImGui::GetIO().MouseDelta.x;
      m_changed = true;
    }
    if (ImGui::IsItemHovered() || ImGui::IsItemActive()) ImGui::SetMouseCursor(ImGuiMouseCursor_ResizeEW);
    ImGui::SameLine(0, ui(0));
  }
  ImGui::BeginChild("##mainarea", ImVec2(0, body_h), false);
  draw_main_area();
  ImGui::EndChild();
  draw_status_bar();
  ImGui::End();
  save_workspace_if_changed();
}

// The GLFW backend indexes io.KeysDown by GLFW key codes, which for letters are their ASCII capitals.
void App::handle_shortcuts() {
  const ImGuiIO& io = ImGui::GetIO();
  if (!io.KeyCtrl || io.KeyAlt || io.KeySuper) return;
  for (const Shortcut& k : kShortcuts) {
    if (io.KeyShift == k.shift && ImGui::IsKeyPressed(k.key, false)) {
      (void)do_action(k.action);
      return;
    }
  }
}

void App::draw_menu() {
  if (!ImGui::BeginMenuBar()) return;
  if (ImGui::BeginMenu("View")) {
    bool s = m_ws.shown("Sidebar");
    if (ImGui::MenuItem("Kernel sidebar", nullptr, &s)) m_ws.panels["Sidebar"] = s;
    ImGui::Separator();
    for (const char* p : kPanels) {
      bool shown = m_ws.shown(p);
      if (ImGui::MenuItem(p, nullptr, &shown)) {
        m_ws.panels[p] = shown;
        if (shown) m_select_tab = p;
      }
    }
    ImGui::Separator();
    if (ImGui::MenuItem("Dark theme", nullptr, dark())) set_theme("dark");
    if (ImGui::MenuItem("Light theme", nullptr, !dark())) set_theme("light");
    ImGui::EndMenu();
  }
  if (ImGui::BeginMenu("Kernel")) {
    for (const Shortcut& k : kShortcuts) {
      std::string why;
      const bool enabled = can_run(k.action, &why) && !(k.action == std::string("compile") && m_compiling);
      if (ImGui::MenuItem(k.label, k.keys, false, enabled)) (void)do_action(k.action);
      if (!enabled && !why.empty() && ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled))
        ImGui::SetTooltip("%s", why.c_str());
    }
    ImGui::Separator();
    if (ImGui::MenuItem("Auto-compile on change", nullptr, &m_auto_compile) && m_auto_compile) compile();
    ImGui::EndMenu();
  }
  ImGui::TextDisabled("  TileLab %s", TILELAB_VERSION);
  ImGui::EndMenuBar();
}

// The sidebar: the kernel, its config and problem scroll; the verdict and the loop's controls stay pinned below
// them, so Compile / Run / Bench / Capture are always in reach.
void App::draw_sidebar(float width, float height) {
  ImGui::BeginChild("##sidebar", ImVec2(width, height), true);
  if (m_footer_h <= 0) m_footer_h = 220 * ui_scale();  // the first frame's guess; measured from then on
  const float footer = m_spec ? std::min(m_footer_h, ImGui::GetContentRegionAvail().y * 0.6f) : 0;
  ImGui::BeginChild("##sidebar_top", ImVec2(0, footer > 0 ? -footer : 0), false);
  draw_kernel_browser();
  if (m_spec) {
    ImGui::Separator();
    ImGui::TextUnformatted(m_spec->name.c_str());
    ImGui::TextWrapped("%s", m_spec->summary.c_str());
    if (ImGui::CollapsingHeader("Config", ImGuiTreeNodeFlags_DefaultOpen)) draw_params(m_spec->config, true);
    if (ImGui::CollapsingHeader("Problem", ImGuiTreeNodeFlags_DefaultOpen)) draw_params(m_spec->problem, false);
  }
  ImGui::EndChild();
  if (m_spec) {
    ImGui::BeginChild("##sidebar_run", ImVec2(0, 0), false);
    ImGui::Separator();
    if (m_instance) {
      text_fit("valid: " + m_instance->name_expression, ok_color());
      if (ImGui::IsItemClicked()) ImGui::SetClipboardText(m_instance->name_expression.c_str());
      if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s\n(click to copy)", m_instance->name_expression.c_str());
      const auto& g = m_instance->launch;
      char geometry[160];
      std::snprintf(geometry, sizeof geometry, "grid (%u,%u,%u) block (%u,%u,%u) smem %u B", g.grid.x, g.grid.y,
                    g.grid.z, g.block.x, g.block.y, g.block.z, g.dynamic_smem);
      text_fit_dim(geometry);
    } else {
      ImGui::PushStyleColor(ImGuiCol_Text, error_color());
      ImGui::TextWrapped("cannot run: %s", m_instance.status().message().c_str());
      ImGui::PopStyleColor();
    }
    draw_run_controls();
    m_footer_h = ImGui::GetCursorPosY() + ImGui::GetStyle().ItemSpacing.y;
    ImGui::EndChild();
  }
  ImGui::EndChild();
}

void App::draw_kernel_browser() {
  ImGui::SetNextItemWidth(-1);
  ImGui::InputTextWithHint("##search", "search kernels", m_search, sizeof(m_search));
  const std::string needle = m_search;
  ImGui::BeginChild("##browser", ImVec2(0, ui(150)), true);
  std::map<std::string, std::vector<const KernelSpec*>> families;
  for (const auto* s : library_registry().list()) {
    if (!needle.empty() && s->name.find(needle) == std::string::npos && s->summary.find(needle) == std::string::npos)
      continue;
    families[s->family].push_back(s);
  }
  for (const auto& [family, specs] : families) {
    ImGui::SetNextItemOpen(true, ImGuiCond_Once);
    if (!needle.empty()) ImGui::SetNextItemOpen(true);
    if (ImGui::TreeNode(family.c_str())) {
      for (const auto* s : specs) {
        if (ImGui::Selectable(s->name.c_str(), s == m_spec)) (void)select_kernel(s->name);
        if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", s->summary.c_str());
      }
      ImGui::TreePop();
    }
  }
  if (families.empty()) ImGui::TextDisabled("no kernel matches '%s'", m_search);
  ImGui::EndChild();
}

void App::draw_params(const Schema& schema, bool is_config) {
  const KeyValues& given = is_config ? config() : problem();
  ImGui::PushID(is_config ? "config" : "problem");
  for (const ParamSpec& p : schema.params) {
    const std::string current = schema.value_of(p.name, given);
    std::string chosen = current;
    ImGui::PushID(p.name.c_str());
    ImGui::SetNextItemWidth(std::max(80.0f, ImGui::GetContentRegionAvail().x * 0.6f));
    if (p.type == ParamType::bool_) {
      bool b = current == "true" || current == "1";
      if (ImGui::Checkbox(p.name.c_str(), &b)) chosen = b ? "true" : "false";
    } else if (!p.choices.empty()) {
      if (ImGui::BeginCombo(p.name.c_str(), current.c_str())) {
        for (const auto& c : p.choices)
          if (ImGui::Selectable(c.c_str(), c == current)) chosen = c;
        ImGui::EndCombo();
      }
    } else {
      std::int64_t v = 0;
      try {
        v = std::stoll(current);
      } catch (...) {
        v = p.min;
      }
      // Wide ranges (problem sizes) get a logarithmic slider; ctrl+click types a value.
      const bool log = p.max > 4096 && p.min > 0;
      if (ImGui::SliderScalar(p.name.c_str(), ImGuiDataType_S64, &v, &p.min, &p.max, "%" PRId64,
                              log ? ImGuiSliderFlags_Logarithmic : 0))
        chosen = std::to_string(std::clamp(v, p.min, p.max));
    }
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s\n%s (default %s)", p.help.c_str(), p.describe_allowed().c_str(),
                                                  p.describe_default().c_str());
    if (chosen != current) {
      Status st = is_config ? set_config(p.name, chosen) : set_problem(p.name, chosen);
      if (!st) message(Message::Level::error, st.message());
    }
    ImGui::PopID();
  }
  if (ImGui::SmallButton("defaults")) {
    (is_config ? m_ws.configs : m_ws.problems)[m_ws.kernel].clear();
    revalidate();
  }
  ImGui::PopID();
}

void App::draw_run_controls() {
  const bool can_compile = can_run("compile");
  ImGui::BeginDisabled(!can_compile || m_compiling);
  if (ImGui::Button(m_compiling ? "Compiling…" : "Compile")) compile();
  ImGui::EndDisabled();
  if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled)) ImGui::SetTooltip("NVRTC, on a background thread (Ctrl+B)");
  ImGui::SameLine();
  if (ImGui::Checkbox("auto", &m_auto_compile) && m_auto_compile) compile();
  if (m_compile.compiled && m_compile.kernel == m_ws.kernel) {
    const CompiledKernel& c = *m_compile.compiled;
    const ResourceUsage& r = c.resources;
    const bool stale = m_compile.config != config() || m_compile.problem != problem();
    char line[200];
    std::snprintf(line, sizeof line, "%s%d regs, %d B smem (static), spills %d/%d B, stack %d B", stale ? "(stale) " : "",
                  r.registers, r.shared_static_bytes, r.spill_store_bytes, r.spill_load_bytes, r.stack_frame_bytes);
    text_fit(line);
    std::snprintf(line, sizeof line, "%s, %.0f ms%s", c.arch.c_str(), c.compile_ms, c.from_cache ? " (cache)" : "");
    text_fit_dim(line);
  } else if (!m_compile.error.empty() && m_compile.kernel == m_ws.kernel) {
    ImGui::PushStyleColor(ImGuiCol_Text, error_color());
    ImGui::TextWrapped("%s", m_compile.error.substr(0, 400).c_str());
    ImGui::PopStyleColor();
  }
  ImGui::Separator();
  // Run / Bench / Capture on one line while they fit the sidebar, else wrapped: a narrow sidebar cuts none off.
  bool first = true;
  for (const Shortcut& k : kShortcuts) {
    if (k.action == std::string("compile")) continue;
    const std::string library = k.action == std::string("bench") && m_instance ? baseline_of(*m_instance) : "";
    const std::string label = library.empty() ? k.label : "Bench vs " + library_title(library);
    if (!first) same_line_if_room(button_width(label.c_str()));
    first = false;
    std::string why;
    ImGui::BeginDisabled(!can_run(k.action, &why));
    if (ImGui::Button(label.c_str())) (void)do_action(k.action);
    ImGui::EndDisabled();
    if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled))
      ImGui::SetTooltip("%s%s%s", k.keys, why.empty() ? "" : "\n", why.c_str());
  }
  if (!has_device()) {
    ImGui::PushStyleColor(ImGuiCol_Text, error_color());
    ImGui::TextWrapped("No GPU: run, bench and capture are off; compiling, layouts, model timelines and Lua work.");
    ImGui::PopStyleColor();
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", why_no_device().c_str());
  } else if (!can_compile) {
    ImGui::TextDisabled("fix the config to run");
  }
  if (m_spec && m_spec->probes.empty()) ImGui::TextDisabled("no timeline probes in this kernel");
  draw_last_run();
}

// The selected (else the latest) run of this session: its verdict, time, throughput and the baseline beside it,
// so a Bench vs cuBLAS or cuDNN answers in the sidebar without opening the Results table.
void App::draw_last_run() {
  const RunEntry* e = find_run(selected_run);
  if (!e && !m_runs.empty()) e = &m_runs.back();
  if (!e) return;
  const RunRecord& r = e->record;
  ImGui::Separator();
  text_fit(strf("run %d (%s): %s", e->id, e->kind.c_str(), r.kernel.c_str()));
  if (r.failure) {
    ImGui::PushStyleColor(ImGuiCol_Text, error_color());
    ImGui::TextWrapped("%s", r.failure_text().substr(0, 300).c_str());
    ImGui::PopStyleColor();
    return;
  }
  ImGui::TextColored(r.passed() ? ok_color() : error_color(), "%s", r.passed() ? "PASS" : "FAIL");
  ImGui::SameLine();
  ImGui::Text("rel err %.1e", r.rel_error());
  if (r.time_ms.median > 0) {
    ImGui::Text("median %.4f ms (%zu runs)", r.time_ms.median, r.time_ms.count);
    if (r.tflops > 0) ImGui::Text("%.1f TFLOP/s, %.0f GB/s", r.tflops, r.gbps);
    else ImGui::Text("%.0f GB/s", r.gbps);
    if (r.efficiency.value > 0)
      text_fit_dim(strf("%.0f%% of %s (%s bound)", 100 * r.efficiency.value, r.efficiency.ceiling.c_str(),
                        r.efficiency.bound.c_str()));
  }
  if (r.baseline) {
    const BaselineResult& b = *r.baseline;
    if (!b.error.empty()) {
      ImGui::PushStyleColor(ImGuiCol_Text, error_color());
      ImGui::TextWrapped("%s not run: %s", b.name.c_str(), b.error.substr(0, 200).c_str());
      ImGui::PopStyleColor();
    } else if (b.time_ms.median > 0) {
      text_fit(strf("%s: %.4f ms, %.1f TFLOP/s", b.name.c_str(), b.time_ms.median,
                    r.flops / (b.time_ms.median * 1e-3) * 1e-12));
      if (r.time_ms.median > 0)
        text_fit(strf("%s / %s = %.2fx throughput", r.kernel.c_str(), b.name.c_str(), b.time_ms.median / r.time_ms.median));
      text_fit_dim(strf("rel diff vs %s %.1e", b.name.c_str(), b.rel_vs_kernel));
    }
  }
  if (e->timeline)
    text_fit_dim(strf("timeline: %zu events, %zu tracks (Timeline tab)", e->timeline->events.size(),
                      e->timeline->tracks.size()));
  if (!r.timeline_error.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, error_color());
    ImGui::TextWrapped("timeline: %s", r.timeline_error.substr(0, 200).c_str());
    ImGui::PopStyleColor();
  }
}

void App::draw_main_area() {
  if (ImGui::BeginTabBar("##panels", ImGuiTabBarFlags_Reorderable)) {
    for (const char* p : kPanels) {
      bool open = m_ws.shown(p);
      if (!open) continue;
      ImGuiTabItemFlags flags = m_select_tab == p ? ImGuiTabItemFlags_SetSelected : 0;
      const bool visible = ImGui::BeginTabItem(p, &open, flags);
      if (!open) {
        m_ws.panels[p] = false;
      }
      if (visible) {
        if (m_ws.tab != p) m_ws.tab = p;
        const std::string name = p;
        if (name == "Layouts") layouts.draw(plot_theme(), ui_scale());
        else if (name == "Source") source.draw_source(*this);
        else if (name == "PTX") source.draw_ptx(*this);
        else if (name == "Results") results.draw(*this);
        else if (name == "Sweep") sweep.draw(*this);
        else if (name == "Timeline") timeline.draw(*this);
        else if (name == "Roofline") roofline.draw(*this);
        else if (name == "Lua") lua.draw(*this);
        else if (name == "Device") device.draw(*this);
        ImGui::EndTabItem();
      }
    }
    m_select_tab.clear();
    ImGui::EndTabBar();
  }
}

void App::draw_status_bar() {
  ImGui::Separator();
  double secs = 0;
  int waiting = 0;
  std::string job = m_jobs.current(&secs, &waiting);
  if (job.empty()) job = m_store_jobs.current(&secs, &waiting);
  if (m_sweep.running) job += " " + std::to_string(m_sweep.done) + "/" + std::to_string(m_sweep.total);
  if (!job.empty()) {
    const char spin[] = "|/-\\";
    ImGui::Text("%c %s (%.1f s)%s", spin[static_cast<int>(secs * 8) % 4], job.c_str(), secs,
                waiting ? (" +" + std::to_string(waiting) + " queued").c_str() : "");
  } else if (lua.running()) {
    ImGui::Text("running %s", lua.path().c_str());
  } else {
    ImGui::TextDisabled("ready, started in %.0f ms", startup_ms);
  }
  if (!m_messages.empty()) {
    const Message& m = m_messages.back();
    ImGui::SameLine();
    // The latest message on the rest of the line (elided); hover for every message in full.
    const std::string line = elide(" | " + m.text.substr(0, m.text.find('\n')), ImGui::GetContentRegionAvail().x);
    ImGui::TextColored(m.level == Message::Level::error     ? error_color()
                       : m.level == Message::Level::warning ? warn_color()
                                                            : ImGui::GetStyle().Colors[ImGuiCol_Text],
                       "%s", line.c_str());
    if (ImGui::IsItemHovered()) {
      ImGui::BeginTooltip();
      ImGui::PushTextWrapPos(ImGui::GetFontSize() * 50);
      for (const auto& msg : m_messages) ImGui::TextUnformatted(msg.text.c_str());
      ImGui::PopTextWrapPos();
      ImGui::EndTooltip();
    }
  }
}

}  // namespace tl::gui
