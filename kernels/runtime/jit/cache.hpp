// On-disk cache of compiled kernels: cubin, PTX and a JSON metadata file per key, written atomically.
#pragma once

#include <optional>
#include <string>

#include "runtime/core/status.hpp"
#include "runtime/jit/compiled.hpp"

namespace tl {

// TILELAB_CACHE_DIR, else $XDG_CACHE_HOME/tilelab, else ~/.cache/tilelab.
std::string default_cache_dir();

// Layout: DIR/kernels/<key[0:2]>/<key>.{cubin,ptx,json}. The JSON is written last and holds the hashes and sizes
// of the other two, so a missing, truncated or altered entry is seen as corrupt and recompiled.
class KernelCache {
 public:
  explicit KernelCache(std::string dir) : m_dir(std::move(dir)) {}

  // The entry, or nullopt when absent or corrupt (a corrupt one is logged and removed).
  std::optional<CompiledKernel> load(const std::string& key) const;
  Status store(const CompiledKernel& kernel) const;

  const std::string& dir() const { return m_dir; }
  std::string entry_path(const std::string& key, const char* ext) const;

 private:
  std::string m_dir;
};

}  // namespace tl
