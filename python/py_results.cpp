// tilelab.sweep (the sweep engine, with Python filter and per-result callbacks) and tilelab.results (query, compare).
#include <atomic>
#include <optional>

#include <nanobind/stl/string.h>

#include "py_common.hpp"
#include "session/sweep.hpp"

namespace tl::py {

namespace {

using nb::literals::operator""_a;

nb::dict params_dict(const ParamMap& m) {
  nb::dict d;
  for (const auto& [k, v] : m) {
    char* end = nullptr;
    const long long i = std::strtoll(v.c_str(), &end, 10);
    if (!v.empty() && end == v.c_str() + v.size()) d[k.c_str()] = i;
    else d[k.c_str()] = v;
  }
  return d;
}

// space = {"block_M": [64, 128], ...} -> axes in the dict's order (the first varies slowest).
SweepSpace space_of(nb::handle o) {
  if (!nb::isinstance<nb::dict>(o)) throw nb::type_error("sweep: space: expected a dict of name: [values...]");
  SweepSpace space;
  for (auto [k, v] : nb::borrow<nb::dict>(o)) {
    const std::string name = nb::cast<std::string>(nb::str(k));
    nb::dict one;
    std::vector<std::string> values;
    for (nb::handle x : v) {
      one[name.c_str()] = x;
      values.push_back(param_map(one, "sweep: space").at(name));
    }
    space.emplace_back(name, std::move(values));
  }
  return space;
}

nb::dict sweep(const std::string& kernel, nb::handle problems, nb::handle space, nb::handle config, nb::handle filter,
               nb::handle on_result, int jobs, int rep, int warmup, long long samples, bool store, bool resume,
               bool progress, const std::string& best, const std::string& timer, int graph_launches,
               const std::string& gpus) {
  SweepSpec spec;
  spec.kernel = kernel;
  if (spec.kernel.empty()) raise(ErrorCode::invalid_argument, "sweep: kernel: a kernel name is required (see tilelab.kernels())");
  if (!problems.is_none()) {
    spec.problems.clear();
    for (nb::handle p : problems) spec.problems.push_back(param_map(p, "sweep: problems[" + std::to_string(spec.problems.size()) + "]"));
  }
  spec.space = space_of(space);
  spec.base_config = param_map(config, "sweep: config");
  spec.jobs = jobs;
  if (rep >= 0) spec.run.timing.repeat = rep;
  if (warmup >= 0) spec.run.timing.warmup = warmup;
  set_timing(spec.run.timing, timer, graph_launches, "sweep");
  if (samples >= 0) spec.run.max_samples = static_cast<std::uint64_t>(samples);
  spec.resume = resume;

  // A Python exception in a callback (or Ctrl-C) stops the sweep after the current point; it is raised once the
  // sweep has unwound, never through the engine's frames.
  std::optional<nb::python_error> callback_error;
  bool interrupted = false;
  std::atomic<bool> stop{false};
  if (!filter.is_none()) {
    spec.filter = [&](const ParamMap& problem, const ParamMap& cfg, std::string& why) {
      if (callback_error) return false;
      try {
        nb::object r = filter(params_dict(cfg), params_dict(problem));
        if (nb::isinstance<nb::tuple>(r) && nb::len(r) == 2) {
          if (!r[1].is_none()) why = nb::cast<std::string>(nb::str(r[1]));
          return nb::cast<bool>(nb::bool_(r[0]));
        }
        return nb::cast<bool>(nb::bool_(r));
      } catch (nb::python_error& e) {
        callback_error.emplace(std::move(e));
        stop = true;
        return false;
      }
    };
  }
  Session& s = session();
  if (!gpus.empty()) {
    auto list = parse_gpus(gpus, s.gpu_count(), s.target().why_no_device);
    if (!list) raise(list.status().code(), "sweep: gpus: " + list.status().message());
    spec.gpus = *list;
  }
  ResultsStore* results = store ? &results_store() : nullptr;
  SweepPrinter printer(stdout, false, spec.gpus.size() > 1);
  std::size_t done = 0;
  OnSweepPoint on_point = [&](const SweepPoint& p, const SweepProgress& pr) {
    done = pr.done;
    if (progress) printer.point(p, pr);
    if (PyErr_CheckSignals() != 0) {
      PyErr_Clear();
      interrupted = true;
      stop = true;
    }
    if (on_result.is_none() || callback_error) return;
    try {
      on_result(to_python(nlohmann::json(p)), pr.done, pr.total);
    } catch (nb::python_error& e) {
      callback_error.emplace(std::move(e));
      stop = true;
    }
  };
  auto sum = run_sweep(s, results, spec, on_point, &stop, best.empty() ? "tflops" : best);
  if (progress) printer.finish();
  if (callback_error) throw std::move(*callback_error);
  if (!sum) raise(sum.status().code(), "sweep: " + sum.status().message());
  if (interrupted || sum->interrupted) {
    const std::string msg = "sweep interrupted (Ctrl-C) after " + std::to_string(done) + " of " +
                            std::to_string(sum->points.size()) +
                            " points (each stored as it finished; the same sweep run again skips the stored ones)";
    PyErr_SetString(PyExc_KeyboardInterrupt, msg.c_str());
    throw nb::python_error();
  }
  nb::list points;
  for (const SweepPoint& p : sum->points) points.append(to_python(nlohmann::json(p)));
  nb::dict d;
  d["points"] = points;
  d["id"] = sum->id;
  d["summary"] = to_python(nlohmann::json(*sum));
  d["best"] = sum->best ? nb::object(points[*sum->best]) : nb::none();
  return d;
}

nb::object query(const std::string& kernel, const std::string& since, const std::string& sweep_id, long long limit,
                 const std::string& best) {
  ResultsQuery q;
  q.kernel = kernel;
  q.since = since;
  q.sweep_id = sweep_id;
  q.limit = limit;
  q.best = best;
  auto rows = results_store().query(q);
  if (!rows) raise(rows.status().code(), "results.query: " + rows.status().message());
  return to_python(nlohmann::json(*rows));
}

nb::object compare(long long a, long long b) {
  ResultsQuery q;
  q.ids = {a, b};
  ResultsStore& store = results_store();
  auto rows = store.query(q);
  if (!rows) raise(rows.status().code(), "results.compare: " + rows.status().message());
  const StoredRun *x = nullptr, *y = nullptr;
  for (const auto& r : *rows) {
    if (r.id == a) x = &r;
    if (r.id == b) y = &r;
  }
  if (!x || !y) raise(ErrorCode::not_found, "no run " + std::to_string(x ? b : a) + " in " + store.path());
  return to_python(compare_runs(*x, *y));
}

}  // namespace

void bind_results(nb::module_& m) {
  m.def("sweep", &sweep, "kernel"_a, "problems"_a.none(), "space"_a, "config"_a.none(), "filter"_a.none(),
        "on_result"_a.none(), "jobs"_a, "rep"_a, "warmup"_a, "samples"_a, "store"_a, "resume"_a, "progress"_a, "best"_a,
        "timer"_a = "events", "graph_launches"_a = 0, "gpus"_a = "");
  m.def("results_query", &query, "kernel"_a = "", "since"_a = "", "sweep"_a = "", "limit"_a = 0, "best"_a = "");
  m.def("results_compare", &compare, "a"_a, "b"_a);
  m.def("results_db", [] { return results_store().path(); });
}

}  // namespace tl::py
