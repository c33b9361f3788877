// tilelab.Layout (a SPEC: its algebra, cells, text, plots, bank conflicts), tilelab.layouts(), tilelab.banks() and
// tilelab.Plot (a scene saved as PNG/SVG/PDF).
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>

#include "py_common.hpp"
#include "tile/layout_spec.hpp"
#include "viz/cairo_painter.hpp"
#include "viz/layout_adapter.hpp"
#include "viz/layout_scene.hpp"

namespace tl::py {

namespace {

using nb::literals::operator""_a;

struct PyLayout {
  LayoutSpec spec;
  std::string dtype;  // element type for banks when the SPEC does not say
};

LayoutSpec parse_or_raise(const std::string& text) { return take(viz::parse_layout_spec(text)); }

PyLayout make_layout(const std::string& text, const std::string& dtype) {
  if (!dtype.empty() && dtype_bytes(dtype) == 0)
    raise(ErrorCode::invalid_argument, "layout: unknown dtype '" + dtype + "' (f32, f16, bf16, s8, e4m3, ...)");
  return PyLayout{parse_or_raise(text), dtype};
}

const Layout& any_layout(const PyLayout& l) {
  return l.spec.is_fragment() ? l.spec.fragment.tv() : l.spec.memory.layout();
}

// The plain layout the algebra works on; swizzles and atoms have none.
const Layout& algebra_layout(const PyLayout& l, const char* op) {
  if (l.spec.kind == SpecKind::layout) return l.spec.memory.layout();
  raise(ErrorCode::invalid_argument, std::string(op) + ": '" + l.spec.text + "' is " +
                                         (l.spec.is_fragment() ? "an atom" : "a swizzled layout") +
                                         "; the layout algebra takes plain layouts such as (8,4):(4,1)");
}

// An operand: a Layout or a SPEC string.
Layout operand(nb::handle o, const char* op) {
  if (nb::isinstance<nb::str>(o)) {
    LayoutSpec s = parse_or_raise(nb::cast<std::string>(o));
    if (s.kind != SpecKind::layout)
      raise(ErrorCode::invalid_argument, std::string(op) + ": the operand must be a plain layout (got '" + s.text + "')");
    return s.memory.layout();
  }
  if (!nb::isinstance<PyLayout>(o)) throw nb::type_error((std::string(op) + ": the operand must be a Layout or a SPEC string").c_str());
  return algebra_layout(nb::cast<const PyLayout&>(o), op);
}

PyLayout result(const Layout& r, const char* op, const std::string& dtype) {
  if (!r.ok()) raise(ErrorCode::invalid_argument, std::string(op) + ": " + layout_error_message(r.error()));
  return PyLayout{parse_or_raise(to_string(r)), dtype};
}

int check_index(long long v, int bound, const char* what) {
  if (v < 0 || v >= bound)
    raise(ErrorCode::invalid_argument, std::string(what) + " " + std::to_string(v) + " is out of range 0.." +
                                           std::to_string(bound - 1));
  return static_cast<int>(v);
}

// l(i) / l.at(i) -> offset; l.at(row, col) -> offset (memory layouts); atoms: l.at(thread, value) -> (row, col).
nb::object at(const PyLayout& l, long long a, std::optional<long long> b) {
  if (l.spec.is_fragment()) {
    const Fragment& f = l.spec.fragment;
    if (!b) raise(ErrorCode::invalid_argument, "at: an atom takes (thread, value)");
    TileCoord c = f(check_index(a, f.num_threads(), "thread"), check_index(*b, f.num_values(), "value"));
    return nb::make_tuple(c.row, c.col);
  }
  if (!b) return nb::int_(l.spec.memory(check_index(a, l.spec.memory.layout().size(), "index")));
  return nb::int_(l.spec.offset(check_index(a, l.spec.rows, "row"), check_index(*b, l.spec.cols, "col")));
}

const Fragment& fragment(const PyLayout& l, const char* op) {
  if (!l.spec.is_fragment())
    raise(ErrorCode::invalid_argument, std::string(op) + ": '" + l.spec.text + "' is a memory layout; repeat and "
                                           "replicate grow register fragments (atoms such as mma.m16n8k16.f16.A)");
  return l.spec.fragment;
}

int check_count(long long v, const char* op, const char* what) {
  if (v < 1 || v > (1 << 24))
    raise(ErrorCode::invalid_argument, std::string(op) + ": " + what + " must be 1..16777216 (got " + std::to_string(v) + ")");
  return static_cast<int>(v);
}

viz::LayoutGrid grid_of(const PyLayout& l) { return take(viz::grid_from_spec(l.spec.text, l.dtype)); }

PyPlot plot_layout(const PyLayout& l, const std::string& color, bool inverse, const std::string& title, double cell_size) {
  viz::LayoutGrid grid = grid_of(l);
  viz::GridStyle style;
  if (color.empty()) {
    style.color = grid.has_threads() ? viz::ColorBy::thread : viz::ColorBy::bank;
  } else if (auto mode = viz::parse_color_by(color)) {
    style.color = *mode;
  } else {
    raise(ErrorCode::invalid_argument, "plot: unknown color '" + color + "' (thread, warp, value, bank or index)");
  }
  style.title = title;
  style.cell_size = cell_size;
  auto scene = inverse ? viz::build_inverse_scene(grid, style) : viz::build_layout_scene(grid, style);
  return PyPlot{take(std::move(scene)), "layout"};
}

// The bank analysis of `access` over a shared-memory SPEC (elements of `dtype` unless the SPEC or elem_bytes says).
viz::BankAnalysis bank_analysis(const std::string& spec, const std::string& dtype, const std::string& access, int elem_bytes) {
  if (elem_bytes == 0 && !dtype.empty()) elem_bytes = dtype_bytes(dtype);
  return take(viz::analyze_bank_access(spec, access, elem_bytes));
}

// A spec argument: a Layout (its SPEC and dtype) or SPEC text.
std::pair<std::string, std::string> spec_of(nb::handle o) {
  if (nb::isinstance<PyLayout>(o)) {
    const PyLayout& l = nb::cast<const PyLayout&>(o);
    return {l.spec.text, l.dtype};
  }
  if (nb::isinstance<nb::str>(o)) return {nb::cast<std::string>(o), ""};
  throw nb::type_error("expected a Layout or a SPEC string");
}

}  // namespace

void bind_layouts(nb::module_& m) {
  nb::class_<PyPlot>(m, "Plot", "A drawn view (layout, banks, timeline, roofline, heat map): save() writes it.")
      .def(
          "save",
          [](const PyPlot& p, const std::string& path, double scale) {
            viz::PaintOptions o;
            o.scale = scale;
            Status s = viz::write_scene(p.scene, path, std::nullopt, o);
            if (!s) raise(s.code(), "cannot save the " + p.kind + " plot: " + s.message());
            return path;
          },
          "path"_a, "scale"_a = 1.0, "Writes the plot; the format comes from the extension: .png, .svg or .pdf.")
      .def_prop_ro("size", [](const PyPlot& p) { return nb::make_tuple(p.scene.width, p.scene.height); })
      .def_prop_ro("kind", [](const PyPlot& p) { return p.kind; })
      .def("__repr__", [](const PyPlot& p) {
        return "tilelab.Plot(" + p.kind + ", " + std::to_string(static_cast<int>(p.scene.width)) + "x" +
               std::to_string(static_cast<int>(p.scene.height)) + ")";
      });

  nb::class_<PyLayout>(m, "Layout", "A layout SPEC (the SPECs of `tilelab layout`).")
      .def(
          "__init__",
          [](PyLayout* self, const std::string& spec, const std::string& dtype) { new (self) PyLayout(make_layout(spec, dtype)); },
          "spec"_a, "dtype"_a = "")
      .def_prop_ro("spec", [](const PyLayout& l) { return l.spec.text; })
      .def_prop_ro("dtype", [](const PyLayout& l) { return l.dtype; })
      .def("size", [](const PyLayout& l) { return any_layout(l).size(); })
      .def("cosize", [](const PyLayout& l) { return any_layout(l).cosize(); })
      .def("shape", [](const PyLayout& l) { return to_string(any_layout(l).shape()); })
      .def("stride", [](const PyLayout& l) { return to_string(any_layout(l).stride()); })
      .def("rank", [](const PyLayout& l) { return any_layout(l).rank(); })
      .def("kind", [](const PyLayout& l) {
        const char* names[] = {"layout", "swizzled", "smem", "atom"};
        return std::string(names[static_cast<int>(l.spec.kind)]);
      })
      .def("tile", [](const PyLayout& l) { return nb::make_tuple(l.spec.rows, l.spec.cols); })
      .def("at", &at, "i"_a, "j"_a = nb::none())
      .def("__call__", &at, "i"_a, "j"_a = nb::none())
      .def("owner",
           [](const PyLayout& l, long long row, long long col) {
             const Fragment& f = fragment(l, "owner");
             ThreadValue tv = f.owner(check_index(row, f.rows(), "row"), check_index(col, f.cols(), "col"));
             return nb::make_tuple(tv.thread, tv.value);
           },
           "row"_a, "col"_a)
      .def("threads",
           [](const PyLayout& l) {
             const Fragment& f = fragment(l, "threads");
             return nb::make_tuple(f.num_threads(), f.num_values(), f.replication());
           })
      .def("compose", [](const PyLayout& a, nb::handle b) {
        return result(composition(algebra_layout(a, "compose"), operand(b, "compose")), "compose", a.dtype);
      })
      .def("complement",
           [](const PyLayout& a, std::optional<int> cotarget) {
             const Layout& l = algebra_layout(a, "complement");
             return result(cotarget ? complement(l, *cotarget) : complement(l), "complement", a.dtype);
           },
           "cotarget"_a = nb::none())
      .def("coalesce", [](const PyLayout& a) { return result(coalesce(algebra_layout(a, "coalesce")), "coalesce", a.dtype); })
      .def("filter", [](const PyLayout& a) { return result(filter(algebra_layout(a, "filter")), "filter", a.dtype); })
      .def("flatten", [](const PyLayout& a) { return result(flatten(algebra_layout(a, "flatten")), "flatten", a.dtype); })
      .def("divide",
           [](const PyLayout& a, nb::handle b, const std::string& form) {
             const Layout& l = algebra_layout(a, "divide");
             const Layout t = operand(b, "divide");
             if (form == "logical") return result(logical_divide(l, t), "divide", a.dtype);
             if (form == "zipped") return result(zipped_divide(l, t), "divide", a.dtype);
             if (form == "tiled") return result(tiled_divide(l, t), "divide", a.dtype);
             raise(ErrorCode::invalid_argument, "divide: unknown form '" + form + "' (logical, zipped or tiled)");
           },
           "tiler"_a, "form"_a = "logical")
      .def("product",
           [](const PyLayout& a, nb::handle b, const std::string& form) {
             const Layout& l = algebra_layout(a, "product");
             const Layout t = operand(b, "product");
             if (form == "logical") return result(logical_product(l, t), "product", a.dtype);
             if (form == "blocked") return result(blocked_product(l, t), "product", a.dtype);
             if (form == "raked") return result(raked_product(l, t), "product", a.dtype);
             raise(ErrorCode::invalid_argument, "product: unknown form '" + form + "' (logical, blocked or raked)");
           },
           "other"_a, "form"_a = "logical")
      .def("inverse",
           [](const PyLayout& a, const std::string& side) {
             const Layout& l = algebra_layout(a, "inverse");
             if (side != "right" && side != "left")
               raise(ErrorCode::invalid_argument, "inverse: '" + side + "' is neither \"right\" nor \"left\"");
             return result(side == "right" ? right_inverse(l) : left_inverse(l), "inverse", a.dtype);
           },
           "side"_a = "right")
      .def("mode", [](const PyLayout& a, int i) { return result(algebra_layout(a, "mode").mode(i), "mode", a.dtype); })
      .def("repeat",
           [](const PyLayout& l, long long rows, long long cols, const std::string& on, const std::string& order) {
             fragment(l, "repeat");
             const int r = check_count(rows, "repeat", "rows"), c = check_count(cols, "repeat", "cols");
             if (on != "thread" && on != "value")
               raise(ErrorCode::invalid_argument, "repeat: copies go on \"thread\" or \"value\" (got '" + on + "')");
             if (order != "rows" && order != "cols")
               raise(ErrorCode::invalid_argument, "repeat: copies are numbered \"rows\" or \"cols\" first (got '" + order + "')");
             return PyLayout{parse_or_raise(l.spec.text + repeat_suffix(r, c, on == "thread", order == "rows")), l.dtype};
           },
           "rows"_a, "cols"_a, "on"_a = "value", "order"_a = "rows")
      .def("replicate",
           [](const PyLayout& l, long long n) {
             fragment(l, "replicate");
             return PyLayout{parse_or_raise(l.spec.text + replicate_suffix(check_count(n, "replicate", "n"))), l.dtype};
           },
           "n"_a)
      .def("json", [](const PyLayout& l) { return to_python(viz::to_json(grid_of(l))); })
      .def("cells", [](const PyLayout& l) { return to_python(viz::to_json(grid_of(l))["cells"]); })
      .def("text", [](const PyLayout& l) { return viz::to_text(grid_of(l)); })
      .def("plot", &plot_layout, "color"_a = "", "inverse"_a = false, "title"_a = "", "cell_size"_a = 0.0)
      .def("banks",
           [](const PyLayout& l, const std::string& access, int elem_bytes) {
             return to_python(viz::to_json(bank_analysis(l.spec.text, l.dtype, access, elem_bytes)));
           },
           "access"_a, "elem_bytes"_a = 0)
      .def("__eq__",
           [](const PyLayout& a, const PyLayout& b) {
             return a.spec.kind == b.spec.kind &&
                    (a.spec.is_fragment() ? a.spec.text == b.spec.text
                                          : a.spec.memory.layout() == b.spec.memory.layout() &&
                                                a.spec.memory.swizzle() == b.spec.memory.swizzle());
           })
      .def("__repr__", [](const PyLayout& l) {
        return "tilelab.Layout(" + (l.spec.kind == SpecKind::layout ? to_string(l.spec.memory.layout()) : l.spec.text) + ")";
      });

  m.def("layout_atoms", [] {
    nb::list l;
    for (const auto& a : viz::list_layout_atoms()) {
      nb::dict d;
      d["name"] = a.name;
      d["description"] = a.description;
      l.append(d);
    }
    return l;
  });
  m.def("banks",
        [](nb::handle spec, const std::string& access, int elem_bytes) {
          auto [text, dtype] = spec_of(spec);
          return to_python(viz::to_json(bank_analysis(text, dtype, access, elem_bytes)));
        },
        "spec"_a, "access"_a, "elem_bytes"_a = 0);
  m.def("plot_banks",
        [](nb::handle spec, const std::string& access, int elem_bytes) {
          auto [text, dtype] = spec_of(spec);
          return PyPlot{viz::build_bank_scene(bank_analysis(text, dtype, access, elem_bytes).map), "banks"};
        },
        "spec"_a, "access"_a, "elem_bytes"_a = 0);
  m.def("plot_layout",
        [](nb::handle spec, const std::string& dtype, const std::string& color, bool inverse, const std::string& title,
           double cell_size) {
          if (nb::isinstance<PyLayout>(spec)) return plot_layout(nb::cast<const PyLayout&>(spec), color, inverse, title, cell_size);
          return plot_layout(make_layout(nb::cast<std::string>(spec), dtype), color, inverse, title, cell_size);
        },
        "spec"_a, "dtype"_a = "", "color"_a = "", "inverse"_a = false, "title"_a = "", "cell_size"_a = 0.0);
}

}  // namespace tl::py
