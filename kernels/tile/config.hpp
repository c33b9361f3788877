// Host/device portability macros shared by every tile header (plain C++ on the host, CUDA in NVRTC).
#pragma once

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define TL_HOST_DEVICE __host__ __device__
#define TL_DEVICE __device__
#define TL_DEVICE_CODE 1
#else
#define TL_HOST_DEVICE
#define TL_DEVICE
#define TL_DEVICE_CODE 0
#endif

#define TL_FORCEINLINE inline __attribute__((always_inline))
