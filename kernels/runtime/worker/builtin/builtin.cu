// The worker's built-in kernels, compiled by nvcc at build time into one fatbin embedded in tl_runtime.
#include "runtime/worker/builtin/ceilings.cuh"
#include "runtime/worker/builtin/check.cuh"
#include "runtime/worker/builtin/fill.cuh"
