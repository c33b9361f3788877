// The _tilelab extension module: the `tilelab` package's C++ half (see tilelab/__init__.py for the API).
#include <nanobind/stl/string.h>

#include "py_common.hpp"

namespace nb = nanobind;
using nb::literals::operator""_a;

NB_MODULE(_tilelab, m) {
  // A Status becomes the tilelab exception of its code (tilelab._errors.ERRORS), with the CLI's message.
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const tl::py::Error& e) {
      nb::object cls = nb::module_::import_("tilelab._errors").attr("error_class")(tl::error_code_name(e.code));
      PyErr_SetObject(cls.ptr(), nb::str(e.message.c_str()).ptr());
    }
  });
  m.attr("version") = TILELAB_VERSION;
  m.def(
      "configure",
      [](const std::string& kernels_dir, const std::string& cache_dir, const std::string& db, double launch_timeout_s,
         const std::string& worker) {
        tl::py::ModuleOptions& o = tl::py::options();
        o.session.kernels_dir = kernels_dir;
        o.session.cache_dir = cache_dir;
        o.session.timeout = std::chrono::milliseconds(static_cast<long long>(launch_timeout_s * 1000));
        o.session.worker.executable = worker;
        o.db_path = db;
        tl::py::reset_session();
      },
      "kernels_dir"_a, "cache_dir"_a, "db"_a, "launch_timeout_s"_a, "worker"_a);
  tl::py::bind_kernels(m);
  tl::py::bind_layouts(m);
  tl::py::bind_timelines(m);
  tl::py::bind_results(m);
  tl::py::bind_direct(m);
}
