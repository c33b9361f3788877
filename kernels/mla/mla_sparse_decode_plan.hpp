// The plan of mla.sparse_decode: its typed config, probe regions, and how the producer's gather lays FP8 cache rows
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

// Which CTAs copy each row's RoPE bytes straight to their tile columns (config `rope_direct`): none, all, or those
// without a crossover peer (64 heads, or crossover off), where it measured faster (docs/perf.md).
enum class MlaRopeDirect : unsigned char { off = 0, on = 1, unpaired = 2 };

// How the producer gathers a cache row (config `gather`): cp.async copies of its raw bytes into the stage, read back
// and dequantized in place; or 16-byte loads straight into registers, dequantized there and stored once; or `paired`:
// registers in the CTAs of a crossover pair (each converts 8 rows a warp, a whole ring), copies in the others. Any
// but `copies` moves the registers (the plan's comment).
enum class MlaSparseGather : unsigned char { copies = 0, regs = 1, paired = 2 };

// How a crossover CTA's producer writes its half of a block into the peer's stage (config `peer_copy`): each lane's
// st.async stores beside its own st.shared ones (every value written twice by the lanes), or the own stage only and
// then, once the warp's rows are stored and fenced, one lane's bulk copies (cp.async.bulk shared::cta ->
// shared::cluster) of the warp's rows panel by panel (the plan's peer_copy_offset), completing on the same remote
// barrier with the same bytes: `bulk` after the warp's 8 rows (one copy a panel), `bulk_half` after each 4 (two).
enum class MlaPeerCopy : unsigned char { store = 0, bulk = 1, bulk_half = 2 };

