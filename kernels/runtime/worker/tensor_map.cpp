// TMA descriptors for the worker's launches, encoded by the driver's cuTensorMapEncodeTiled.
#include <cuda.h>  // types only (CUtensorMap); the driver is reached through cudaGetDriverEntryPoint
#include <cuda_runtime_api.h>
#include <cudaTypedefs.h>

#include <cstring>

#include "runtime/worker/gpu.hpp"

namespace tl {

Result<std::array<std::uint8_t, 128>> encode_tensor_map(const TensorMapSpec& t, DType dtype, void* global) {
  static PFN_cuTensorMapEncodeTiled_v12000 encode = nullptr;
  if (!encode) {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult q{};
    cudaError_t e = cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &q);
    if (e != cudaSuccess || q != cudaDriverEntryPointSuccess || !fn)
      return make_error(ErrorCode::unsupported, "the driver has no cuTensorMapEncodeTiled (TMA needs CUDA 12 and sm_90)");
    encode = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(fn);
  }
  CUtensorMapDataType type;
  switch (dtype) {
    case DType::f32: type = CU_TENSOR_MAP_DATA_TYPE_FLOAT32; break;
    case DType::f16: type = CU_TENSOR_MAP_DATA_TYPE_FLOAT16; break;
    case DType::bf16: type = CU_TENSOR_MAP_DATA_TYPE_BFLOAT16; break;
    case DType::f64: type = CU_TENSOR_MAP_DATA_TYPE_FLOAT64; break;
    case DType::i32: type = CU_TENSOR_MAP_DATA_TYPE_INT32; break;
    case DType::u32: type = CU_TENSOR_MAP_DATA_TYPE_UINT32; break;
    case DType::i64: type = CU_TENSOR_MAP_DATA_TYPE_INT64; break;
    case DType::u64: type = CU_TENSOR_MAP_DATA_TYPE_UINT64; break;
    default: type = CU_TENSOR_MAP_DATA_TYPE_UINT8; break;  // i8, u8 and fp8 move as bytes
  }
  std::size_t rank = t.dims.size();
  if (rank < 1 || rank > 5 || t.box.size() != rank || t.strides_bytes.size() + 1 != rank ||
      (!t.element_strides.empty() && t.element_strides.size() != rank))
    return make_error(ErrorCode::invalid_argument,
                      "tensor map: rank " + std::to_string(rank) + " needs 1..5 dims, as many box sizes, and rank-1 strides");
  std::vector<cuuint32_t> es = t.element_strides.empty() ? std::vector<cuuint32_t>(rank, 1)
                                                         : std::vector<cuuint32_t>(t.element_strides.begin(),
                                                                                   t.element_strides.end());
  CUtensorMapSwizzle swizzle = t.swizzle_bytes == 128 ? CU_TENSOR_MAP_SWIZZLE_128B
                               : t.swizzle_bytes == 64 ? CU_TENSOR_MAP_SWIZZLE_64B
                               : t.swizzle_bytes == 32 ? CU_TENSOR_MAP_SWIZZLE_32B
                                                       : CU_TENSOR_MAP_SWIZZLE_NONE;
  CUtensorMapL2promotion l2 = t.l2_promotion_bytes == 256 ? CU_TENSOR_MAP_L2_PROMOTION_L2_256B
                              : t.l2_promotion_bytes == 128 ? CU_TENSOR_MAP_L2_PROMOTION_L2_128B
                              : t.l2_promotion_bytes == 64 ? CU_TENSOR_MAP_L2_PROMOTION_L2_64B
                                                           : CU_TENSOR_MAP_L2_PROMOTION_NONE;
  CUtensorMap map;
  std::vector<cuuint64_t> dims(t.dims.begin(), t.dims.end()), strides(t.strides_bytes.begin(), t.strides_bytes.end());
  std::vector<cuuint32_t> box(t.box.begin(), t.box.end());
  CUresult r = encode(&map, type, static_cast<cuuint32_t>(rank), global, dims.data(), strides.data(), box.data(),
                      es.data(), CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle, l2,
                      t.oob_fill_nan ? CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA
                                     : CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    return make_error(ErrorCode::invalid_argument,
                      "cuTensorMapEncodeTiled refused the tensor map (CUresult " + std::to_string(static_cast<int>(r)) +
                          "): check alignment (16-byte address and strides), box sizes (<= 256) and the swizzle vs "
                          "the box's inner size");
  std::array<std::uint8_t, 128> out;
  std::memcpy(out.data(), &map, sizeof(map));
  return out;
}

}  // namespace tl
