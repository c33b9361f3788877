// `tilelab kernels [--json] [--all]`: every library kernel with its config and problem schemas.
#include <cstdio>
#include <iostream>

#include <nlohmann/json.hpp>

#include "app/cli/commands.hpp"
#include "library/library.hpp"

namespace tl::cli {
namespace {

void print_schema(const char* title, const Schema& s) {
  if (s.params.empty()) return;
  std::printf("  %s\n", title);
  for (const auto& p : s.params)
    // "heads_kv = heads": a parameter that follows another when unset shows which
    std::printf("    %-15s = %-6s %-28s %s\n", p.name.c_str(),
                (p.default_from.empty() ? p.default_value : p.default_from).c_str(), p.describe_allowed().c_str(),
                p.help.c_str());
}

}  // namespace

void add_kernels_command(CLI::App& app, Context& ctx) {
  auto* cmd = app.add_subcommand("kernels", "List the library's kernels with their config and problem schemas");
  auto json = std::make_shared<bool>(false);
  auto all = std::make_shared<bool>(false);
  cmd->add_flag("--json", *json, "Print as JSON");
  cmd->add_flag("--all", *all, "Include the hidden test kernels (family \"test\")");
  cmd->callback([&ctx, json, all] {
    auto specs = library_registry().list(*all);
    if (*json) {
      nlohmann::json out = nlohmann::json::array();
      for (const auto* s : specs) out.push_back(*s);
      std::cout << out.dump(2) << '\n';
    } else {
      for (const auto* s : specs) {
        std::printf("%s  (%s)  %s\n", s->name.c_str(), s->family.c_str(), s->summary.c_str());
        if (const std::string b = spec_baseline_library(*s); !b.empty()) std::printf("  baseline: --vs %s\n", b.c_str());
        print_schema("problem", s->problem);
        print_schema("config", s->config);
      }
    }
    ctx.exit_code = 0;
  });
}

}  // namespace tl::cli
