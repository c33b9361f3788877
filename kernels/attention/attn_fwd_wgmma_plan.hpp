// attn.fwd.wgmma's plan: its typed config, probe regions, TMA/wgmma shared-memory tiles, barriers, fragments, bytes.
#pragma once

#include "tile/atoms.hpp"
#include "tile/config.hpp"
#include "tile/config_name.hpp"
#include "tile/fragment.hpp"
#include "tile/layout.hpp"
#include "tile/swizzle.hpp"

#if !TL_DEVICE_CODE
#include <string>
#include <vector>
#endif

namespace tl {

// How O leaves (config `epilogue`): straight from the accumulators, staged in shared memory then 16-byte stores, or
// staged then TMA stores.
enum class AttnEpilogue : unsigned char { direct = 0, smem = 1, tma = 2 };

// The softmax's form (config `softmax`): the row max and row sum as chains in source order (chain), as binary trees
// (tree), or as trees with O's rescale put off while no row maximum of the warp has grown by more than 8 (log2 units)
// since it was last applied (lazy: the tile's exp2 values then stay below 2^8, and O and the row sums stay relative
// to the older maximum, which the epilogue's 1 / l and LSE use alike).
enum class AttnSoftmax : unsigned char { chain = 0, tree = 1, lazy = 2 };

// The kernel's one template parameter: the config schema's values (TileLang's names) and the problem's flags it is
// specialised on. (`persistent` and `section` are launch and argument values, not part of the code.)
struct AttnFwdWgmmaConfig {
  int dim = 128;                            // head dimension of Q and K (64, 128, 192 or 256)
  int dim_v = 128;                          // head dimension of V and O (64, 128, 192 or 256)
  int block_M = 128;                        // query rows per block, 64 per consumer warpgroup
  int block_N = 128;                        // keys per K/V tile
  int num_stages = 2;                       // K tiles and V tiles in flight
  int q_stages = 2;                         // Q buffers
  bool ping_pong = true;                    // consumer warpgroups take turns issuing GEMMs
  AttnEpilogue epilogue = AttnEpilogue::tma;
  bool causal = false;                      // bottom-right aligned causal mask
  bool bf16 = true;                         // dtype of Q, K, V, O: bf16, else f16
  bool varlen = false;                      // packed sequences (3-D tensor maps, LSE [heads, total_q])
  bool window = false;                      // sliding window (causal): row r sees keys (r - window, r], bottom-right
  bool sinks = false;                       // a per-head sink logit joins each row's softmax denominator
  bool dynamic = false;                     // work tiles taken from a global counter in turn (else static striding)
  int min_blocks = 1;                       // CTAs per SM the registers are budgeted for (__launch_bounds__, setmaxnreg)
  bool uniform_desc = false;                // wgmma descriptors from warp-uniform values (uniform registers)
  bool pv_fence = false;                    // a tile's P V wait held after its softmax (a clock-read fence)
  AttnSoftmax softmax = AttnSoftmax::chain;  // row max / sum as chains or trees; O's rescale every tile or lazily
};

// Timeline regions (TL_PROBE marks), in the order of the spec's `probes`.
#define TL_ATTN_FWD_WGMMA_PROBES(X)                                                                                \
  X(wait_empty) X(tma_issue) X(wait_full) X(wait_turn) X(gemm_issue) X(softmax) X(wait_pv) X(epilogue) X(wait_s) \
  X(rescale_p) X(wait_v)

struct AttnFwdWgmmaProbe {
#define TL_ATTN_PROBE_ENUM(name) name,
  enum Region : unsigned { TL_ATTN_FWD_WGMMA_PROBES(TL_ATTN_PROBE_ENUM) };
#undef TL_ATTN_PROBE_ENUM
};

// Shared memory (dynamic; byte offsets from the 1024-byte aligned base, the 128B swizzle atom being 8 rows x 128 B):
//   Q          q_stages buffers of smem_Q
//   K ring     num_stages tiles of smem_K
//   V ring     num_stages tiles of smem_V
//   O staging  epilogue smem/tma only: block_M / 64 warpgroup tiles of smem_O (the TMA store's box)
//   mbarriers  q_full[q_stages], q_empty[q_stages], k_full[num_stages], k_empty, v_full, v_empty (8 bytes each)
//   dynamic    tile_full[2], tile_empty[2] (mbarriers), then two int slots of work tile numbers
// Every tile is TMA's SWIZZLE_128B: boxes of 64 columns (128 bytes) x rows, one after another, 16-byte chunk j of
// row r at chunk j ^ (r % 8). Q and K feed wgmma as K-major operands, V as the N-major B (its (dim, key) view).
struct AttnFwdWgmmaPlan {
  // Steps of a tile's tables: k16 steps of dim / 16 (Q, K) or block_N / 16 (V), 8-column groups of dim_v / 8 (O).
  static constexpr int kMaxSteps = 32;

