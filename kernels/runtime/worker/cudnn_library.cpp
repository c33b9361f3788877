// Finding and opening libcudnn.so.9 (TL_CUDNN_LIBRARY, the loader's search, /usr/local/cuda, PyTorch's wheel),
// checking its version and the entry points the cudnn-frontend graph API calls.
#include "runtime/worker/cudnn_library.hpp"

#include <dlfcn.h>
#include <sys/stat.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "runtime/worker/shared_library.hpp"

namespace tl {
namespace {

// What cudnn-frontend's graph API calls in libcudnn (cudnn_sdpa.cpp forwards exactly these).
constexpr const char* kEntryPoints[] = {
    "cudnnGetVersion",         "cudnnCreate",           "cudnnDestroy",           "cudnnGetStream",
    "cudnnSetStream",          "cudnnGetErrorString",   "cudnnGetLastErrorString", "cudnnBackendCreateDescriptor",
    "cudnnBackendDestroyDescriptor", "cudnnBackendSetAttribute", "cudnnBackendGetAttribute", "cudnnBackendFinalize",
    "cudnnBackendExecute"};

constexpr const char* kHint =
    "install cuDNN 9 for CUDA 13 (PyTorch's wheels bring it: pip's nvidia-cudnn-cu13 holds libcudnn.so.9 in "
    "site-packages/nvidia/cudnn/lib), then set TL_CUDNN_LIBRARY to that file or its directory, or add the directory "
    "to LD_LIBRARY_PATH";

bool is_directory(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

}  // namespace

Result<CudnnLibrary> open_cudnn_library(const char* setting) {
  std::vector<std::string> tries;
  const bool explicit_path = setting && *setting;
  if (explicit_path) {
    std::string path = setting;
    if (is_directory(path)) path += "/libcudnn.so.9";
    tries.push_back(path);
  } else {
    // The loader's search, the toolkit, then PyTorch's dependency nvidia-cudnn-cu13 (nvidia/cudnn/lib). RTLD_LOCAL
    // (open_first_library's): its sub-libraries (graph, engines) are found through its own $ORIGIN run path.
    tries = {"libcudnn.so.9", "/usr/local/cuda/lib64/libcudnn.so.9"};
    for (std::string& p : wheel_library_paths("libcudnn.so.9", {"cudnn"})) tries.push_back(std::move(p));
  }
  const OpenedLibrary opened = open_first_library(tries, "cudnnGetVersion", "libcudnn");
  if (!opened.handle)
    return make_error(ErrorCode::not_found,
                      "cudnn not found: " +
                          (explicit_path ? std::string(kCudnnLibraryVariable) + "=" + setting + ": " + opened.last_error
                                         : "tried " + opened.tried + " (last: " + opened.last_error + ")") +
                          "; " + kHint);
  CudnnLibrary lib;
  lib.handle = opened.handle;
  lib.path = opened.path;
  for (const char* name : kEntryPoints)
    if (!dlsym(lib.handle, name))
      return make_error(ErrorCode::unsupported, "cudnn at " + lib.path + " has no " + name + ": cuDNN 9 is needed; " + kHint);
  lib.version = reinterpret_cast<std::size_t (*)()>(dlsym(lib.handle, "cudnnGetVersion"))();
  if (lib.version < 90000)
    return make_error(ErrorCode::unsupported, "cudnn at " + lib.path + " is version " + std::to_string(lib.version) +
                                                  ", TileLab's SDPA baseline needs cuDNN 9; " + kHint);
  return lib;
}

const Result<CudnnLibrary>& cudnn_library() {
  static const Result<CudnnLibrary> lib = open_cudnn_library(std::getenv(kCudnnLibraryVariable));
  return lib;
}

void* cudnn_symbol(const char* name) {
  const Result<CudnnLibrary>& lib = cudnn_library();
  return lib ? dlsym(lib->handle, name) : nullptr;
}

}  // namespace tl
