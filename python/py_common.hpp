// What every binding of the Python module shares: the process's Session and results store, errors as Python
// exceptions, JSON and parameter maps to and from Python objects.
#pragma once

#include <map>
#include <memory>
#include <string>

#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nlohmann/json.hpp>

#include "runtime/core/status.hpp"
#include "runtime/results/results_store.hpp"
#include "runtime/spec/kernel_spec.hpp"
#include "runtime/trace/timeline.hpp"
#include "session/session.hpp"
#include "viz/scene.hpp"

namespace tl::py {

namespace nb = nanobind;

// A Status on its way to Python: the translator raises the tilelab exception class of its code (tilelab.Error and
// a subclass per ErrorCode, defined in tilelab/_errors.py) with the message the CLI prints.
struct Error {
  ErrorCode code;
  std::string message;
};
[[noreturn]] void raise(const Status& status);
[[noreturn]] void raise(ErrorCode code, std::string message);
// The value of a Result, or raise its Status.
template <class T>
T take(Result<T> r) {
  if (!r) raise(r.status());
  return std::move(*r);
}

// Options of tilelab.configure(); the Session and the store are reopened with them on next use.
struct ModuleOptions {
  SessionOptions session;
  std::string db_path;  // "" -> $TILELAB_DB or the default
};
ModuleOptions& options();
// The process's Session (opened on first use, like the Lua `tl`'s) and results store; raise when they cannot open.
Session& session();
ResultsStore& results_store();
void reset_session();

nb::object to_python(const nlohmann::json& j);
nlohmann::json to_json(nb::handle o);

// {"M": 4096, "dtype": "bf16", "causal": True} (None: {}) -> key=value text as the schemas read it; raises a
// TypeError naming `what` and the key on values that are not numbers, strings or booleans.
std::map<std::string, std::string> param_map(nb::handle o, const std::string& what);
// Validated values as a dict typed by the schema: ints, bools, strings.
nb::dict typed_values(const Schema& schema, const Values& values);

const KernelSpec& find_kernel(const std::string& name);

// timer= and graph_launches= of run/bench and sweep into `timing`; raises InvalidArgumentError naming `who`.
void set_timing(TimingOptions& timing, const std::string& timer, int graph_launches, const char* who);

// tilelab.Timeline and tilelab.Plot (bound in py_timeline.cpp and py_layout.cpp).
struct PyTimeline {
  std::shared_ptr<const Timeline> timeline;
};
struct PyPlot {
  viz::Scene scene;
  std::string kind;
};

void bind_kernels(nb::module_& m);
void bind_layouts(nb::module_& m);
void bind_timelines(nb::module_& m);
void bind_results(nb::module_& m);
void bind_direct(nb::module_& m);

}  // namespace tl::py