  SwizzledLayout smem_Q;  // (block_M, dim) -> element offset
  SwizzledLayout smem_K;  // (block_N, dim)
  SwizzledLayout smem_V;  // (dim_v, block_N), N-major: the bytes TMA writes as a (block_N, dim_v) box
  SwizzledLayout smem_O;  // (64, dim_v): one consumer warpgroup's rows
  int box_cols = 64;      // columns of a TMA box (128 bytes)
  // One Q buffer, one K tile, one V tile, one warpgroup's O staging tile.
  int q_bytes = 0, k_bytes = 0, v_bytes = 0, o_bytes = 0;
  int q_box = 0, kv_box = 0, o_box = 0;  // bytes from one box of 64 columns to the next (K's and V's are alike)
  int q_offset = 0, k_offset = 0, v_offset = 0, o_offset = 0;
  int bar_q_full = 0, bar_q_empty = 0, bar_k_full = 0, bar_k_empty = 0, bar_v_full = 0, bar_v_empty = 0;
  // dynamic only: the two-slot ring of work tile numbers the producer hands the consumers, and its barriers.
  int bar_tile_full = 0, bar_tile_empty = 0, tile_slots = 0;
  int bytes = 0;  // with the 1024-byte alignment slack
  // wgmma descriptor starts: k16 step kk of Q and K (row 0, columns 16 kk), of V (keys 16 kk); V's leading byte
  // offset (from one 64-column box of dim to the next).
  int q_k16[kMaxSteps]{}, k_k16[kMaxSteps]{}, v_k16[kMaxSteps]{};
  int v_lbo = 0;
  // O staging column 8 j at row 0, split into its chunk inside the 128-byte swizzle span (XORed into a thread's
  // offset: the swizzle is linear over XOR and the bits are disjoint) and the box offset (added).
  int o_chunk8[kMaxSteps]{}, o_box8[kMaxSteps]{};

  Fragment acc_S;   // S = Q K^T: wgmma m64n{block_N}k16 accumulator, 128 threads of a consumer warpgroup
  Fragment frag_P;  // P as the A operand of O += P V (registers), per k16 step
  Fragment acc_O;   // O: wgmma m64n{dim_v}k16 accumulator
  ValueOffsets<128> s_values;
  ValueOffsets<128> o_values;
  // P = S in registers: S's value v is held, by the same thread, in P's register p_reg[v] (4 per k16 step; values v
  // and v + 1, v even, as its low and high halves).
  int p_reg[128]{};
  float scale_log2 = 0;  // log2(e) / sqrt(dim): exp2(S * scale_log2) = exp(S / sqrt(dim))

