// Test helper: where the `tilelab` executable is, for tests that spawn `tilelab worker`.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace tl::test {

// $TILELAB_EXE, else the path CMake baked in (TL_TILELAB_EXE), else ../tilelab next to this test binary — so a
// build tree copied to another machine (a GPU box) still finds its own tilelab.
inline std::string tilelab_exe() {
  if (const char* env = std::getenv("TILELAB_EXE"); env && *env) return env;
  std::error_code ec;
  if (std::filesystem::exists(TL_TILELAB_EXE, ec)) return TL_TILELAB_EXE;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  return (self.parent_path().parent_path() / "tilelab").string();
}

}  // namespace tl::test
