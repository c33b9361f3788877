// History rows (merge, filter, order), sweep space suggestions, and the SASS disassembler lookup and run.
#include "app/gui/history.hpp"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sys/wait.h>

namespace tl::gui {
namespace fs = std::filesystem;

std::string params_line(const nlohmann::json& params) {
  std::string s;
  if (!params.is_object()) return s;
  for (const auto& [k, v] : params.items())
    s += (s.empty() ? "" : ",") + k + "=" + (v.is_string() ? v.get<std::string>() : v.dump());
  return s;
}

HistoryRow make_history_row(StoredRun run, int session_run) {
  HistoryRow r;
  r.config_text = params_line(run.config);
  r.problem_text = params_line(run.problem);
  r.run = std::move(run);
  r.session_run = session_run;
  return r;
}

void merge_history(std::vector<HistoryRow>& rows, std::vector<HistoryRow> fresh) {
  for (auto& f : fresh) {
    auto same = std::find_if(rows.begin(), rows.end(), [&](const HistoryRow& r) {
      return f.run.id > 0 ? r.run.id == f.run.id : (r.run.id == 0 && r.session_run == f.session_run);
    });
    if (same != rows.end()) {
      if (f.session_run == 0) f.session_run = same->session_run;  // a reload keeps which runs this session made
      *same = std::move(f);
    } else {
      rows.push_back(std::move(f));
    }
  }
  std::stable_sort(rows.begin(), rows.end(), [](const HistoryRow& a, const HistoryRow& b) {
    const bool sa = a.run.id > 0, sb = b.run.id > 0;
    if (sa != sb) return sa;
    return sa ? a.run.id < b.run.id : a.session_run < b.session_run;
  });
}

std::vector<std::size_t> history_order(const std::vector<HistoryRow>& rows, const HistoryView& view) {
  std::vector<std::size_t> order;
  order.reserve(rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i)
    if (view.kernel.empty() || rows[i].run.kernel == view.kernel) order.push_back(i);
  const bool asc = view.ascending;
  auto text = [&](const HistoryRow& r) -> const std::string& {
    switch (view.sort) {
      case HistoryColumn::time: return r.run.time;
      case HistoryColumn::kernel: return r.run.kernel;
      case HistoryColumn::config: return r.config_text;
      case HistoryColumn::problem: return r.problem_text;
      case HistoryColumn::timer: return r.run.timer;
      default: return r.run.status;
    }
  };
  auto number = [&](const HistoryRow& r) -> double {
    switch (view.sort) {
      case HistoryColumn::median_ms: return r.run.median_ms;
      case HistoryColumn::tflops: return r.run.tflops;
      case HistoryColumn::gbps: return r.run.gbps;
      case HistoryColumn::efficiency: return r.run.efficiency;
      case HistoryColumn::rel_error: return r.run.rel_error;
      case HistoryColumn::registers: return *r.run.metric("registers");
      default: return static_cast<double>(r.key() > 0 ? r.key() : (1LL << 52) - r.key());  // unstored: newest
    }
  };
  const bool textual = view.sort == HistoryColumn::time || view.sort == HistoryColumn::kernel ||
                       view.sort == HistoryColumn::status || view.sort == HistoryColumn::config ||
                       view.sort == HistoryColumn::problem || view.sort == HistoryColumn::timer;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t ia, std::size_t ib) {
    const HistoryRow &a = rows[ia], &b = rows[ib];
    if (textual) {
      const int c = text(a).compare(text(b));
      return asc ? c < 0 : c > 0;
    }
    const double x = number(a), y = number(b);
    return asc ? x < y : x > y;
  });
  return order;
}

std::vector<std::string> history_kernels(const std::vector<HistoryRow>& rows) {
  std::set<std::string> k;
  for (const auto& r : rows) k.insert(r.run.kernel);
  return {k.begin(), k.end()};
}

// [SECTION] sweeps