  // The byte offset of 16-bit element (row, col) of a tile.
  TL_HOST_DEVICE constexpr static int byte(const SwizzledLayout& tile, int row, int col) { return 2 * tile(row, col); }
};

// The K/V tiles [top - n, top) of block_N keys that query rows [m0, m0 + block_M) of a sequence visit: none past
// seq_k; causal, none past the block's last row's bottom-right diagonal (row r sees keys <= r + seq_k - seq_q); with a
// window (causal), none wholly before the block's first row's band (r + diag - window, r + diag]. The kernel walks
// this range, and the host's causal work model (attn_fwd.cpp's wgmma_section) costs each work tile by it.
struct AttnKvTiles {
  int top, n;
};
TL_HOST_DEVICE constexpr AttnKvTiles attn_kv_tiles(int m0, int block_M, int block_N, int seq_q, int seq_k, bool causal,
                                                   bool windowed, int window) {
  const int diag = seq_k - seq_q;
  const int kv_end = causal ? detail::imax(0, detail::imin(seq_k, m0 + block_M + diag)) : seq_k;
  const int top = (kv_end + block_N - 1) / block_N;
  const int kv_begin = windowed ? detail::imax(0, m0 + diag - window + 1) : 0;
  return {top, detail::imax(0, top - kv_begin / block_N)};
}

// Registers a consumer thread has after setmaxnreg when min_blocks > 1 CTAs share the SM's file of regs_per_sm: each
// CTA launches with the launch bounds' cap per thread (a multiple of 8), and setmaxnreg only moves registers inside
// that CTA's pool, so the consumer warpgroups share what the producer's producer_regs leave of it (multiples of 8).
TL_HOST_DEVICE constexpr int attn_shared_consumer_regs(int regs_per_sm, int block_M, int min_blocks, int producer_regs) {
  const int consumers = block_M / 64, threads = (consumers + 1) * 128;
  const int launch = regs_per_sm / (min_blocks * threads) / 8 * 8;
  return (launch * threads - 128 * producer_regs) / (128 * consumers) / 8 * 8;
}

// sqrt(x) for x >= 1 by Newton's iteration (std::sqrt is not constexpr): converged to double precision.
TL_HOST_DEVICE constexpr double constexpr_sqrt(double x) {
  double r = x;
  for (int i = 0; i < 64; ++i) r = 0.5 * (r + x / r);
  return r;
}

TL_HOST_DEVICE constexpr AttnFwdWgmmaPlan make_plan(const AttnFwdWgmmaConfig& c) {
  AttnFwdWgmmaPlan p;
  p.scale_log2 = static_cast<float>(1.4426950408889634 / constexpr_sqrt(c.dim));
  p.smem_Q = smem_layout(SmemSwizzle::b128, 2, c.block_M, c.dim);
  p.smem_K = smem_layout(SmemSwizzle::b128, 2, c.block_N, c.dim);
  p.smem_V = smem_layout(SmemSwizzle::b128, 2, c.dim_v, c.block_N, Major::MN);
  p.smem_O = smem_layout(SmemSwizzle::b128, 2, 64, c.dim_v);
  p.box_cols = swizzle_bytes(SmemSwizzle::b128) / 2;
  p.q_bytes = 2 * p.smem_Q.cosize();
  p.k_bytes = 2 * p.smem_K.cosize();
  p.v_bytes = 2 * p.smem_V.cosize();
  p.o_bytes = c.epilogue == AttnEpilogue::direct ? 0 : 2 * p.smem_O.cosize();
  // One box is the tile of box_cols columns (also where dim has a single box).
  p.q_box = 2 * smem_layout(SmemSwizzle::b128, 2, c.block_M, p.box_cols).cosize();
  p.kv_box = 2 * smem_layout(SmemSwizzle::b128, 2, c.block_N, p.box_cols).cosize();
  p.o_box = 2 * smem_layout(SmemSwizzle::b128, 2, 64, p.box_cols).cosize();
  p.q_offset = 0;
  p.k_offset = p.q_offset + c.q_stages * p.q_bytes;
  p.v_offset = p.k_offset + c.num_stages * p.k_bytes;
  p.o_offset = p.v_offset + c.num_stages * p.v_bytes;
  const int bars = p.o_offset + (c.block_M / 64) * p.o_bytes;
  p.bar_q_full = bars;
  p.bar_q_empty = p.bar_q_full + 8 * c.q_stages;
  p.bar_k_full = p.bar_q_empty + 8 * c.q_stages;
  p.bar_k_empty = p.bar_k_full + 8 * c.num_stages;
  p.bar_v_full = p.bar_k_empty + 8 * c.num_stages;
  p.bar_v_empty = p.bar_v_full + 8 * c.num_stages;
  const int end = p.bar_v_empty + 8 * c.num_stages;
  p.bar_tile_full = end;
  p.bar_tile_empty = p.bar_tile_full + 8 * 2;
  p.tile_slots = p.bar_tile_empty + 8 * 2;
  p.bytes = (c.dynamic ? p.tile_slots + 4 * 2 : end) + 1024;
  for (int kk = 0; kk < AttnFwdWgmmaPlan::kMaxSteps; ++kk) {
    if (16 * kk < c.dim) {
      p.q_k16[kk] = p.byte(p.smem_Q, 0, 16 * kk);
      p.k_k16[kk] = p.byte(p.smem_K, 0, 16 * kk);
    }
    if (16 * kk < c.block_N) p.v_k16[kk] = p.byte(p.smem_V, 0, 16 * kk);
    if (8 * kk < c.dim_v) {
      const int off = p.byte(p.smem_O, 0, 8 * kk), span = swizzle_bytes(SmemSwizzle::b128);
      p.o_chunk8[kk] = off % span;
      p.o_box8[kk] = off - off % span;
    }
  }
  p.v_lbo = p.kv_box;  // V's boxes of dim, as K's
  p.acc_S = wgmma_m64nNk16_d(c.block_N);
  p.frag_P = wgmma_m64k16_a_f16();
  p.acc_O = wgmma_m64nNk16_d(c.dim_v);
  p.s_values = value_offsets<128>(p.acc_S);
  p.o_values = value_offsets<128>(p.acc_O);
  for (int v = 0; v < p.acc_S.num_values(); ++v) {
    const TileCoord x = p.acc_S(0, v);
    const int step = x.col / p.frag_P.cols();
    p.p_reg[v] = step * (p.frag_P.num_values() / 2) + p.frag_P.value_of(x.row, x.col % p.frag_P.cols()) / 2;
  }
  return p;
}

#if !TL_DEVICE_CODE
inline std::string name_expression(const AttnFwdWgmmaConfig& c) {
  const char* epi = c.epilogue == AttnEpilogue::tma ? "tma" : c.epilogue == AttnEpilogue::smem ? "smem" : "direct";
  return ConfigName("attn_fwd_wgmma", "AttnFwdWgmmaConfig")
      .field("dim", c.dim)
      .field("dim_v", c.dim_v)
      .field("block_M", c.block_M)
      .field("block_N", c.block_N)
      .field("num_stages", c.num_stages)
      .field("q_stages", c.q_stages)
      .field("ping_pong", c.ping_pong)
      .raw("epilogue", std::string("tl::AttnEpilogue::") + epi)
      .field("causal", c.causal)
      .field("bf16", c.bf16)
      .field("varlen", c.varlen)
      .field("window", c.window)
      .field("sinks", c.sinks)
      .field("dynamic", c.dynamic)
      .field("min_blocks", c.min_blocks)
      .field("uniform_desc", c.uniform_desc)
      .field("pv_fence", c.pv_fence)
      .raw("softmax", std::string("tl::AttnSoftmax::") +
                          (c.softmax == AttnSoftmax::tree ? "tree" : c.softmax == AttnSoftmax::lazy ? "lazy" : "chain"))
      .str();
}

inline std::vector<std::string> attn_fwd_wgmma_probe_names() {
  return TL_PROBE_NAMES(TL_ATTN_FWD_WGMMA_PROBES);
}
#endif

}  // namespace tl
