// `tilelab layout SPEC` (plot a layout, fragment or atom to PNG/SVG/PDF/JSON/txt) and `tilelab layout --list`.
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "app/cli/commands.hpp"
#include "runtime/core/files.hpp"
#include "viz/cairo_painter.hpp"
#include "viz/layout_adapter.hpp"
#include "viz/layout_scene.hpp"

namespace tl::cli {
namespace {

struct LayoutOptions {
  std::string spec, dtype, color, format, out;
  bool list = false, inverse = false;
  double cell_size = 0;
};

Status write_text_file(const std::string& path, const std::string& text) {
  if (path.empty() || path == "-") {
    std::cout << text;
    return {};
  }
  return write_file_atomic(path, text);
}

Status run_layout(const LayoutOptions& o) {
  if (o.list) {
    for (const auto& atom : viz::list_layout_atoms()) std::printf("%-36s %s\n", atom.name.c_str(), atom.description.c_str());
    return {};
  }
  if (o.spec.empty()) return make_error(ErrorCode::invalid_argument, "layout: give a SPEC (or --list)");

  // The format: --format, else the extension of --out.
  std::string format = o.format;
  if (format.empty()) {
    if (o.out.empty()) return make_error(ErrorCode::invalid_argument, "layout: give --out FILE or --format");
    format = std::filesystem::path(o.out).extension().string();
    if (!format.empty()) format.erase(0, 1);
    for (auto& ch : format) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (format != "json" && format != "txt" && !viz::parse_image_format(format)) {
      return make_error(ErrorCode::invalid_argument, "layout: cannot tell the format of '" + o.out +
                                                         "' from its extension; use --format png|svg|pdf|json|txt");
    }
  }

  auto grid = viz::grid_from_spec(o.spec, o.dtype);
  if (!grid) return grid.status();

  if (format == "json") return write_text_file(o.out, viz::to_json(*grid).dump(1) + "\n");
  if (format == "txt") return write_text_file(o.out, viz::to_text(*grid));
  auto image = viz::parse_image_format(format);
  if (!image) {
    return make_error(ErrorCode::invalid_argument, "layout: unknown format '" + format + "' (png, svg, pdf, json or txt)");
  }
  if (o.out.empty() || o.out == "-") return make_error(ErrorCode::invalid_argument, "layout: an image needs --out FILE");

  viz::GridStyle style;
  style.cell_size = o.cell_size;
  if (o.color.empty()) {
    style.color = grid->has_threads() ? viz::ColorBy::thread : viz::ColorBy::bank;
  } else if (auto mode = viz::parse_color_by(o.color)) {
    style.color = *mode;
  } else {
    return make_error(ErrorCode::invalid_argument,
                      "layout: unknown --color '" + o.color + "' (thread, warp, value, bank or index)");
  }
  auto scene = o.inverse ? viz::build_inverse_scene(*grid, style) : viz::build_layout_scene(*grid, style);
  if (!scene) return scene.status();
  return viz::write_scene(*scene, o.out, *image);
}

}  // namespace

void add_layout_command(CLI::App& app, Context& ctx) {
  auto* cmd = app.add_subcommand("layout", "Plot a layout, fragment or hardware atom (PNG/SVG/PDF, JSON, txt)");
  auto o = std::make_shared<LayoutOptions>();
  cmd->add_option("spec", o->spec,
                  "A CuTe layout '(8,(4,2)):(4,(1,32))', a swizzled one 'swizzle<3,3,3> o (8,64):(64,1)', or an atom "
                  "name (see --list), optionally grown as TileLang's Fragment.repeat/replicate: "
                  "ATOM.repeat(R,C[,thread|value][,rows|cols]).replicate(N)... (R x C copies on new threads or new "
                  "values, default value; numbered down the rows first unless cols; replicate: N threads hold each "
                  "element), e.g. 'mma.m16n8k16.f16.A.repeat(2,1,thread).replicate(2).repeat(4,2,value)'");
  cmd->add_flag("--list", o->list, "List the named atoms");
  cmd->add_option("--dtype", o->dtype, "Element type for banks (f32, f16, bf16, s8, e4m3, ...; default: the "
                                       "atom's, else f32)");
  cmd->add_option("--color", o->color, "Colour cells by thread|warp|value|bank|index (default: thread for fragments, "
                                       "bank for memory layouts)");
  cmd->add_option("--format", o->format, "png|svg|pdf|json|txt (default: from --out's extension)");
  cmd->add_option("-o,--out", o->out, "Output file (json/txt: '-' or none prints to stdout)");
  cmd->add_flag("--inverse", o->inverse, "Plot the inverse view: a row per thread listing its coordinates");
  cmd->add_option("--cell-size", o->cell_size, "Cell size in points (default: fit the plot into ~2000 points)")
      ->check(in_range(1, 500));
  cmd->callback([&ctx, o] {
    Status st = run_layout(*o);
    ctx.exit_code = st.ok() ? 0 : report_error(st.message());
  });
}

}  // namespace tl::cli
