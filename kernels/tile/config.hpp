// Host/device portability macros shared by every tile header (plain C++ on the host, CUDA in NVRTC).
#pragma once

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define TL_HOST_DEVICE __host__ __device__
#define TL_DEVICE __device__
#define TL_DEVICE_CODE 1
// Every device-toolkit wrapper (tile/*.cuh) and kernel helper: one instruction sequence, always inlined.
#define TL_DEVICE_INLINE __device__ __forceinline__
#else
#define TL_HOST_DEVICE
#define TL_DEVICE
#define TL_DEVICE_CODE 0
#define TL_DEVICE_INLINE inline
#endif

#define TL_FORCEINLINE inline __attribute__((always_inline))
