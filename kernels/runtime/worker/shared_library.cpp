// Opening run-time libraries: candidates in order, the loader's reasons kept for the error message.
#include "runtime/worker/shared_library.hpp"

#include <dlfcn.h>
#include <glob.h>

#include <cstdlib>

namespace tl {

OpenedLibrary open_first_library(const std::vector<std::string>& candidates, const char* symbol, const char* what) {
  OpenedLibrary lib;
  for (const std::string& path : candidates) {
    lib.tried += (lib.tried.empty() ? "" : ", ") + path;
    void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      const char* e = dlerror();
      lib.last_error = e ? e : path + ": cannot be opened";
      continue;
    }
    if (!dlsym(h, symbol)) {
      lib.last_error = path + " is not " + what + " (it has no " + symbol + ")";
      dlclose(h);
      continue;
    }
    lib.handle = h;
    lib.path = path;
    break;
  }
  return lib;
}

std::vector<std::string> wheel_library_paths(const std::string& soname, const std::vector<std::string>& subdirs) {
  std::vector<std::string> prefixes;
  for (const char* var : {"VIRTUAL_ENV", "CONDA_PREFIX"})
    if (const char* v = std::getenv(var); v && *v) prefixes.emplace_back(v);
  if (const char* home = std::getenv("HOME"); home && *home) prefixes.push_back(std::string(home) + "/.local");
  for (const char* p : {"/usr/local", "/usr", "/opt/conda"}) prefixes.emplace_back(p);
  std::vector<std::string> out;
  for (const std::string& prefix : prefixes)
    for (const std::string& sub : subdirs) {
      const std::string pattern = prefix + "/lib/python3*/{site,dist}-packages/nvidia/" + sub + "/lib/" + soname;
      glob_t g{};
      if (glob(pattern.c_str(), GLOB_BRACE | GLOB_NOSORT, nullptr, &g) == 0)
        for (std::size_t i = 0; i < g.gl_pathc; ++i) out.emplace_back(g.gl_pathv[i]);
      globfree(&g);
    }
  return out;
}

}  // namespace tl