// The kernel's one template parameter, in the config schema's names (mla_sparse_decode.cpp). q, out and the MMAs are
// bf16; the cache is FlashMLA's V3.2 FP8 format.
struct MlaSparseDecodeConfig {
  int qk_warpgroups = 1;  // consumer warpgroups computing Q K^T: 1 or 2 (as mla.decode's)
  bool vec_store = true;  // 16-bit partials and outputs as 16-byte vectors
  int dequant_rows = 2;   // rows a producer warp reads from shared memory at once before writing them: 1 or 2
  // heads > 64 (an even number of 64-head tiles): the two CTAs of a head-tile pair run as a 2-CTA cluster, each
  // gathering and dequantizing half of every block and writing it into both CTAs' stages (FlashMLA's "crossover").
  bool crossover = false;
  // Each row's 128 RoPE bytes (already bf16) are copied by cp.async straight to their place in the tile instead of
  // beside the raw chunks, then read and written back: one shared-memory read and write less per row (a token without
  // a valid index keeps stale RoPE values: its score is masked, and P V reads no RoPE column). With crossover, each
  // CTA copies the RoPE of all the block's rows, and writes only the NoPE values of its half into the peer.
  MlaRopeDirect rope_direct = MlaRopeDirect::unpaired;
  // The next block's copies are issued into the other KV stage as soon as the consumers release it, between this
  // block's row batches (polling its empty barrier), instead of after this block is published: their latency
  // overlaps this block's dequantization, and the consumers' time on the previous block overlaps both.
  bool lookahead = false;
  // regs: each producer lane loads its 16 NoPE bytes, its group's scale and 2 RoPE values of a row into registers (a
  // ring of `gather_rows` rows a warp, reloaded with the next rows once all of its rows are stored), so the raw bytes
  // never pass through shared memory. Needs the producer's registers: consumer 0 (Q K^T, softmax, its P V half) keeps
  // 208, consumer 1 (its P V half only) 168, so qk_warpgroups must be 1. dequant_rows, rope_direct and lookahead shape
  // the copies only. Measured 1.00-1.21x copies on an H100 (docs/perf.md); the spec's `auto` (its default) takes it
  // with one Q K^T warpgroup.
  MlaSparseGather gather = MlaSparseGather::copies;
  // gather=regs: the ring's loads of the next block's rows are issued after this block is published (fence and
  // full-barrier arrival), not before (the kernel's comment).
  bool late_reload = false;
  // gather=regs or paired, a CTA without a crossover peer (64 heads, or crossover off): each warp's ring holds the
  // block's first 8 rows of its 16 (loaded a block ahead, as before); its last 8 go by cp.async into their rows' raw
  // chunks as soon as the stage is free and are converted from shared memory after the ring's rows (the copies
  // gather's conversion), so the ring reloads with the next block's rows mid-block instead of with this block's
  // second 8 (the kernel's comment).
  bool hybrid = false;
  // gather=regs or paired: the consumers' epilogue row offsets recomputed per request (mla_consumer's OPAQUE_ROWS), so
  // that no 64-bit one is held across the block loop, where its two registers changed how ptxas allocated the
  // producer's ring (the kernel's comment).
  bool opaque_rows = true;
  // The consumers skip O's rescale in a warp where no row's maximum moved (every factor exactly 1), by a vote per
  // warp (MlaDecodeConfig::lazy_rescale).
  bool lazy_rescale = true;
  // qk_warpgroups=1: the consumers' wgmma descriptors from warp-uniform values (MlaDecodeConfig::uniform_desc,
  // mla.decode's): Q K^T's 36 k16 steps each add a constant to the request's and the stage's low words in uniform
  // registers instead of rebuilding both descriptors from their addresses (consumer 0's block loop 923 -> 630 SASS
  // instructions; measured 0.995-1.010x the default, docs/perf.md).
  bool uniform_desc = false;
  // qk_warpgroups=1: consumer 0's softmax stores P by stmatrix and starts its row max / sum chains from the first
  // values (MlaDecodeConfig::lean_softmax; exact).
  bool lean_softmax = false;
  // crossover: how the peer's copy of this CTA's half is written (MlaPeerCopy; the spec's `auto`, its default, takes
  // bulk where the CTAs pair).
  MlaPeerCopy peer_copy = MlaPeerCopy::store;
  // gather=regs with hybrid, a CTA without a crossover peer (64 heads): consumer 1 (P V only) converts the last c1_rows
  // rows of each producer warp's 16 (0, 2 or 4), by cp.async copies issued at the top of its block for the next block,
  // converted after its P V is issued (c1_early: before it waits for P, during consumer 0's softmax); the producer's
  // copies take the rows between its ring's 8 and those (the kernel's comment).
  int c1_rows = 0;
  bool c1_early = false;
  // Every row's e4m3 -> bf16 conversion (RowCodec::write_row) as one byte permute, one arithmetic shift and one mask a
  // bf16 pair, the permute's selector a register of the lane that also picks which of the lane's two 16-byte chunks
  // the pair belongs to (prmt_cvt_selector): no select a pair for the chunk order, no zero-byte permute, one mask
  // instead of two and an or (the kernel's comment).
  bool prmt_cvt = false;
};

// prmt_cvt: the selector of prmt(a, b, sel) that puts bytes 2i, 2i + 1 of a (first: of b) at the top of the two
// 16-bit halves and the sign of byte 2i, replicated, in the byte between them: [b(2i+1), sign(b(2i)) x 8, b(2i), any].
// Shifted right by 4 as a signed word and masked with kPrmtCvtMask, each half is its e4m3 byte's sign, 4 exponent and 3
// mantissa bits in bf16's sign, low exponent and top mantissa bits: the value times 2^-120, bit for bit the old
// conversion's (e4m3x4_to_bf16x4_scaled; test_mla_sparse_decode_plan checks all 2^16 byte pairs).
TL_HOST_DEVICE constexpr unsigned prmt_cvt_selector(bool first, int i) {
  return (i ? 0x3A22u : 0x1800u) + (first ? 0x4444u : 0u);
}
enum : unsigned { kPrmtCvtMask = 0x87F087F0u };
// RowCodec keeps pair 0's selector in a register and adds this for pair 1's.
static_assert(prmt_cvt_selector(false, 1) == prmt_cvt_selector(false, 0) + 0x2222u &&
                  prmt_cvt_selector(true, 1) == prmt_cvt_selector(true, 0) + 0x2222u,
              "the odd pairs' selector is the even pairs' + 0x2222");

