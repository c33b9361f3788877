// The worker's built-in kernels, compiled by nvcc at build time into one fatbin embedded in tl_runtime.
#include "runtime/builtin/ceilings.cuh"
#include "runtime/builtin/check.cuh"
#include "runtime/builtin/fill.cuh"
