// Shared by `tilelab bench` and `tilelab test`: result tables.
#pragma once

#include <string>
#include <vector>

#include "runtime/bench.hpp"
#include "session.hpp"

namespace tl::cli {

// One row per record: time, rates, efficiency, errors, verdict, resources.
void print_run_table(const std::vector<RunRecord>& records);

// "1.23e-05", "-" for 0 when `dash_zero`.
std::string format_number(double v, const char* fmt = "%.3g");

}  // namespace tl::cli