// The consumers run mla.decode's code (mla_consumer.cuh) on mla.decode's tiles: this is their config.
TL_HOST_DEVICE constexpr MlaDecodeConfig consumer_config(const MlaSparseDecodeConfig& c) {
  return MlaDecodeConfig{.causal = false, .bf16 = true, .qk_warpgroups = c.qk_warpgroups, .vec_store = c.vec_store,
                         .uniform_desc = c.uniform_desc && c.qk_warpgroups == 1, .lazy_rescale = c.lazy_rescale,
                         .lean_softmax = c.lean_softmax && c.qk_warpgroups == 1};
}

// Timeline regions, in region-id order: mla.decode's (the consumers record those ids), then the producer's own. Per
// producer warp and block: index (its 16 index entries taken, the next ones read, rows prefetched), load_wait (a free
// KV stage), load_issue (the rows' cp.async copies), dequant (the rows turned into bf16, copy_wait inside it: the
// waits for a group of 4 rows' copies). Stage = KV stage, aux = block (copy_wait: the group's first row; combine:
// the request).
#define TL_MLA_SPARSE_DECODE_PROBES(X) TL_MLA_DECODE_PROBES(X) X(dequant) X(index) X(copy_wait)
namespace mla_sparse_probe {
#define TL_MLA_SPARSE_PROBE_ID(name) name,
enum : unsigned { TL_MLA_SPARSE_DECODE_PROBES(TL_MLA_SPARSE_PROBE_ID) };
#undef TL_MLA_SPARSE_PROBE_ID
static_assert(static_cast<unsigned>(qk) == static_cast<unsigned>(mla_probe::qk) &&
                  static_cast<unsigned>(combine) == static_cast<unsigned>(mla_probe::combine),
              "the consumers' regions keep mla.decode's ids");
}  // namespace mla_sparse_probe

// A cache row (FlashMLA's "V3.2" FP8 format, 656 bytes a token): 512 e4m3 NoPE values, 4 f32 scales (one per 128
// values), 64 bf16 RoPE values; 41 chunks of 16 bytes.
enum : int { kMlaFp8RowBytes = 656, kMlaFp8Nope = 512, kMlaFp8Group = 128, kMlaFp8ScaleChunk = 32, kMlaFp8RopeChunk = 33,
             kMlaFp8Chunks = 41 };

// Shared memory: mla.decode's layout (mla_decode_plan.hpp), then one 8-byte mask per KV stage (bit t: token t of the
// stage's block has a valid index; producer warp w writes bits 16w .. 16w + 15), then (used with crossover) one
// mbarrier per KV stage that the peer CTA's st.async writes of its half of the block complete.
//
// The producer warpgroup fills a KV stage in place: warp w owns the stage's rows 16w .. 16w + 15 (tokens of the
// block). Each row's 656 cache bytes land by cp.async as 41 16-byte chunks in the row's own first 328 columns (chunk
// j at column 8j: `raw_col(j)`), lane l copying chunk l and lanes 0..8 chunks 32 + l; then the warp reads a row's
// chunks into registers and writes the row's 576 bf16 values over them (the `nope` and `rope` fragments below).
// The tile's 128B swizzle moves only the 16-byte chunk bits (4..6 of a byte offset) by the row's low 3 bits, so the
// byte offset of (16w + k, col) is offset(k, 0) + (offset(16w, col) ^ term(k)), term(k) a constant of the unrolled
// token k (test_mla_sparse_decode_plan checks it): one xor per access.
struct MlaSparseDecodePlan {
  MlaDecodePlan mma;    // the consumers' tiles, fragments, barriers and shared memory (mla.decode's)
  // Registers per thread after setmaxnreg (the 168 a thread of 384 starts with, moved between warpgroups: 128 x
  // (producer + consumers) <= 384 x 168): the consumers' code (mla.decode's) fits in 224 (216 spills), the producer
  // gets the rest for its copies' addresses and a batch of rows. gather=regs: consumer 0 208, consumer 1 (P V only)
  // 168, each set in its own branch (one call before the branch would hold both to the smaller) and each building its
  // arguments after it (built before, they spilled 40 bytes at 160), the producer 128 for its ring of rows.
  int producer_regs;
  int consumer_regs;   // consumer 0's (and consumer 1's with gather=copies)
  int consumer1_regs;  // consumer 1's
  int gather_rows;     // gather=regs: rows of a warp in flight (its ring of registers)
  int helper_rows;     // c1_rows where it applies (gather=regs with hybrid), else 0
  int producer_warps;   // 4: the producer warpgroup
  int rows_per_warp;    // 16 tokens of each 64-token block
  // Dequantized NoPE values: producer thread (lane l, warp w) value (e, k) -> row 16w + k, column 16l + e of the
  // 64 x 576 tile (two 16-byte stores per row: columns 16l .. 16l + 7 and 16l + 8 .. 16l + 15).
  Fragment nope;
  // RoPE values (copied, already bf16): thread (l, w) value (e, k) -> row 16w + k, column 2l + e of the tile's last 64
  // columns (one 4-byte store per row).
  Fragment rope;
  unsigned off_valid;   // the stages' valid-index masks
  unsigned off_remote;  // crossover: the stages' "peer's half landed" barriers
  unsigned smem_used, smem_bytes;

