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
  bool l2_prefetch = true;  // each cp.async asks the L2 for the 256-byte block around its 16 bytes (.L2::256B)
  // The consumer warpgroups chained over a pair of blocks as FlashMLA's sparse prefill (mla_sparse_prefill.cuh's
  // chained_consumer), the stages filled and freed in halves; with qk_warpgroups 1 (chained()).
  bool chain = true;
  bool kv_evict_last = false;  // the gather's copies (with .L2::256B) under an L2 evict_last policy, as FlashMLA's
  // Where a token's head tiles run: 0 (apart) grid (num_parts, m_tiles), the CTAs of part x being x and x + num_parts
  // in launch order; 1 (adjacent) grid (m_tiles, num_parts), a part's head tiles consecutive CTAs (heads fastest, as
  // FlashMLA's grid); 2 (cluster) as 1, each part's head tiles one cluster (one GPC). Chained only.
  int head_order = 0;
  // Where a CTA's tokens come from (chained only): false (static) the host's run of consecutive tokens (the part);
  // true (dynamic) token `part` first, then, each time its producer starts a token, the next one of its head tile's
  // counter in global memory (token_counter), so that the CTAs' work evens out by itself.
  bool dynamic = false;
  // Chained only: consumer 0 holds Q's RoPE panel in registers as the wgmma A operand of Q K^T's last four k16 steps
  // (mla.decode's rope_regs, mla_consumer.cuh's load_rope_regs; consumer 1 never: chained_consumer).
  bool rope_regs = false;
};

// The chained schedule splits each block's Q K^T to one warpgroup: qk_warpgroups 2 runs mla.decode's consumers.
TL_HOST_DEVICE constexpr bool chained(const MlaSparsePrefillConfig& c) { return c.chain && c.qk_warpgroups == 1; }

// Unchained, the consumers run mla.decode's code (mla_consumer.cuh) on mla.decode's tiles: this is their config.
TL_HOST_DEVICE constexpr MlaDecodeConfig consumer_config(const MlaSparsePrefillConfig& c) {
  return MlaDecodeConfig{.causal = false, .bf16 = true, .qk_warpgroups = c.qk_warpgroups, .vec_store = c.vec_store,
                        .rope_regs = c.rope_regs && chained(c)};
}

// Timeline regions, in region-id order: mla.decode's (the consumers record those ids), then the producer's own. Per
// producer warp and block: index (its entries taken, the next block's read), load_wait (a free KV stage), load_issue
// (the rows' cp.async copies, whose landing arrives on the stage's full barrier by itself). Stage = KV stage, aux =
// block (combine: the query token).
#define TL_MLA_SPARSE_PREFILL_PROBES(X) TL_MLA_DECODE_PROBES(X) X(index)
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
// block). A copy instruction of the warp moves 4 whole 128-byte panel rows (8 lanes a row, 16 bytes each: full L2
// lines, and the 8 chunks of a row fill the 32 banks once), so lane l copies chunk l % 8 of rows 16w + l / 8 + 4i
// (i = 0..3) in each of the 9 panels: 36 cp.async a block (the `gather` fragment), straight from the KV rows to their
// swizzled place (zero-filled for an invalid index). The tile's panels are 8 KiB apart and a panel-aligned column
// shift moves nothing else, so copy (i, p) lands at offset(row_i, col) + offset(0, 64p): 4 row offsets per lane, the
// panels' as immediates (test_mla_sparse_prefill checks it).
struct MlaSparsePrefillPlan {
  MlaDecodePlan mma;   // the consumers' tiles, fragments, barriers and shared memory (mla.decode's)
  // Registers per thread after setmaxnreg (the 168 a thread of 384 starts with, moved between warpgroups): the
  // consumers' code (mla.decode's) fits in 224; the producer needs few (4 rows' addresses).
  int producer_regs;
  int consumer_regs;   // consumer 0's
  int consumer1_regs;  // consumer 1's: consumer 0's but with rope_regs (chained: consumer 0 holds the RoPE panel)
  int producer_warps;  // 4: the producer warpgroup
  int rows_per_warp;   // 16 tokens of each 64-token block
  int row_groups;      // rows a lane copies per block: 4
  int copies;          // 16-byte chunks a lane copies per block: row_groups x 9 panels
  // The full barriers' arrivals: each producer thread's copies (cp.async.mbarrier.arrive.noinc, when they land) and
  // each producer warp's lane 0 after writing its part of the stage's valid mask.
  int full_arrivals;
  // bf16 values: producer thread (lane l, warp w) value (e, p, i) -> row 16w + l / 8 + 4i, column 64p + 8 (l % 8) + e
  // of the 64 x 576 tile (copy (i, p): 8 values, one 16-byte chunk).
  Fragment gather;
  unsigned off_valid;  // the stages' valid-index masks
  // chain: a stage fills and empties in two halves, panels [0, half_panels) (V columns 0 .. 255, consumer 0's) on
  // mla.decode's full and empty barriers, the rest (V columns 256 .. 511 and the RoPE panel) on these.
  int half_panels;
  unsigned off_half_bar;
  // dynamic: the token the consumers run next (written before its Q load, read after its Q barrier) and a two-slot
  // ring through which producer warp 0 hands the claimed tokens to the other producer warps (16 bytes; 0 without).
  unsigned off_token;
  unsigned smem_used, smem_bytes;

