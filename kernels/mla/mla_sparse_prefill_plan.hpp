// The plan of mla.sparse_prefill: its typed config, probe regions, and how the producer's gather copies bf16 KV rows
// into the consumers' tiles (mla.decode's plan).
#pragma once

#include "tile/config.hpp"
#include "tile/fragment.hpp"
#include "tile/layout.hpp"
#include "mla/mla_decode_plan.hpp"

#if !TL_DEVICE_CODE
#include <string>
#include <vector>

#include "tile/config_name.hpp"
#endif

namespace tl {

// The kernel's one template parameter, in the config schema's names (mla_sparse_prefill.cpp). q, kv, out and the MMAs
// are bf16.
struct MlaSparsePrefillConfig {
  int qk_warpgroups = 1;  // consumer warpgroups computing Q K^T: 1 or 2 (as mla.decode's)
  bool vec_store = true;  // outputs as 16-byte vectors
};

// The consumers run mla.decode's code (mla_consumer.cuh) on mla.decode's tiles: this is their config.
TL_HOST_DEVICE constexpr MlaDecodeConfig consumer_config(const MlaSparsePrefillConfig& c) {
  return MlaDecodeConfig{.causal = false, .bf16 = true, .qk_warpgroups = c.qk_warpgroups, .vec_store = c.vec_store};
}

// Timeline regions, in region-id order: mla.decode's (the consumers record those ids), then the producer's own. Per
// producer warp and block: index (its entries taken, the next block's read), load_wait (a free KV stage), load_issue
// (the rows' cp.async copies), copy_wait (the previous block's copies landing, then its stage published). Stage = KV
// stage, aux = block (combine: the query token).
#define TL_MLA_SPARSE_PREFILL_PROBES(X) TL_MLA_DECODE_PROBES(X) X(index) X(copy_wait)
namespace mla_prefill_probe {
#define TL_MLA_PREFILL_PROBE_ID(name) name,
enum : unsigned { TL_MLA_SPARSE_PREFILL_PROBES(TL_MLA_PREFILL_PROBE_ID) };
#undef TL_MLA_PREFILL_PROBE_ID
static_assert(static_cast<unsigned>(qk) == static_cast<unsigned>(mla_probe::qk) &&
                  static_cast<unsigned>(combine) == static_cast<unsigned>(mla_probe::combine),
              "the consumers' regions keep mla.decode's ids");
}  // namespace mla_prefill_probe

// Shared memory: mla.decode's layout (mla_decode_plan.hpp), then one 8-byte mask per KV stage (bit t: token t of the
// stage's block has a valid index; producer warp w writes bits 16w .. 16w + 15).
//
// The producer warpgroup fills a KV stage in place: warp w owns the stage's rows 16w .. 16w + 15 (tokens of the
// block), lane l the row 16w + l % 16 and, of its 72 16-byte chunks, the ones of parity l / 16 (the `gather`
// fragment): the lane reads its row's index itself and copies 36 chunks by cp.async, straight from the kv row to
// their swizzled place (zero-filled for an invalid index). The tile's 128B swizzle moves only the 16-byte chunk bits
// (4..6 of a byte offset) by the row's low 3 bits and panels are 8 KiB apart, so copy m of a lane lands at
// offset(row, col(l)) ^ offset(0, 16 m), col(l) = 8 (l / 16): one xor with a constant per copy
// (test_mla_sparse_prefill checks it).
struct MlaSparsePrefillPlan {
  MlaDecodePlan mma;   // the consumers' tiles, fragments, barriers and shared memory (mla.decode's)
  // Registers per thread after setmaxnreg (the 168 a thread of 384 starts with, moved between warpgroups): the
  // consumers' code (mla.decode's) fits in 224; the producer needs few (one row's addresses).
  int producer_regs;
  int consumer_regs;
  int producer_warps;  // 4: the producer warpgroup
  int rows_per_warp;   // 16 tokens of each 64-token block
  int copies;          // 16-byte chunks a lane copies per block: 576 * 2 / 16 / 2
  // bf16 values: producer thread (lane l, warp w) value (e, m) -> row 16w + l % 16, column 8 (2m + l / 16) + e of the
  // 64 x 576 tile (copy m: 8 values, one 16-byte chunk).
  Fragment gather;
  unsigned off_valid;  // the stages' valid-index masks
  unsigned smem_used, smem_bytes;

  TL_HOST_DEVICE constexpr unsigned valid_mask(int stage) const { return off_valid + 8u * static_cast<unsigned>(stage); }
};

TL_HOST_DEVICE constexpr MlaSparsePrefillPlan make_plan(const MlaSparsePrefillConfig& c) {
  MlaSparsePrefillPlan p{};
  p.mma = make_plan(consumer_config(c));
  p.consumer_regs = 224;
  p.producer_regs = 504 - 2 * p.consumer_regs;
  p.producer_warps = 4;
  p.rows_per_warp = kMlaBlock / p.producer_warps;
  p.copies = kMlaDimQK / 8 / 2;
  const int rows = p.mma.rows;
  // Column-major tile index row + col * rows: lane bits 0..3 -> rows, bit 4 -> the chunk's parity (8 columns), warp
  // -> 16 rows; value e -> a column, m -> a pair of chunks (16 columns).
  p.gather = Fragment(make_layout(Layout(make_shape(16, 2, p.producer_warps), make_stride(1, 8 * rows, p.rows_per_warp)),
                                  Layout(make_shape(8, p.copies), make_stride(rows, 16 * rows))),
                      rows, kMlaDimQK);
  p.off_valid = p.mma.smem_used;
  p.smem_used = p.off_valid + 16u;
  p.smem_bytes = p.smem_used + 1024u;
  return p;
}

#if !TL_DEVICE_CODE
inline std::string name_expression(const MlaSparsePrefillConfig& c) {
  return ConfigName("mla_sparse_prefill", "MlaSparsePrefillConfig")
      .field("qk_warpgroups", c.qk_warpgroups)
      .field("vec_store", c.vec_store)
      .str();
}

inline std::vector<std::string> mla_sparse_prefill_probe_names() { return TL_PROBE_NAMES(TL_MLA_SPARSE_PREFILL_PROBES); }
#endif

}  // namespace tl