  TL_HOST_DEVICE constexpr int raw_col(int chunk) const { return 8 * chunk; }
  TL_HOST_DEVICE constexpr unsigned valid_mask(int stage) const { return off_valid + 8u * static_cast<unsigned>(stage); }
  TL_HOST_DEVICE constexpr unsigned remote_bar(int stage) const {
    return off_remote + 8u * static_cast<unsigned>(stage);
  }
  // Crossover: the bytes a CTA's producer writes into its peer per block (half the rows, 576 bf16 each; 512 with
  // rope_direct, whose RoPE each CTA copies itself).
  TL_HOST_DEVICE constexpr unsigned remote_bytes(bool rope_direct) const {
    return kMlaBlock / 2u * 2u * (rope_direct ? kMlaDimV : kMlaDimQK);
  }
  // Crossover with peer_copy=bulk: producer warp w of the CTA of rank `rank` sends its half's rows (16w + 8 rank ..
  // + 7) as one bulk copy per 64-column panel: the 8 rows are one 1 KiB swizzle atom of each panel (SW128 permutes
  // 16-byte chunks within a 128-byte row only), contiguous at this byte offset of a stage, the same in both CTAs;
  // bulk_half: in `parts` = 2 pieces of 4 rows (512 bytes), piece `part` as soon as its rows are stored. The first
  // peer_copy_panels panels: all 9, or with rope_direct the 8 NoPE ones (each CTA copies every row's RoPE itself).
  // 4 warps x panels x 1 KiB = remote_bytes (test_mla_sparse_decode_plan checks the cover).
  TL_HOST_DEVICE static constexpr int peer_copy_parts(MlaPeerCopy c) { return c == MlaPeerCopy::bulk_half ? 2 : 1; }
  TL_HOST_DEVICE constexpr unsigned peer_copy_offset(int warp, unsigned rank, int panel, int part = 0,
                                                     int parts = 1) const {
    return 2u * static_cast<unsigned>(mma.tile.layout()(rows_per_warp * warp, mma.panel_cols * panel)) +
           2u * static_cast<unsigned>(mma.tile.layout()(rows_per_warp / 2, 0)) * rank +
           peer_copy_bytes(parts) * static_cast<unsigned>(part);
  }
  TL_HOST_DEVICE constexpr unsigned peer_copy_bytes(int parts = 1) const {
    return 2u * static_cast<unsigned>(rows_per_warp / 2 / parts * mma.panel_cols);
  }
  TL_HOST_DEVICE constexpr int peer_copy_panels(bool rope_direct) const {
    return (rope_direct ? kMlaDimV : kMlaDimQK) / mma.panel_cols;
  }
};

