// libcupti found and opened at run time (TileLab never links it), for the DRAM counters and the cupti timer.
#pragma once

// Where it is looked for, in order: $TL_CUPTI_LIBRARY (a file; when set, nothing else is tried), the CUDA toolkit's
// copies ($CUDA_HOME, $CUDA_PATH, /usr/local/cuda: extras/CUPTI/lib64, lib64, lib), the nvidia-cuda-cupti wheel that
// PyTorch depends on (nvidia/cu13/lib or nvidia/cuda_cupti/lib of a Python's site- or dist-packages), then the
// loader's own search (LD_LIBRARY_PATH, a libcupti already loaded by the process).

#include <string>
#include <vector>

namespace tl {

inline constexpr const char* kCuptiLibraryEnv = "TL_CUPTI_LIBRARY";

struct CuptiLibrary {
  void* handle = nullptr;  // dlopen handle; null when not found
  std::string path;        // what was opened
  std::string error;       // "cupti not found: ..." (what was tried, and how to point TileLab at one)
};

// The paths tried, in order, for `env_value` (the value of $TL_CUPTI_LIBRARY, or null when unset). Directories
// that do not exist are left out; the loader's own search comes last as bare file names.
std::vector<std::string> cupti_library_candidates(const char* env_value);

// Opens the first candidate that loads and has cuptiGetVersion. Every call opens anew (tests); the worker uses
// cupti_library().
CuptiLibrary open_cupti_library(const char* env_value);

// This process's libcupti, opened once (from $TL_CUPTI_LIBRARY as set at the first call).
const CuptiLibrary& cupti_library();

// "CALL failed: TEXT" for a CUptiResult `result`, TEXT from the library's cuptiGetResultString when it has one.
std::string cupti_call_failed(const char* call, int result);

}  // namespace tl
