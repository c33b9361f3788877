// libcudnn opened at run time for the cuDNN baseline (`--vs cudnn`), never linked: `tilelab` starts and runs
// everything else where cuDNN is missing, and says where it looked when asked for it.
#pragma once

#include <cstddef>
#include <string>

#include "runtime/core/status.hpp"

namespace tl {

struct CudnnLibrary {
  void* handle = nullptr;  // dlopen's
  std::string path;        // what was opened (a path, or the soname the loader resolved)
  std::size_t version = 0;  // cudnnGetVersion(): major * 10000 + minor * 100 + patch
};

// The environment variable naming libcudnn.so.9 or the directory holding it.
inline constexpr const char* kCudnnLibraryVariable = "TL_CUDNN_LIBRARY";

// Opens cuDNN 9 and checks it has what the SDPA baseline calls. `setting` is TL_CUDNN_LIBRARY's value: a
// libcudnn.so.9 file or the directory holding it, and then nothing else is tried; null or empty: the loader's
// search for libcudnn.so.9 (LD_LIBRARY_PATH, the ld.so cache), then /usr/local/cuda/lib64, then PyTorch's
// nvidia-cudnn-cu13 wheel (site-packages/nvidia/cudnn/lib). Errors: not_found
// ("cudnn not found: ...", saying what was tried and what to set), unsupported (too old, missing entry points).
Result<CudnnLibrary> open_cudnn_library(const char* setting);

// This process's cuDNN: open_cudnn_library($TL_CUDNN_LIBRARY), opened once.
const Result<CudnnLibrary>& cudnn_library();

// An entry point of cudnn_library() (null when it is not open or lacks the name).
void* cudnn_symbol(const char* name);

}  // namespace tl
