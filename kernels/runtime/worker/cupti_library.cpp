// Finding and opening libcupti at run time: $TL_CUPTI_LIBRARY, the CUDA toolkit, the nvidia-cuda-cupti wheel.
#include "runtime/worker/cupti_library.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>

#include "runtime/core/log.hpp"
#include "runtime/worker/shared_library.hpp"

namespace tl {

namespace {

// The soname of the CUDA 13 toolkit's CUPTI (the API the headers we build with describe).
constexpr const char* kSoname = "libcupti.so.13";

}  // namespace

std::vector<std::string> cupti_library_candidates(const char* env_value) {
  if (env_value && *env_value) return {env_value};
  std::vector<std::string> out;
  std::vector<std::string> toolkits;
  for (const char* var : {"CUDA_HOME", "CUDA_PATH"})
    if (const char* v = std::getenv(var); v && *v) toolkits.emplace_back(v);
  toolkits.emplace_back("/usr/local/cuda");
  for (const std::string& root : toolkits)
    for (const char* dir : {"/extras/CUPTI/lib64/", "/lib64/", "/lib/"}) {
      std::error_code ec;
      const std::string file = root + dir + kSoname;
      if (std::filesystem::exists(file, ec)) out.push_back(file);
    }
  // PyTorch's dependency nvidia-cuda-cupti: nvidia/cu13/lib (CUDA 13 wheels) or nvidia/cuda_cupti/lib (earlier).
  for (std::string& p : wheel_library_paths(kSoname, {"cu13", "cuda_cupti"})) out.push_back(std::move(p));
  out.emplace_back(kSoname);
  out.emplace_back("libcupti.so");
  return out;
}

CuptiLibrary open_cupti_library(const char* env_value) {
  CuptiLibrary c;
  const OpenedLibrary lib = open_first_library(cupti_library_candidates(env_value), "cuptiGetVersion", "libcupti");
  if (lib.handle) {
    c.handle = lib.handle;
    c.path = lib.path;
    return c;
  }
  if (env_value && *env_value)
    c.error = std::string("cupti not found: ") + kCuptiLibraryEnv + "=" + env_value + " does not load (" + lib.last_error +
              "); point it at libcupti.so.13 (the CUDA toolkit's extras/CUPTI/lib64, or the nvidia-cuda-cupti wheel's "
              "nvidia/cu13/lib), or unset it to search";
  else
    c.error = std::string("cupti not found: tried ") + lib.tried + " (last: " + lib.last_error +
              "); install the CUDA toolkit's CUPTI or the nvidia-cuda-cupti wheel, or set " + kCuptiLibraryEnv +
              " to the path of libcupti.so.13";
  return c;
}

const CuptiLibrary& cupti_library() {
  static const CuptiLibrary c = [] {
    CuptiLibrary opened = open_cupti_library(std::getenv(kCuptiLibraryEnv));
    if (opened.handle) log::debug("cupti: opened ", opened.path);
    return opened;
  }();
  return c;
}

std::string cupti_call_failed(const char* call, int result) {
  using ResultString = int (*)(int, const char**);
  const char* text = nullptr;
  if (void* h = cupti_library().handle)
    if (auto fn = reinterpret_cast<ResultString>(dlsym(h, "cuptiGetResultString"))) fn(result, &text);
  return std::string(call) + " failed: " + (text ? text : "CUptiResult " + std::to_string(result));
}

}  // namespace tl
