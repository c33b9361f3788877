// Window-free logic of the Results, Sweep and SASS views: history rows, their filter and order, sweep spaces, and
// finding and running a disassembler. Unit-tested in tests/gui/test_gui_core.cpp.
#pragma once

// The Results panel shows rows of the results store (history, loaded on a job) and this session's runs that were
// not stored (recording off, or the store could not be opened), both as StoredRun so that one table, one sort and
// one comparison (compare_runs, as `tilelab results --compare`) serve them all. Filtering and sorting happen
// when the rows or the sort change, not every frame.

#include <cstddef>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include "runtime/results/results_store.hpp"
#include "runtime/spec/kernel_spec.hpp"

namespace tl::gui {

struct HistoryRow {
  StoredRun run;          // run.id > 0: a row of the store; 0: a run of this session that was not stored
  int session_run = 0;    // the App's run id when this app session made it (timeline, roofline), 0 otherwise
  std::string config_text, problem_text;  // "block_M=128,block_N=64", prepared once for drawing and sorting
  // The key the panel picks rows by: the store id, or minus the session run id for a row not stored.
  std::int64_t key() const { return run.id > 0 ? run.id : -static_cast<std::int64_t>(session_run); }
};
HistoryRow make_history_row(StoredRun run, int session_run = 0);
// "k=v,k=v" of a typed_params object (numbers without quotes).
std::string params_line(const nlohmann::json& params);

// Adds rows, replacing any with the same store id (a reload, or a row fetched after its insert), and keeps the
// rows in key order: stored ones by id, then the unstored ones.
void merge_history(std::vector<HistoryRow>& rows, std::vector<HistoryRow> fresh);

// The table's columns, in order (the numbers before the long config and problem texts, so they stay in view).
// `timer` beside the median says how it was taken (events, cupti, graph: `bench --timer`).
enum class HistoryColumn { pick, id, time, kernel, status, median_ms, timer, tflops, gbps, efficiency, rel_error,
                           registers, config, problem, count };
inline constexpr const char* kHistoryColumnNames[] = {"cmp",     "#",    "time",  "kernel", "status",
                                                      "median ms", "timer", "TFLOP/s", "GB/s", "eff %",
                                                      "rel err", "regs", "config", "problem"};
static_assert(std::size(kHistoryColumnNames) == static_cast<std::size_t>(HistoryColumn::count));

struct HistoryView {
  std::string kernel;  // "" : every kernel
  HistoryColumn sort = HistoryColumn::id;
  bool ascending = false;  // newest first by default
};
// Indices of the rows the filter keeps, in the view's order (stable, ties in key order).
std::vector<std::size_t> history_order(const std::vector<HistoryRow>& rows, const HistoryView& view);
// The kernels the rows hold, sorted: the filter's choices.
std::vector<std::string> history_kernels(const std::vector<HistoryRow>& rows);

// [SECTION] sweeps

// A sweep space for the open kernel to start from: each enumerated or power-of-two parameter of the schema with up
// to `max_values` allowed values around the current one, the first `max_axes` such parameters. "" when none.
std::string suggest_sweep_space(const Schema& config, const std::map<std::string, std::string>& current,
                                int max_axes = 2, int max_values = 3);
// The metrics a heat map of sweep points can show: resources always (a sweep without a GPU compiles and reports
// them), run metrics when any point ran.
std::vector<std::string> sweep_metrics(bool any_ran);

// [SECTION] SASS

struct Disassembler {
  std::string path;  // the executable
  std::string kind;  // "nvdisasm" or "cuobjdump"
};
// The first nvdisasm, else cuobjdump, in `path_env` (PATH's form) and then `extra_dirs` (the caller passes
// $CUDA_HOME/bin, $CUDA_PATH/bin, /usr/local/cuda/bin). Only executable regular files count.
std::optional<Disassembler> find_disassembler(const std::string& path_env, const std::vector<std::string>& extra_dirs);
// The directories searched after PATH, for messages and for find_disassembler.
std::vector<std::string> cuda_bin_dirs();
// What the SASS view says when find_disassembler found nothing: which tools, where it looked, how to fix it.
std::string no_disassembler_message(const std::vector<std::string>& extra_dirs);
// Runs the tool on a cubin (written to a temporary file) and returns its listing. Errors name the command and
// quote its output (a cubin for an arch the tool does not know, a tool that crashed).
Result<std::string> disassemble(const Disassembler& tool, const std::vector<char>& cubin);

}  // namespace tl::gui
