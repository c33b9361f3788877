// Test helper: a Jit with a compile cache of this test process's own (removed at exit), so repeated configs in one
// run hit it while every run compiles afresh.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <string>

#include "library/library.hpp"
#include "runtime/jit/cache.hpp"

namespace tl::test {

inline Jit& scratch_jit() {
  namespace fs = std::filesystem;
  static const std::string dir = (fs::temp_directory_path() / ("tl_test_jit_" + std::to_string(::getpid()))).string();
  static KernelCache cache(dir);
  static Jit j(kernel_sources().value(), &cache);
  static struct Cleanup {
    ~Cleanup() { fs::remove_all(dir); }
  } cleanup;
  return j;
}

}  // namespace tl::test