TL_HOST_DEVICE constexpr MlaSparseDecodePlan make_plan(const MlaSparseDecodeConfig& c) {
  MlaSparseDecodePlan p{};
  p.mma = make_plan(consumer_config(c));
  const bool regs = c.gather != MlaSparseGather::copies;
  p.consumer_regs = regs ? 208 : 224;
  p.gather_rows = 8;
  p.helper_rows = c.gather == MlaSparseGather::regs && c.hybrid ? c.c1_rows : 0;
  // c1_rows: consumer 1 holds its block cursor and a pair of rows beside O (sparse16: at 168 it spilled); the
  // producer, with fewer rows to convert, gives 8.
  p.consumer1_regs = regs ? (p.helper_rows > 0 ? 176 : 168) : 224;
  p.producer_regs = 504 - p.consumer_regs - p.consumer1_regs;
  p.producer_warps = 4;
  p.rows_per_warp = kMlaBlock / p.producer_warps;
  const int rows = p.mma.rows;
  // Column-major tile index row + col * rows: lane l -> 16 l columns, warp w -> 16 w rows; value e -> a column,
  // k -> a row.
  p.nope = Fragment(make_layout(Layout(make_shape(32, p.producer_warps), make_stride(16 * rows, p.rows_per_warp)),
                                Layout(make_shape(16, p.rows_per_warp), make_stride(rows, 1))),
                    rows, kMlaDimQK);
  p.rope = Fragment(make_layout(Layout(make_shape(32, p.producer_warps), make_stride(2 * rows, p.rows_per_warp)),
                                Layout(make_shape(2, p.rows_per_warp), make_stride(rows, 1))),
                    rows, kMlaDimQK - kMlaDimV);
  p.off_valid = p.mma.smem_used;
  p.off_remote = p.off_valid + 16u;
  p.smem_used = p.off_remote + 16u;
  p.smem_bytes = p.smem_used + 1024u;
  return p;
}

#if !TL_DEVICE_CODE
inline std::string name_expression(const MlaSparseDecodeConfig& c) {
  ConfigName name("mla_sparse_decode", "MlaSparseDecodeConfig");
  name.field("qk_warpgroups", c.qk_warpgroups)
      .field("vec_store", c.vec_store)
      .field("dequant_rows", c.dequant_rows)
      .field("crossover", c.crossover)
      .raw("rope_direct", std::string("tl::MlaRopeDirect::") + (c.rope_direct == MlaRopeDirect::on    ? "on"
                                                                 : c.rope_direct == MlaRopeDirect::off ? "off"
                                                                                                       : "unpaired"))
      .field("lookahead", c.lookahead)
      .raw("gather", std::string("tl::MlaSparseGather::") + (c.gather == MlaSparseGather::regs     ? "regs"
                                                             : c.gather == MlaSparseGather::paired ? "paired"
                                                                                                   : "copies"))
      .field("late_reload", c.late_reload)
      .field("hybrid", c.hybrid)
      .field("opaque_rows", c.opaque_rows)
      .field("lazy_rescale", c.lazy_rescale)
      .field("uniform_desc", c.uniform_desc)
      .field("lean_softmax", c.lean_softmax)
      .raw("peer_copy", std::string("tl::MlaPeerCopy::") + (c.peer_copy == MlaPeerCopy::bulk        ? "bulk"
                                                             : c.peer_copy == MlaPeerCopy::bulk_half ? "bulk_half"
                                                                                                     : "store"))
      .field("c1_rows", c.c1_rows)
      .field("c1_early", c.c1_early);
  // prmt_cvt: in the name only when on, so every other config's name (and NVRTC cache key) is unchanged.
  if (c.prmt_cvt) name.field("prmt_cvt", c.prmt_cvt);
  return name.str();
}

inline std::vector<std::string> mla_sparse_decode_probe_names() { return TL_PROBE_NAMES(TL_MLA_SPARSE_DECODE_PROBES); }
#endif

}  // namespace tl
