# Kernels compiled by nvcc at build time into a fatbin and embedded in a target (the worker's built-in kernels,
# test kernels): loaded at run time with cudaLibraryLoadData like any JIT cubin, no NVRTC needed.
# tl_embed_fatbin(TARGET SOURCE SYMBOL [GENCODE flags...] [DEPENDS files...]): defines extern "C" const unsigned
# char SYMBOL[] and const unsigned long long SYMBOL_size in TARGET. GENCODE replaces the default targets (sm_80,
# sm_89, sm_90 and compute_90 PTX), e.g. for arch-specific sm_90a code.
function(tl_embed_fatbin target source symbol)
  cmake_parse_arguments(F "" "" "GENCODE;DEPENDS" ${ARGN})
  set(gencode
    -gencode arch=compute_80,code=sm_80
    -gencode arch=compute_89,code=sm_89
    -gencode arch=compute_90,code=sm_90
    -gencode arch=compute_90,code=compute_90)  # PTX, JIT-compiled by the driver on newer GPUs
  if(F_GENCODE)
    set(gencode ${F_GENCODE})
  endif()
  set(fatbin ${CMAKE_CURRENT_BINARY_DIR}/${symbol}.fatbin)
  set(cpp ${CMAKE_CURRENT_BINARY_DIR}/${symbol}.cpp)
  add_custom_command(OUTPUT ${fatbin}
    COMMAND ${CUDAToolkit_NVCC_EXECUTABLE} -fatbin -std=c++17 -O3 -I${PROJECT_SOURCE_DIR}/kernels
            ${gencode} -o ${fatbin} ${source}
    DEPENDS ${source} ${F_DEPENDS}
    COMMENT "nvcc: ${symbol}.fatbin"
    VERBATIM)
  add_custom_command(OUTPUT ${cpp}
    COMMAND ${CMAKE_COMMAND} -DIN=${fatbin} -DOUT=${cpp} -DSYMBOL=${symbol} -P ${PROJECT_SOURCE_DIR}/cmake/TlEmbedBinary.cmake
    DEPENDS ${fatbin} ${PROJECT_SOURCE_DIR}/cmake/TlEmbedBinary.cmake
    VERBATIM)
  target_sources(${target} PRIVATE ${cpp})
endfunction()
