# The cuDNN baseline's headers (`bench --vs cudnn`): cudnn.h from the CUDA toolkit (or TL_CUDNN_INCLUDE_DIR) and the
# cudnn-frontend C++ headers (TL_CUDNN_FRONTEND_DIR, else PyPI's nvidia-cudnn-frontend wheel fetched once into the
# build folder with pip). libcudnn itself is never linked: the worker opens it at run time. Without the headers the
# worker is built without the baseline, and `--vs cudnn` says so.
set(TL_CUDNN_FRONTEND_VERSION 1.32.0)
set(TL_CUDNN_FRONTEND_DIR "" CACHE PATH "cudnn-frontend's include folder (empty: fetch nvidia-cudnn-frontend from PyPI)")

# Sets TL_CUDNN_INCLUDES (the two include folders) in the caller, or leaves it empty saying why.
function(tl_find_cudnn)
  set(TL_CUDNN_INCLUDES "" PARENT_SCOPE)
  find_path(TL_CUDNN_INCLUDE_DIR cudnn.h HINTS ${CUDAToolkit_INCLUDE_DIRS} /usr/include)
  if(NOT TL_CUDNN_INCLUDE_DIR)
    message(STATUS "cuDNN baseline: off (no cudnn.h: install cuDNN 9's headers or set TL_CUDNN_INCLUDE_DIR)")
    return()
  endif()
  set(frontend "${TL_CUDNN_FRONTEND_DIR}")
  if(NOT frontend)
    set(dest "${CMAKE_BINARY_DIR}/_deps/cudnn_frontend-${TL_CUDNN_FRONTEND_VERSION}")
    set(frontend "${dest}/include")
    if(NOT EXISTS "${frontend}/cudnn_frontend.h")
      # Any pip will do: the headers are the same in every wheel, so one platform's is asked for by name.
      set(pythons "${Python_EXECUTABLE}" "${CMAKE_BINARY_DIR}/venv/bin/python")
      find_program(TL_PYTHON3 python3)
      list(APPEND pythons "${TL_PYTHON3}")
      set(wheel "")
      foreach(py IN LISTS pythons)
        if(NOT py OR NOT EXISTS "${py}")
          continue()
        endif()
        execute_process(
          COMMAND "${py}" -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp
                  --platform manylinux_2_28_x86_64 --retries 1 --timeout 20 -q --disable-pip-version-check
                  -d "${dest}/wheel" nvidia-cudnn-frontend==${TL_CUDNN_FRONTEND_VERSION}
          RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
        file(GLOB wheel "${dest}/wheel/nvidia_cudnn_frontend-*.whl")
        if(rc EQUAL 0 AND wheel)
          break()
        endif()
      endforeach()
      if(NOT wheel)
        message(STATUS "cuDNN baseline: off (could not fetch nvidia-cudnn-frontend==${TL_CUDNN_FRONTEND_VERSION} with "
                       "pip: ${err}; set TL_CUDNN_FRONTEND_DIR to its include folder)")
        return()
      endif()
      list(GET wheel 0 wheel)
      file(ARCHIVE_EXTRACT INPUT "${wheel}" DESTINATION "${dest}" PATTERNS "include/*")
    endif()
  endif()
  if(NOT EXISTS "${frontend}/cudnn_frontend.h")
    message(STATUS "cuDNN baseline: off (no cudnn_frontend.h in ${frontend})")
    return()
  endif()
  message(STATUS "cuDNN baseline: on (cudnn.h in ${TL_CUDNN_INCLUDE_DIR}, cudnn-frontend in ${frontend})")
  set(TL_CUDNN_INCLUDES "${TL_CUDNN_INCLUDE_DIR}" "${frontend}" PARENT_SCOPE)
endfunction()
