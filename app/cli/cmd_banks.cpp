// `tilelab banks SMEM_SPEC --access PATTERN`: shared-memory bank conflicts of one instruction over a layout.
#include <cstdio>
#include <iostream>

#include "app/cli/commands.hpp"
#include "viz/cairo_painter.hpp"
#include "viz/layout_adapter.hpp"
#include "viz/layout_scene.hpp"

namespace tl::cli {
namespace {

struct BanksOptions {
  std::string spec, access, out;
  int elem_bytes = 0;
  bool json = false;
};

Status run_banks(const BanksOptions& o) {
  auto analysis = viz::analyze_bank_access(o.spec, o.access, o.elem_bytes);
  if (!analysis) return analysis.status();
  const viz::BankMap& map = analysis->map;
  if (o.json) {
    std::cout << viz::to_json(*analysis).dump(1) << '\n';
  } else {
    std::cout << viz::to_text(map);
  }
  if (!o.out.empty()) {
    TL_RETURN_IF_ERROR(viz::write_scene(viz::build_bank_scene(map), o.out));
    if (!o.json) std::cout << "wrote " << o.out << '\n';
  }
  return {};
}

}  // namespace

void add_banks_command(CLI::App& app, Context& ctx) {
  auto* cmd = app.add_subcommand("banks", "Shared-memory bank conflicts of one instruction over a layout");
  auto o = std::make_shared<BanksOptions>();
  cmd->add_option("smem_spec", o->spec, "The shared-memory layout (a SPEC as for `tilelab layout`)")->required();
  cmd->add_option("--access", o->access,
                  "ldmatrix.x1|x2|x4[.trans], row.v128, col.v128, row.v64, col.v64, row.scalar, col.scalar "
                  "(':N' sets the threads, '@ROW,COL' the start), or a list 'v16:(0,0),(1,0),...' (k-th coordinate from thread k)")
      ->required();
  cmd->add_option("--elem-bytes", o->elem_bytes, "Element size in bytes: 1, 2, 4, 8 or 16 (default: the SPEC's dtype, else 4)")
      ->check(in_range(1, 16));
  cmd->add_flag("--json", o->json, "Print the analysis as JSON");
  cmd->add_option("-o,--out", o->out, "Also draw the bank map (png/svg/pdf)");
  cmd->callback([&ctx, o] {
    Status st = run_banks(*o);
    ctx.exit_code = st.ok() ? 0 : report_error(st.message());
  });
}

}  // namespace tl::cli