std::string suggest_sweep_space(const Schema& config, const std::map<std::string, std::string>& current, int max_axes,
                                int max_values) {
  std::string out;
  int axes = 0;
  for (const ParamSpec& p : config.params) {
    if (axes >= max_axes) break;
    if (p.type == ParamType::bool_) continue;  // a switch, not a tile shape: the user adds it when it matters
    std::vector<std::string> allowed;
    if (!p.choices.empty()) {
      allowed = p.choices;
    } else if (p.type == ParamType::int_ && p.min > 0 && p.max > p.min) {
      // Powers of two in range: tile sizes, stages and thread counts are swept that way.
      for (std::int64_t v = 1; v <= p.max; v *= 2)
        if (v >= p.min) allowed.push_back(std::to_string(v));
      if (allowed.size() < 2) continue;
    } else {
      continue;  // booleans and free-form integers: the user knows better what to try
    }
    const std::string now = config.value_of(p.name, current);
    auto at = std::find(allowed.begin(), allowed.end(), now);
    std::size_t centre = at == allowed.end() ? 0 : static_cast<std::size_t>(at - allowed.begin());
    const std::size_t n = std::min<std::size_t>(allowed.size(), static_cast<std::size_t>(max_values));
    std::size_t first = centre >= n / 2 ? centre - n / 2 : 0;
    first = std::min(first, allowed.size() - n);
    std::string values;
    for (std::size_t i = first; i < first + n; ++i) values += (values.empty() ? "" : ",") + allowed[i];
    out += (out.empty() ? "" : ";") + p.name + "=" + values;
    ++axes;
  }
  return out;
}

std::vector<std::string> sweep_metrics(bool any_ran) {
  std::vector<std::string> m;
  if (any_ran) m = {"tflops", "gbps", "efficiency", "median_ms"};
  // smem: static + the launch's dynamic shared memory (what the config really takes).
  for (const char* r : {"registers", "spill_store_bytes", "smem", "stack_frame_bytes"}) m.push_back(r);
  return m;
}

// [SECTION] SASS

std::vector<std::string> cuda_bin_dirs() {
  std::vector<std::string> dirs;
  for (const char* env : {"CUDA_HOME", "CUDA_PATH"})
    if (const char* d = std::getenv(env); d && *d) dirs.push_back(std::string(d) + "/bin");
  dirs.push_back("/usr/local/cuda/bin");
  std::vector<std::string> unique;
  for (auto& d : dirs)
    if (std::find(unique.begin(), unique.end(), d) == unique.end()) unique.push_back(std::move(d));
  return unique;
}

std::optional<Disassembler> find_disassembler(const std::string& path_env, const std::vector<std::string>& extra_dirs) {
  std::vector<std::string> dirs;
  std::size_t pos = 0;
  while (pos <= path_env.size() && !path_env.empty()) {
    std::size_t end = path_env.find(':', pos);
    if (end == std::string::npos) end = path_env.size();
    if (end > pos) dirs.push_back(path_env.substr(pos, end - pos));
    pos = end + 1;
  }
  dirs.insert(dirs.end(), extra_dirs.begin(), extra_dirs.end());
  for (const char* kind : {"nvdisasm", "cuobjdump"})
    for (const auto& d : dirs) {
      const fs::path p = fs::path(d) / kind;
      std::error_code ec;
      if (fs::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0) return Disassembler{p.string(), kind};
    }
  return std::nullopt;
}

std::string no_disassembler_message(const std::vector<std::string>& extra_dirs) {
  std::string where = "PATH";
  for (const auto& d : extra_dirs) where += ", " + d;
  return "SASS needs nvdisasm or cuobjdump from the CUDA toolkit; neither was found (looked in " + where +
         "). Install the toolkit, or put its bin folder on PATH (or set CUDA_HOME), then press Refresh.";
}

Result<std::string> disassemble(const Disassembler& tool, const std::vector<char>& cubin) {
  if (cubin.empty()) return make_error(ErrorCode::invalid_argument, "no cubin to disassemble (compile the kernel first)");
  char name[] = "/tmp/tilelab-sass-XXXXXX";
  const int fd = ::mkstemp(name);
  if (fd < 0) return make_error(ErrorCode::io, "cannot create a temporary file for the cubin");
  ::close(fd);
  {
    std::ofstream f(name, std::ios::binary);
    f.write(cubin.data(), static_cast<std::streamsize>(cubin.size()));
    if (!f) {
      std::remove(name);
      return make_error(ErrorCode::io, std::string("cannot write the cubin to ") + name);
    }
  }
  // nvdisasm -c: code sections only; cuobjdump -sass: the SASS of every function. stderr joins the listing so that
  // a refusal says why.
  const std::string cmd = "'" + tool.path + "' " + (tool.kind == "nvdisasm" ? "-c " : "-sass ") + name + " 2>&1";
  std::string out;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) {
    std::remove(name);
    return make_error(ErrorCode::io, "cannot start " + tool.path);
  }
  std::array<char, 4096> buf;
  std::size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  const int status = ::pclose(p);
  std::remove(name);
  if (status != 0)
    return make_error(ErrorCode::io, tool.kind + " failed (exit " + std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) +
                                         "): " + out.substr(0, 600));
  return out;
}

}  // namespace tl::gui