  TL_HOST_DEVICE constexpr unsigned valid_mask(int stage) const { return off_valid + 8u * static_cast<unsigned>(stage); }
  TL_HOST_DEVICE constexpr unsigned full_hi(int stage) const { return off_half_bar + 8u * static_cast<unsigned>(stage); }
  TL_HOST_DEVICE constexpr unsigned empty_hi(int stage) const {
    return off_half_bar + 16u + 8u * static_cast<unsigned>(stage);
  }
};

TL_HOST_DEVICE constexpr MlaSparsePrefillPlan make_plan(const MlaSparsePrefillConfig& c) {
  MlaSparsePrefillPlan p{};
  p.mma = make_plan(consumer_config(c));
  // chain: FlashMLA's split (the producer spills below 72 with half loads).
  // rope_regs: consumer 0 holds 16 registers more (Q's RoPE panel): 224 from the producer's 72 (ptxas: 16 B of spills
  // at 216 / 216 / 72, 16-20 B with consumer 1 below 216, none at 224 / 216 / 64, the producer included).
  const bool rope = consumer_config(c).rope_regs;
  p.consumer_regs = chained(c) ? (rope ? 224 : 216) : 224;
  p.consumer1_regs = chained(c) ? 216 : 224;
  p.producer_regs = 504 - p.consumer_regs - p.consumer1_regs;
  p.producer_warps = 4;
  p.rows_per_warp = kMlaBlock / p.producer_warps;
  const int rows = p.mma.rows, lanes_per_row = p.mma.panel_cols / 8;
  p.row_groups = p.rows_per_warp / (32 / lanes_per_row);
  p.copies = p.row_groups * p.mma.panels;
  p.full_arrivals = 128 + p.producer_warps;
  // Column-major tile index row + col * rows: lane bits 0..2 -> a chunk of 8 columns, bits 3..4 -> rows, warp -> 16
  // rows; value e -> a column, p -> a panel (64 columns), i -> 4 rows.
  p.gather = Fragment(make_layout(Layout(make_shape(lanes_per_row, 32 / lanes_per_row, p.producer_warps),
                                         make_stride(8 * rows, 1, p.rows_per_warp)),
                                  Layout(make_shape(8, p.mma.panels, p.row_groups),
                                         make_stride(rows, p.mma.panel_cols * rows, 32 / lanes_per_row))),
                      rows, kMlaDimQK);
  p.off_valid = p.mma.smem_used;
  p.half_panels = kMlaDimV / 2 / p.mma.panel_cols;
  p.off_half_bar = p.off_valid + 16u;
  p.off_token = p.off_half_bar + (chained(c) ? 32u : 0u);
  p.smem_used = p.off_token + (c.dynamic ? 16u : 0u);
  p.smem_bytes = p.smem_used + 1024u;
  return p;
}

#if !TL_DEVICE_CODE
inline std::string name_expression(const MlaSparsePrefillConfig& c) {
  ConfigName n("mla_sparse_prefill", "MlaSparsePrefillConfig");
  n.field("qk_warpgroups", c.qk_warpgroups)
      .field("vec_store", c.vec_store)
      .field("l2_prefetch", c.l2_prefetch)
      .field("chain", c.chain)
      .field("kv_evict_last", c.kv_evict_last)
      .field("head_order", c.head_order)
      .field("dynamic", c.dynamic);
  if (c.rope_regs) n.field("rope_regs", true);  // named only when on: the kernels without it keep their names
  return n.str();
}

inline std::vector<std::string> mla_sparse_prefill_probe_names() { return TL_PROBE_NAMES(TL_MLA_SPARSE_PREFILL_PROBES); }
#endif

}  // namespace tl
