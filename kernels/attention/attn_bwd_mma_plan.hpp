// The plan of attn.bwd.mma: its typed config, probe regions, shared-memory tiles, fragments and byte counts.
#pragma once

#include "tile/atoms.hpp"
#include "tile/config.hpp"
#include "tile/fragment.hpp"
#include "tile/layout.hpp"
#include "tile/swizzle.hpp"

#if !TL_DEVICE_CODE
#include <string>
#include <vector>

#include "tile/config_name.hpp"
#endif

namespace tl {

// The kernel's one template parameter: the head dims, causal, bf16 and varlen come from the problem, the rest from
// the config schema (attn_bwd.cpp), in the schema's names.
struct AttnBwdMmaConfig {
  int dim_qk = 128;            // head dim of Q and K
  int dim_v = 128;             // head dim of V, O and dO
  bool causal = false;         // bottom-right aligned: query row r sees keys c <= r + len_k - len_q
  bool bf16 = true;            // 16-bit inputs and outputs in bf16 (else f16)
  bool varlen = false;         // LSE as [heads, total_q] (else [batch, heads, seq_q])
  int block_M = 64;            // query rows per tile
  int block_N = 128;           // keys per CTA
  int warps = 8;
  int num_stages = 2;          // Q and dO buffers: 2 loads the next tile's while this one is in use
  bool deterministic = false;  // dQ summed over key blocks in key-block order (a turnstile per query tile)
};

// Timeline regions, in region-id order (KernelSpec::probes lists the same names). Stage = Q/dO buffer, aux = the
// tile's position in the CTA's walk (epilogue: the key block).
#define TL_ATTN_BWD_MMA_PROBES(X) \
  X(load_issue) X(wait_tile) X(dot_do_o) X(qk) X(dp_ds) X(dv_dk) X(dq) X(dq_sync) X(dq_store) X(epilogue)
namespace attn_bwd_probe {
#define TL_ATTN_BWD_PROBE_ID(name) name,
enum : unsigned { TL_ATTN_BWD_MMA_PROBES(TL_ATTN_BWD_PROBE_ID) };
#undef TL_ATTN_BWD_PROBE_ID
}  // namespace attn_bwd_probe

// One GEMM's output tile split over the warps: warps_m x warps_n warp tiles of 32 rows (two m16 tiles) by `cols`
// columns (n8 tiles), warp w at (w % warps_m, w / warps_m). `acc` is the whole block's accumulator: (thread, value)
// -> (row, col) of the tile, value r + 4 (j + n8 i) = accumulator r of m16 tile i, n8 tile j of the thread's warp.
struct AttnBwdWarpTiling {
  int warps_m = 0, warps_n = 0, cols = 0, n8 = 0;
  Fragment acc;
};

TL_HOST_DEVICE constexpr AttnBwdWarpTiling attn_bwd_warp_tiling(int rows, int cols, int warps) {
  AttnBwdWarpTiling t{};
  t.warps_m = rows / 32;
  if (t.warps_m < 1 || rows % 32 != 0 || warps % t.warps_m != 0) return t;
  t.warps_n = warps / t.warps_m;
  if (cols % (16 * t.warps_n) != 0) return t;
  t.cols = cols / t.warps_n;
  t.n8 = t.cols / 8;
  t.acc = repeat(repeat(mma_m16n8k16_c(), 2, t.n8, false, false), t.warps_m, t.warps_n, true);
  return t;
}

// Cooperative copy of a (rows, chunks) tile of 16-byte chunks in panels of 8 chunks (128 bytes of a row): thread t
// moves chunk t % 8 of row t / 8 + i * threads / 8 of every panel, so 8 consecutive threads move one row's 128
// contiguous bytes. (thread, value) -> (row, chunk).
TL_HOST_DEVICE constexpr Fragment attn_bwd_chunk_copy(int rows, int chunks, int threads) {
  const int per_pass = threads / 8;
  if (threads % 8 != 0 || chunks % 8 != 0 || rows % per_pass != 0) return Fragment();
  const Layout thr(make_shape(8, per_pass), make_stride(rows, 1));
  const Layout val(make_shape(rows / per_pass, chunks / 8), make_stride(per_pass, 8 * rows));
  return Fragment(make_layout(thr, val), rows, chunks);
}

// The row sums D = rowsum(dO * O) over a (rows, chunks) tile of 8-element chunks: threads / rows consecutive threads
// share a row, thread t taking chunks t % tpr + tpr * j, so a row's partial sums meet by shuffles within the group.
TL_HOST_DEVICE constexpr Fragment attn_bwd_row_dot(int rows, int chunks, int threads) {
  const int tpr = threads / rows;
  if (tpr < 1 || threads % rows != 0 || chunks % tpr != 0 || 32 % tpr != 0) return Fragment();
  const Layout thr(make_shape(tpr, rows), make_stride(rows, 1));
  return Fragment(make_layout(thr, Layout(chunks / tpr, tpr * rows)), rows, chunks);
}

// The shared-memory tiles, and the GEMMs' operands in them.
enum class AttnBwdTile : int { q, k, v, dout, o, p, ds };
enum class AttnBwdGemm : int { s, dp, dv, dk, dq };

// A GEMM's operands: A (M x K) and B (K x N) each in a tile stored (mn, k) — k contiguous, read with ldmatrix — or
// (k, mn) when `trans` (read with ldmatrix.trans); k16 steps of 16 over `k`.
struct AttnBwdOperands {
  AttnBwdTile a;
  bool a_trans;
  AttnBwdTile b;
  bool b_trans;
  int k16;
};

TL_HOST_DEVICE constexpr AttnBwdOperands attn_bwd_operands(const AttnBwdMmaConfig& c, AttnBwdGemm g) {
  switch (g) {
    case AttnBwdGemm::s: return {AttnBwdTile::q, false, AttnBwdTile::k, false, c.dim_qk / 16};       // Q K^T
    case AttnBwdGemm::dp: return {AttnBwdTile::dout, false, AttnBwdTile::v, false, c.dim_v / 16};   // dO V^T
    case AttnBwdGemm::dv: return {AttnBwdTile::p, true, AttnBwdTile::dout, true, c.block_M / 16};   // P^T dO
    case AttnBwdGemm::dk: return {AttnBwdTile::ds, true, AttnBwdTile::q, true, c.block_M / 16};     // dS^T Q
    case AttnBwdGemm::dq: return {AttnBwdTile::ds, false, AttnBwdTile::k, true, c.block_N / 16};    // dS K
  }
  return {};
}

// The storage (row, col) of an operand's element (mn, k): mn is an A row or a B column.
TL_HOST_DEVICE constexpr TileCoord attn_bwd_stored(bool trans, int mn, int k) {
  return trans ? TileCoord{k, mn} : TileCoord{mn, k};
}

// The plan's objects, each built from the config alone (the kernel evaluates the one it needs at compile time;
// make_plan gathers them all for the host).
TL_HOST_DEVICE constexpr int attn_bwd_threads(const AttnBwdMmaConfig& c) { return 32 * c.warps; }

// Every 16-bit tile: K-major with the 128-byte swizzle (smem_layout(b128): 64-column panels of 8-row atoms, chunk c
// of row r at c ^ (r % 8)), so a cp.async chunk stays whole and the 8 rows one ldmatrix matrix reads (either
// orientation) hit 8 different 16-byte bank groups. P and dS share one (block_M, block_N) layout.
TL_HOST_DEVICE constexpr SwizzledLayout attn_bwd_tile(const AttnBwdMmaConfig& c, AttnBwdTile t) {
  const int rows = t == AttnBwdTile::k || t == AttnBwdTile::v ? c.block_N : c.block_M;
  const int cols = t == AttnBwdTile::q || t == AttnBwdTile::k   ? c.dim_qk
                   : t == AttnBwdTile::p || t == AttnBwdTile::ds ? c.block_N
                                                                 : c.dim_v;
  return smem_layout(SmemSwizzle::b128, 2, rows, cols);
}

// The cp.async copy of a tile (P and dS are written from registers, not copied).
TL_HOST_DEVICE constexpr Fragment attn_bwd_copy(const AttnBwdMmaConfig& c, AttnBwdTile t) {
  const SwizzledLayout l = attn_bwd_tile(c, t);
  return attn_bwd_chunk_copy(l.layout().mode(0).size(), l.layout().mode(1).size() / 8, attn_bwd_threads(c));
}

// The f32 dQ tile the completing CTA converts: 16-byte chunks of 4 floats.
TL_HOST_DEVICE constexpr Fragment attn_bwd_copy_dq(const AttnBwdMmaConfig& c) {
  return attn_bwd_chunk_copy(c.block_M, c.dim_qk / 4, attn_bwd_threads(c));
}

TL_HOST_DEVICE constexpr Fragment attn_bwd_dot(const AttnBwdMmaConfig& c) {
  return attn_bwd_row_dot(c.block_M, c.dim_v / 8, attn_bwd_threads(c));
}

TL_HOST_DEVICE constexpr AttnBwdWarpTiling attn_bwd_tiling(const AttnBwdMmaConfig& c, AttnBwdGemm g) {
  switch (g) {
    case AttnBwdGemm::s:
    case AttnBwdGemm::dp: return attn_bwd_warp_tiling(c.block_M, c.block_N, c.warps);
    case AttnBwdGemm::dv: return attn_bwd_warp_tiling(c.block_N, c.dim_v, c.warps);
    case AttnBwdGemm::dk: return attn_bwd_warp_tiling(c.block_N, c.dim_qk, c.warps);
    case AttnBwdGemm::dq: return attn_bwd_warp_tiling(c.block_M, c.dim_qk, c.warps);
  }
  return {};
}

// ldmatrix.x4 straight into mma.m16n8k16 operand registers: the 8x8 block (row, col) of a 16x16 storage block that
// matrix j must read so that its register j is operand register j (A: a_j; B: b_(j%2) of n8 tile j/2) — where that
// register's two elements lie at lane 0, from tile/atoms.hpp's fragments. In every orientation the ISA hands lane l
// the elements the mma wants from it; the tests check every lane and register.
TL_HOST_DEVICE constexpr TileCoord attn_bwd_ldm_block(bool operand_a, bool trans, int j) {
  const TileCoord e = operand_a ? mma_m16n8k16_a_f16()(0, 2 * j) : mma_m16n8k16_b_f16()(0, 2 * (j % 2));
  const int mn = operand_a ? e.row : e.col + 8 * (j / 2), k = operand_a ? e.col : e.row;
  const TileCoord s = attn_bwd_stored(trans, mn, k);
  return {s.row / 8, s.col / 8};
}

// The storage (row, col) in the 16x16 block that lane l addresses: row l % 8 of matrix l / 8 (ldmatrix_rows), placed
// at that matrix's block.
TL_HOST_DEVICE constexpr TileCoord attn_bwd_ldm_lane(bool operand_a, bool trans, int lane) {
  const TileCoord r = ldmatrix_rows(4)(lane % 8, 0);
  const TileCoord b = attn_bwd_ldm_block(operand_a, trans, lane / 8);
  return {8 * b.row + r.row, 8 * b.col + 8 * r.col};
}

// An operand's ldmatrix address (an element offset in its tile layout L) split in two, so the kernel evaluates L once
// per thread: the lane's part, at the 16x16 block whose mn is mn0 and k is 0, joined (L.join_disjoint: XOR) with the
// constant block part of the block at (16 x, 16 kk) from there. The kernel takes mn0 = the warp tile's origin for A (x = its two m16 tiles) and
// for B (x = its 16-column pairs), unless attn_bwd_b_lane_per_pair; the tests check the split equals L for every
// lane, warp and block of every GEMM.
template <bool OPERAND_A, bool TRANS>
TL_HOST_DEVICE constexpr int attn_bwd_ldm_lane_offset(const SwizzledLayout& L, int mn0, int lane) {
  constexpr TileCoord m0 = attn_bwd_ldm_lane(OPERAND_A, TRANS, 0), m1 = attn_bwd_ldm_lane(OPERAND_A, TRANS, 8),
                      m2 = attn_bwd_ldm_lane(OPERAND_A, TRANS, 16), m3 = attn_bwd_ldm_lane(OPERAND_A, TRANS, 24);
  const int j = lane / 8;
  const TileCoord m = j == 0 ? m0 : j == 1 ? m1 : j == 2 ? m2 : m3;  // row 0 of this lane's matrix
  const TileCoord o = attn_bwd_stored(TRANS, mn0, 0);
  return L(o.row + m.row + lane % 8, o.col + m.col);
}
TL_HOST_DEVICE constexpr int attn_bwd_ldm_block_offset(const SwizzledLayout& L, bool trans, int mn, int k) {
  const TileCoord o = attn_bwd_stored(trans, mn, k);
  return L(o.row, o.col);
}

// Whether GEMM g's B addresses take one lane part per 16-column pair of the warp tile (XOR then adds only the k
// step): when the warp's columns straddle a 64-column panel of the swizzled tile (48-column warp tiles at dim 192),
// where no XOR of a constant reaches the next panel's rows. Otherwise one lane part serves every pair.
TL_HOST_DEVICE constexpr bool attn_bwd_b_lane_per_pair(const AttnBwdMmaConfig& c, AttnBwdGemm g) {
  const int cols = attn_bwd_tiling(c, g).cols;
  return cols > 0 && 64 % cols != 0 && cols % 64 != 0;
}

// The walk of key block kb over a sequence's query tiles. Causal: the first query tile with a row that sees the
// block (rows below kb * block_N - (len_k - len_q) see none of it); otherwise 0.
TL_HOST_DEVICE constexpr int attn_bwd_first_tile(const AttnBwdMmaConfig& c, int kb, int len_q, int len_k) {
  const int first_row = kb * c.block_N - (len_k - len_q);
  return c.causal && first_row > 0 ? first_row / c.block_M : 0;
}
// The key blocks that add to query tile m's dQ: blocks 0 .. n - 1, all of the sequence's or (causal) those up to the
// diagonal of the tile's last row. The deterministic turnstile relies on their being the first n.
TL_HOST_DEVICE constexpr int attn_bwd_tile_key_blocks(const AttnBwdMmaConfig& c, int m, int len_q, int len_k) {
  const int blocks = (len_k + c.block_N - 1) / c.block_N;
  if (!c.causal) return blocks;
  const int last_row = (m + 1) * c.block_M < len_q ? (m + 1) * c.block_M - 1 : len_q - 1;
  const int n = (last_row + len_k - len_q) / c.block_N + 1;
  return n < blocks ? n : blocks;
}

// What kernel and host agree on. Shared memory (dynamic, 128-byte aligned; byte offsets from the aligned base):
//   [K][V][stage 0: Q, dO][stage 1: Q, dO][O][P][dS][D][flag]
// The 16-bit tiles as attn_bwd_tile lays them out; D is f32 per query row; the flag tells the CTA that its dQ tile
// is complete.
struct AttnBwdMmaPlan {
  int threads = 0;
  AttnBwdWarpTiling s;   // S and dP: block_M x block_N
  AttnBwdWarpTiling dk;  // dK: block_N x dim_qk
  AttnBwdWarpTiling dv;  // dV: block_N x dim_v
  AttnBwdWarpTiling dq;  // dQ: block_M x dim_qk
  SwizzledLayout q, k, v, dout, o, p;  // (row, col) -> element offset of Q, K, V, dO, O and of P / dS
  Fragment mma_a, mma_b, mma_c;        // the mma.m16n8k16 operands (tile/atoms.hpp)
  Fragment ldm_rows;                   // ldmatrix.x4: lane -> (row, 16-byte column block) it addresses
  Fragment copy_q, copy_k, copy_v, copy_do;  // cp.async of Q, K, V, dO / O: (thread, value) -> (row, chunk)
  Fragment copy_dq;                    // the f32 dQ tile, 16-byte chunks of 4 floats (the last CTA's store)
  Fragment dot;                        // D = rowsum(dO * O): (thread, value) -> (row, chunk)
  unsigned q_bytes = 0, do_bytes = 0;
  unsigned off_k = 0, off_v = 0, off_stage = 0, stage_bytes = 0, off_o = 0, off_p = 0, off_ds = 0, off_d = 0,
           off_flag = 0;
  unsigned smem_used = 0, smem_bytes = 0;  // smem_bytes: with the alignment slack (what the host asks for)

