# Shared build settings: warnings, version stamp, and how a module target is declared.
set(TL_WARNINGS -Wall -Wextra -Wno-unused-parameter)
if(TL_WERROR)
  list(APPEND TL_WARNINGS -Werror)
endif()

# tl_module(NAME ...) : apply TileLab's warning set to a target.
function(tl_warnings target)
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:${TL_WARNINGS}>)
endfunction()

# Static Lua: prefer the C build of liblua5.4.a, as the runtime contract (lua_error longjmps) assumes.
find_library(TL_LUA_STATIC NAMES liblua5.4.a lua5.4 PATHS /usr/lib/x86_64-linux-gnu NO_DEFAULT_PATH)

# NVRTC without CMake's CUDA::nvrtc, which drags in the driver stub (libcuda.so): the binary must start
# on machines with no driver, so nothing of ours may need libcuda.so.1 at load time.
function(tl_define_cuda_targets)
  add_library(tl_nvrtc INTERFACE)
  target_include_directories(tl_nvrtc SYSTEM INTERFACE ${CUDAToolkit_INCLUDE_DIRS})
  target_link_libraries(tl_nvrtc INTERFACE ${CUDAToolkit_LIBRARY_DIR}/libnvrtc.so)
endfunction()
