// Libraries TileLab opens at run time instead of linking (libcupti, libcudnn, libcublas): the first candidate that loads.
#pragma once

#include <string>
#include <vector>

namespace tl {

struct OpenedLibrary {
  void* handle = nullptr;  // dlopen's; null when no candidate opened
  std::string path;        // the candidate that opened
  std::string tried;       // every candidate tried, ", "-separated
  std::string last_error;  // why the last refused candidate was refused (the loader's message, or a missing symbol)
};

// dlopen(RTLD_NOW | RTLD_LOCAL) of each candidate in order. One that loads but lacks `symbol` is closed and passed
// over ("PATH is not WHAT (it has no SYMBOL)"), so a wrong file named by a user says what it is not.
OpenedLibrary open_first_library(const std::vector<std::string>& candidates, const char* symbol, const char* what);

// Copies of `soname` that pip wheels hold in site- or dist-packages/nvidia/<subdir>/lib (PyTorch's CUDA
// dependencies), for each of `subdirs`, under $VIRTUAL_ENV, $CONDA_PREFIX, ~/.local, /usr/local, /usr, /opt/conda.
std::vector<std::string> wheel_library_paths(const std::string& soname, const std::vector<std::string>& subdirs);

}  // namespace tl