  TL_HOST_DEVICE constexpr unsigned off_q(int stage) const { return off_stage + stage_bytes * static_cast<unsigned>(stage); }
  TL_HOST_DEVICE constexpr unsigned off_do(int stage) const { return off_q(stage) + q_bytes; }
  TL_HOST_DEVICE constexpr bool ok() const {
    return threads > 0 && s.acc.ok() && dk.acc.ok() && dv.acc.ok() && dq.acc.ok() && q.ok() && k.ok() && v.ok() &&
           p.ok() && copy_q.ok() && copy_k.ok() && copy_v.ok() && copy_do.ok() && copy_dq.ok() && dot.ok();
  }
};

// Alignment of the dynamic shared memory base the kernel rounds up to (bank-conflict-free swizzles need 128 bytes;
// the runtime guarantees 16).
enum : unsigned { kAttnBwdSmemAlign = 128 };

TL_HOST_DEVICE constexpr AttnBwdMmaPlan make_plan(const AttnBwdMmaConfig& c) {
  AttnBwdMmaPlan p{};
  p.threads = attn_bwd_threads(c);
  p.s = attn_bwd_tiling(c, AttnBwdGemm::s);
  p.dk = attn_bwd_tiling(c, AttnBwdGemm::dk);
  p.dv = attn_bwd_tiling(c, AttnBwdGemm::dv);
  p.dq = attn_bwd_tiling(c, AttnBwdGemm::dq);
  p.q = attn_bwd_tile(c, AttnBwdTile::q);
  p.k = attn_bwd_tile(c, AttnBwdTile::k);
  p.v = attn_bwd_tile(c, AttnBwdTile::v);
  p.dout = attn_bwd_tile(c, AttnBwdTile::dout);
  p.o = attn_bwd_tile(c, AttnBwdTile::o);
  p.p = attn_bwd_tile(c, AttnBwdTile::p);
  p.mma_a = mma_m16n8k16_a_f16();
  p.mma_b = mma_m16n8k16_b_f16();
  p.mma_c = mma_m16n8k16_c();
  p.ldm_rows = ldmatrix_rows(4);
  p.copy_q = attn_bwd_copy(c, AttnBwdTile::q);
  p.copy_k = attn_bwd_copy(c, AttnBwdTile::k);
  p.copy_v = attn_bwd_copy(c, AttnBwdTile::v);
  p.copy_do = attn_bwd_copy(c, AttnBwdTile::dout);
  p.copy_dq = attn_bwd_copy_dq(c);
  p.dot = attn_bwd_dot(c);
  const unsigned k_bytes = 2u * static_cast<unsigned>(c.block_N * c.dim_qk);
  const unsigned v_bytes = 2u * static_cast<unsigned>(c.block_N * c.dim_v);
  const unsigned p_bytes = 2u * static_cast<unsigned>(c.block_M * c.block_N);
  p.q_bytes = 2u * static_cast<unsigned>(c.block_M * c.dim_qk);
  p.do_bytes = 2u * static_cast<unsigned>(c.block_M * c.dim_v);
  p.off_k = 0;
  p.off_v = p.off_k + k_bytes;
  p.off_stage = p.off_v + v_bytes;
  p.stage_bytes = p.q_bytes + p.do_bytes;
  p.off_o = p.off_stage + p.stage_bytes * static_cast<unsigned>(c.num_stages);
  p.off_p = p.off_o + p.do_bytes;
  p.off_ds = p.off_p + p_bytes;
  p.off_d = p.off_ds + p_bytes;
  p.off_flag = p.off_d + 4u * static_cast<unsigned>(c.block_M);
  p.smem_used = p.off_flag + 16u;
  p.smem_bytes = p.smem_used + kAttnBwdSmemAlign - 16u;
  return p;
}

#if !TL_DEVICE_CODE

// `tl::attn_bwd_mma<tl::AttnBwdMmaConfig{.dim_qk = 128, ...}>`, every field by its designated initializer.
inline std::string name_expression(const AttnBwdMmaConfig& c) {
  return ConfigName("attn_bwd_mma", "AttnBwdMmaConfig")
      .field("dim_qk", c.dim_qk)
      .field("dim_v", c.dim_v)
      .field("causal", c.causal)
      .field("bf16", c.bf16)
      .field("varlen", c.varlen)
      .field("block_M", c.block_M)
      .field("block_N", c.block_N)
      .field("warps", c.warps)
      .field("num_stages", c.num_stages)
      .field("deterministic", c.deterministic)
      .str();
}

// The probe region names, in region-id order.
inline std::vector<std::string> attn_bwd_mma_probes() {
  return TL_PROBE_NAMES(TL_ATTN_BWD_MMA_PROBES);
}

#endif  // !TL_DEVICE_CODE

}  // namespace tl
