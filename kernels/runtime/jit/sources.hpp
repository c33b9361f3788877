// Kernel source sets: the copy embedded in the executable, or a directory read on every compile (hot reload).
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "runtime/core/status.hpp"

namespace tl {

// One file of the embedded copy; `name` is its path relative to kernels/ ("gemm/gemm_simt.cuh").
struct EmbeddedSource {
  const char* name;
  const unsigned char* data;
  std::size_t size;
};

// Files are named by their path relative to kernels/, which is also how they include each other
// (`#include "tile/float16.hpp"`), so NVRTC gets each header under the name the #include spells.
class SourceSet {
 public:
  SourceSet() = default;
  static SourceSet from_directory(std::string dir);
  static SourceSet from_embedded(const EmbeddedSource* files, std::size_t count);

  // An in-memory file that shadows the base set (user-defined kernels, tests).
  void add(std::string name, std::string text);

  Result<std::string> read(const std::string& name) const;
  bool contains(const std::string& name) const;
  // Every file this set can provide (directory mode: *.cuh, *.hpp, *.h under the directory).
  std::vector<std::string> names() const;
  // Where a file lives, for messages an editor can jump to: "/src/kernels/gemm/gemm_simt.cuh:12" needs this path.
  std::string display_path(const std::string& name) const;
  // "directory /src/kernels" or "embedded (12 files)".
  std::string describe() const;
  bool is_directory() const { return !m_dir.empty(); }

 private:
  std::string m_dir;
  std::map<std::string, std::string> m_files;    // embedded copy or overlays
  std::map<std::string, std::string> m_overlay;  // add()ed files, checked first
};

// `main` and every file of the set it includes, directly or not, as (name, text), main first, the rest sorted by
// name. Includes the set cannot provide (system headers) are left to NVRTC. The scan is textual, so an include
// under an #if is counted too: that can only make a cache key stricter, never miss a change.
Result<std::vector<std::pair<std::string, std::string>>> include_closure(const SourceSet& set,
                                                                         const std::string& main);

}  // namespace tl
