// mla.decode: MLA decoding over a paged KV cache (FlashMLA's dense decode) — split-KV, wgmma, TMA, in-kernel combine.
//
// Per request r (of `batch`) with L = cache_seqlens[r] cached tokens, the R = seq_q * heads query rows (row
// m = s * heads + h: Q is [batch, seq_q, heads, 576], so a request's rows are contiguous) attend to the request's
// tokens, all sharing one KV head (MQA): S = Q K^T / sqrt(576) over the 576-wide rows, O = softmax(S) V with V the
// first 512 columns of the same cache rows. Token j of request r lives in row j % 64 of physical block
// block_table[r * table_stride + j / 64] of the cache [num_blocks, 64, 1, 576]. Causal: query position s sees tokens
// j < L - seq_q + s + 1 (bottom-right aligned). A row that sees no token gets O = 0 and LSE = +inf (FlashMLA's
// convention). Outputs: O [batch, seq_q, heads, 512] 16-bit, LSE float [batch, heads, seq_q] (natural log).
//
// Split-KV: the host runs tl::mla::schedule_split_kv (mla/mla_schedule.hpp) over the requests' 64-token blocks and
// passes each SM part's range in `parts` (5 ints: begin_req, begin_block, end_req, end_block, first_split) and the
// prefix sums of the requests' split counts in `num_splits`. Grid: (num_parts, m_tiles), m_tiles = ceil(R / 64);
// CTA (p, t) computes rows [64t, 64t + 64) of every request in part p's range over the part's blocks. A request
// with one split is written straight to O / LSE. Otherwise the CTA that finishes a (request, tile) last merges the
// splits, O = sum_i exp(lse_i - lse) O_i, lse = log sum exp lse_i, from its own registers and the partials the
// others wrote, normalized O (in the output's 16-bit type) and LSE (f32), to the workspace
// o_acc [total_splits, R, 512] / lse_acc [total_splits, R]. o_acc stays a float* in the signatures although it holds
// 16-bit values: typing it unsigned short* changed the generated PTX (address arithmetic), which this cleanup kept.
// Finishing is counted by an atomic per (request, tile) in `counters`, which must be zero before the launch and is
// reset to zero by the merging CTA; a CTA that finds every other split already counted writes no partial at all.
// The merge folds each other split in with one batch of independent loads (merge_splits): it used to walk rows and
// splits one L2 round trip at a time, about 100 us at the end of every SM part, the fixed cost docs/perf.md measured
// (2026-11-24). VEC_STORE writes partials and outputs as 16-byte vectors (store_row16: a quad transpose by
// shuffles; the pair stores made the partial write and its fence the costliest epilogue, +1.4-2.4% at MB 4096 when
// vectorized). The block start prefetches the TMA descriptors and the first block-table entry. The host's tie_gap
// shortens middle-split parts (mla_schedule.hpp).
//
// Threads: 3 warpgroups. Warpgroup 0 is the producer: lane 0 of its warp 0 issues the TMA loads (each KV block into
// a 2-stage ring, the request's Q tile after its first block), the rest of it idles with 40 registers (setmaxnreg). Consumer warpgroups c = 0, 1 (232 registers), per KV
// block, with QK_WG == 2: c computes S_c = Q K[32c : 32c + 32]^T (64 x 32, wgmma m64n32k16 x 36 from shared memory),
// the two exchange their row maxima through shared memory, each turns its S_c into P (exp2 of the log2(e)-scaled
// scores; running max and sum per row, O rescaled) and writes P_c as 16 bits into the shared P tile; with QK_WG == 1
// consumer 0 computes all of S (m64n64k16 x 36: Q is read once per block, not twice), runs the softmax alone and
// hands consumer 1 the rows' rescale factors. After a barrier of both, consumer c computes
// O_c += P V[:, 256c : 256c + 256] (wgmma m64n256k16 x 4, V read N-major straight from the cache block: the
// transposed-B form). Consumer thread (warp w, lane l) owns rows 16w + l/4 and 16w + l/4 + 8 of the tile (the wgmma
// accumulator layout), O_c's 256 columns as 128 fp32 registers. QK_WG 1 measured fastest on the H100 (docs/perf.md);
// so did leaving out the experiments this kernel no longer has (an L2 prefetch of KV blocks ahead, the next block's
// Q K^T issued behind P V, f32 partials, a deferred split count, a rotated part order, the two-pass merge: see git
// history and docs/perf.md).
//
// Shared memory (dynamic, 1024-aligned): every 64-row x 576-column tile is 9 panels of 64 rows x 64 columns
// (128-byte rows, 8 KiB), TMA SWIZZLE_128B: 16-byte chunk k of row r at chunk k ^ (r % 8).
//   [Q tile 72 KiB][KV stage 0 72 KiB][KV stage 1 72 KiB][P 64 x 64, 8 KiB, same swizzle]
//   [row max (QK_WG 2) / rescale (QK_WG 1) exchange 2 x 64 f32][row sum exchange 2 x 2 x 64 f32]
//   [barriers: full[2], empty[2], q_full, q_empty][flag: the last-split flag, 16 bytes of which 4 are used]
// wgmma descriptors: Q and K are K-major (stride byte offset 1024 = one 8-row atom, k16 step = +32 bytes inside a
// panel, next 64 columns = next panel); V is N-major for P V: leading byte offset 8192 (next 64 columns = next
// panel), stride byte offset 1024 (next 8 tokens), k16 step = 16 tokens = +2048 bytes.
#pragma once

#include "tile/barrier.cuh"
#include "tile/config.hpp"
#include "tile/convert.cuh"
#include "tile/global.cuh"
#include "tile/mbarrier.cuh"
#include "tile/probe.hpp"
#include "tile/reduce.hpp"
#include "tile/setmaxnreg.cuh"
#include "tile/smem.cuh"
#include "tile/tma.cuh"
#include "tile/wgmma_ops.cuh"

namespace tl {
namespace mla_detail {

// Timeline regions, in the order of the spec's `probes`. Stage = KV stage, aux = KV block index (Q: request).
// The producer warp marks its empty-barrier waits and TMA issues; the first warp of each consumer warpgroup marks
// for the warpgroup.
enum MlaProbe : unsigned { kProbeLoadWait, kProbeLoadIssue, kProbeWaitKV, kProbeQK, kProbeSoftmax, kProbePV, kProbeCombine };

// Enumerators rather than constexpr variables: NVRTC would emit namespace-scope constants as device globals.
enum : int { kDQK = 576, kDV = 512, kBlock = 64, kPanels = kDQK / 64 };
enum : unsigned {
  kPanelBytes = 64 * 128,
  kTileBytes = kPanels * kPanelBytes,
  kOffKV = kTileBytes,
  kOffP = 3 * kTileBytes,
  kOffMax = kOffP + kPanelBytes,
  kOffSum = kOffMax + 512,
  kOffBar = kOffSum + 1024,
  kOffFlag = kOffBar + 6 * 8,
  kSmemUsed = kOffFlag + 16,
  kSmemBytes = kSmemUsed + 1024  // with the alignment slack: what the host asks for (mla_decode.cpp)
};

// Keys a row tile of one request needs: all L, or (causal) up to the diagonal of its last query position.
template <bool CAUSAL>
TL_DEVICE_INLINE int tile_kv_end(int L, int seq_q, int heads, int m0, int R) {
  if constexpr (!CAUSAL) return L;
  const int s_last = min(m0 + 63, R - 1) / heads;
  return max(0, min(L, L - seq_q + s_last + 1));
}

// SM part `part`'s requests are [first, last]; range() gives request r's blocks [b0, b1), cut to what row tile m0
// needs (possibly empty: the split then yields O = 0, no keys), and the split's index within the request. Producer
// and consumers walk the same ranges.
struct PartWalk {
  int first, last, parts_end, begin_block, end_block, first_split;
  int count;  // requests in the part (0 for an empty part)
  TL_DEVICE_INLINE PartWalk(const int* __restrict__ parts, int part, int batch) {
    first = parts[5 * part];
    begin_block = parts[5 * part + 1];
    last = min(parts[5 * part + 2], batch - 1);  // the schedule never ends past the batch; cheap insurance
    parts_end = parts[5 * part + 2];
    end_block = parts[5 * part + 3];
    first_split = parts[5 * part + 4];
    count = max(0, last - first + 1);
  }
  template <bool CAUSAL>
  TL_DEVICE_INLINE void range(int r, int L, int seq_q, int heads, int m0, int R, int& b0, int& b1, int& split) const {
    b0 = r == first ? begin_block : 0;
    b1 = r == last && last == parts_end ? end_block : (L + kBlock - 1) / kBlock;
    b1 = max(b0, min(b1, (tile_kv_end<CAUSAL>(L, seq_q, heads, m0, R) + kBlock - 1) / kBlock));
    split = r == first ? first_split : 0;
  }
};

// Issues S = Q K[rows]^T for the NS cache rows starting at k_rows, over the 9 panels of 64 columns, into sacc
// (zeroed first) as one wgmma group.
template <bool BF16, int NS>
TL_DEVICE_INLINE void issue_qk(float* sacc, unsigned q_base, unsigned k_rows) {
#pragma unroll
  for (int i = 0; i < NS / 2; ++i) sacc[i] = 0.f;
  using namespace wgmma_ops;
  wgmma_fence();
#pragma unroll
  for (int p = 0; p < kPanels; ++p)
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) {
      const unsigned long long da = smem_desc_sw128(q_base + p * kPanelBytes + kk * 32, 16, 1024);
      const unsigned long long db = smem_desc_sw128(k_rows + p * kPanelBytes + kk * 32, 16, 1024);
      WgmmaSS<NS, BF16, 0>::run(sacc, da, db);  // both K-major, always accumulating (sacc zeroed above)
    }
  wgmma_commit();
}

// The merge of a split request's 16-bit partials, in the wgmma accumulator layout of the consumer thread that holds
// this split's o (rows rl[0], rl[1] of the tile; columns 256c + 8j + 2(lane % 4) + {0, 1}, j < 32), so the split
// that merges needs neither to publish its own partial nor to read it back. lse / scale are this split's (scale
// turns o into its O); on return o * scale is the merged O and lse the merged LSE (+inf for a row no split saw a key
// of). One round trip per other split: its LSEs and all 64 of its column pairs (2 columns per 4-byte load) are
// loaded in one batch with no dependence between the loads and folded in online (running max m, sum s of
// exp(lse_i - m), O rescaled when m grows), instead of one round trip per row and split (the old combine) or the
// LSEs first and each split's data after (the two-pass merge: +0.0-1.0% at MB 4096 for this one).
template <bool BF16>
TL_DEVICE_INLINE void merge_splits(float* o, float* lse, float* scale, const float* __restrict__ o_acc,
                                   const float* __restrict__ lse_acc, int g0, int nspl, int split, int R, int m0,
                                   const int* rl, int c, int lane) {
  const float kInf = __int_as_float(0x7f800000);
  const unsigned short* acc16 = reinterpret_cast<const unsigned short*>(o_acc);
  int row[2];
  float m[2], s[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    row[h] = min(m0 + rl[h], R - 1);  // rows past R merge a duplicate and are not written
    m[h] = lse[h];
    s[h] = lse[h] > -kInf ? 1.f : 0.f;
#pragma unroll
    for (int j = 0; j < 32; ++j) o[4 * j + 2 * h] *= scale[h], o[4 * j + 2 * h + 1] *= scale[h];
  }
  for (int i = 0; i < nspl; ++i) {
    if (i == split) continue;
    float li[2];
    unsigned v[2][32];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const long long at = static_cast<long long>(g0 + i) * R + row[h];
      li[h] = __ldcg(lse_acc + at);
      const unsigned* src = reinterpret_cast<const unsigned*>(acc16 + at * kDV + c * 256 + 2 * (lane % 4));
#pragma unroll
      for (int j = 0; j < 32; ++j) v[h][j] = __ldcg(src + 4 * j);
    }
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const float mn = fmaxf(m[h], li[h]);
      const float a = m[h] > -kInf ? __expf(m[h] - mn) : 0.f;  // mn finite whenever m is
      const float b = li[h] > -kInf ? __expf(li[h] - mn) : 0.f;
      s[h] = s[h] * a + b;
      m[h] = mn;
#pragma unroll
      for (int j = 0; j < 32; ++j) {
        const float2 f = unpack2<BF16>(v[h][j]);
        o[4 * j + 2 * h] = fmaf(o[4 * j + 2 * h], a, b * f.x);
        o[4 * j + 2 * h + 1] = fmaf(o[4 * j + 2 * h + 1], a, b * f.y);
      }
    }
  }
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    lse[h] = m[h] > -kInf ? m[h] + __logf(s[h]) : kInf;
    scale[h] = m[h] > -kInf ? 1.f / s[h] : 0.f;
  }
}

// One row of a consumer thread's 256 columns as 16 bits (o * scale), into dst (the row's first column of this
// consumer's half; columns 8j + 2(lane % 4) + {0, 1}, j < 32, of the accumulator layout). VEC: the quad's four lanes
// hold the 16 bytes of columns 8j .. 8j + 7 between them; a 4 x 4 transpose by shuffles (two xor stages) leaves
// lane q all of chunk 4g + q, stored as one 16-byte vector: a
// quarter of the store instructions and L2 write requests. Every lane must call it (the shuffles), store or not.
template <bool BF16, bool VEC>
TL_DEVICE_INLINE void store_row16(unsigned short* dst, const float* o, int h, float scale, int lane, bool store) {
  if constexpr (!VEC) {
    if (!store) return;
#pragma unroll
    for (int j = 0; j < 32; ++j)
      *reinterpret_cast<unsigned*>(dst + 8 * j + 2 * (lane % 4)) = pack2<BF16>(o[4 * j + 2 * h] * scale, o[4 * j + 2 * h + 1] * scale);
  } else {
    const int q = lane % 4;
    const bool hi = q & 2, lo = q & 1;
#pragma unroll
    for (int g = 0; g < 8; ++g) {
      unsigned w[4];  // w[t]: this lane's pair of chunk 4g + t; after the transpose lane s's pair of chunk 4g + q
#pragma unroll
      for (int t = 0; t < 4; ++t) {
        const int j = 4 * g + t;
        w[t] = pack2<BF16>(o[4 * j + 2 * h] * scale, o[4 * j + 2 * h + 1] * scale);
      }
      // Butterfly: across lane bit 1 swap the chunk pairs whose bit 1 differs from the lane's, then across bit 0.
      unsigned s0 = hi ? w[0] : w[2], s1 = hi ? w[1] : w[3];
      s0 = __shfl_xor_sync(0xffffffffu, s0, 2);
      s1 = __shfl_xor_sync(0xffffffffu, s1, 2);
      if (hi) w[0] = s0, w[1] = s1;
      else w[2] = s0, w[3] = s1;
      unsigned t0 = lo ? w[0] : w[1], t1 = lo ? w[2] : w[3];
      t0 = __shfl_xor_sync(0xffffffffu, t0, 1);
      t1 = __shfl_xor_sync(0xffffffffu, t1, 1);
      if (lo) w[0] = t0, w[2] = t1;
      else w[1] = t0, w[3] = t1;
      if (store) *reinterpret_cast<uint4*>(dst + 8 * (4 * g + q)) = make_uint4(w[0], w[1], w[2], w[3]);
    }
  }
}

// This split's normalized partial O (o * scale, 16-bit) and LSE into workspace slot g, in the accumulator layout:
// each thread its two rows' 32 column pairs of consumer c's 256 columns.
template <bool BF16, bool VEC>
TL_DEVICE_INLINE void store_partial(const float* o, const float* lse, const float* scale, float* __restrict__ o_acc,
                                    float* __restrict__ lse_acc, int g, int R, int m0, const int* rl, int c, int lane) {
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int row = m0 + rl[h];
    const long long at = (static_cast<long long>(g) * R + min(row, R - 1)) * kDV + c * 256;
    store_row16<BF16, VEC>(reinterpret_cast<unsigned short*>(o_acc) + at, o, h, scale[h], lane, row < R);
    if (row < R && c == 0 && lane % 4 == 0) lse_acc[static_cast<long long>(g) * R + row] = lse[h];
  }
}

// The merged (or only) O of a (request, row tile), o * scale as 16 bits, and its LSE, in the accumulator layout.
template <bool BF16, bool VEC>
TL_DEVICE_INLINE void store_output(const float* o, const float* lse, const float* scale, unsigned short* __restrict__ O,
                                   float* __restrict__ LSE, int r, int R, int m0, int heads, int seq_q, const int* rl, int c,
                                   int lane) {
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int row = m0 + rl[h];
    store_row16<BF16, VEC>(O + (static_cast<long long>(r) * R + min(row, R - 1)) * kDV + c * 256, o, h, scale[h], lane, row < R);
    if (row < R && c == 0 && lane % 4 == 0) LSE[(static_cast<long long>(r) * heads + row % heads) * seq_q + row / heads] = lse[h];
  }
}

// What the consumer warpgroups need of the kernel's arguments and shared-memory layout.
struct ConsumerArgs {
  unsigned base;
  unsigned short* O;
  float* LSE;
  const int* cache_seqlens;
  const int* parts;
  const int* num_splits;
  float* o_acc;
  float* lse_acc;
  int* counters;
  int batch, seq_q, heads;
};

// Consumer warpgroup C (0 or 1, a template parameter so that each warpgroup's code has no warpgroup-divergent
// branches: ptxas serializes every wgmma of a function when it must guard registers on a divergent path).
template <bool CAUSAL, bool BF16, int QK_WG, bool VEC_STORE, int C>
TL_DEVICE_INLINE void mla_consumer(const ConsumerArgs& a) {
  using namespace wgmma_ops;
  const float kInf = __int_as_float(0x7f800000);
  // 1/sqrt(576) = 1/24, times log2(e): scores go straight into exp2.
  constexpr float kScaleLog2 = 1.4426950408889634f / 24.0f;
  const unsigned base = a.base, q_base = base, kv_base = base + kOffKV, p_base = base + kOffP;
  auto full_bar = [&](int s) { return base + kOffBar + 8u * s; };
  auto empty_bar = [&](int s) { return base + kOffBar + 16u + 8u * s; };
  const unsigned q_full = base + kOffBar + 32u, q_empty = base + kOffBar + 40u, flag_addr = base + kOffFlag;
  unsigned short* O = a.O;
  float* LSE = a.LSE;
  const int* cache_seqlens = a.cache_seqlens;
  const int* parts = a.parts;
  const int* num_splits = a.num_splits;
  float* o_acc = a.o_acc;
  float* lse_acc = a.lse_acc;
  int* counters = a.counters;
  const int batch = a.batch, seq_q = a.seq_q, heads = a.heads;
  const int R = seq_q * heads, m0 = blockIdx.y * 64, part = blockIdx.x;
  const int tid = threadIdx.x % 128, warp = tid / 32, lane = tid % 32;
  constexpr int c = C;
  const int ctid = threadIdx.x - 128;  // thread among the 256 consumers
  TL_PROBE_WARP_INIT_IF(warp == 0);
  const int rl[2] = {warp * 16 + lane / 4, warp * 16 + lane / 4 + 8};  // this thread's rows in the tile
  // QK_WG == 2: consumer c computes S for tokens [32c, 32c + 32) and the two exchange row maxima; QK_WG == 1:
  // consumer 0 computes all 64 tokens (Q is read from shared memory once per block instead of twice, which is what
  // bounds Q K^T), runs the softmax alone and hands consumer 1 each row's rescale factor.
  constexpr int NS = QK_WG == 1 ? 64 : 32;  // tokens of S per QK warpgroup
  constexpr bool does_qk = QK_WG == 2 || c == 0;
  const int tok0 = QK_WG == 2 ? 32 * c : 0;
  float o[128];
  float sacc[NS / 2];
  int it = 0, qn = 0;

  const PartWalk walk(parts, part, batch);
  for (int k = 0; k < walk.count; ++k) {
    const int r = walk.first + k;
    const int L = cache_seqlens[r];
    int b0, b1, split;
    walk.range<CAUSAL>(r, L, seq_q, heads, m0, R, b0, b1, split);
    int lim[2];  // keys row h sees: [0, lim)
#pragma unroll
    for (int h = 0; h < 2; ++h) lim[h] = CAUSAL ? max(0, min(L, L - seq_q + (m0 + rl[h]) / heads + 1)) : L;
    float row_m[2] = {-kInf, -kInf}, row_l[2] = {0.f, 0.f};
#pragma unroll
    for (int i = 0; i < 128; ++i) o[i] = 0.f;
    mbar_wait(q_full, qn & 1);

    for (int blk = b0; blk < b1; ++blk, ++it) {
      const int s = it & 1;
      const unsigned kv = kv_base + s * kTileBytes;
      const int valid = L - blk * kBlock;  // tokens of this block in the cache (< 64 only in the last block)
      if (does_qk) {
        TL_PROBE_BEGIN(kProbeWaitKV, s, blk);
        mbar_wait(full_bar(s), (it >> 1) & 1);
        TL_PROBE_END(kProbeWaitKV, s, blk);
        TL_PROBE_BEGIN(kProbeQK, s, blk);
        issue_qk<BF16, NS>(sacc, q_base, kv + tok0 * 128);
      }
      if (does_qk) {
        wgmma_wait<0>();
        // Q is read by Q K^T alone: once the request's last one is complete the producer may load the next
        // request's Q, behind this block's softmax, P V and the epilogue instead of after them.
        if (blk == b1 - 1 && tid == 0) mbar_arrive(q_empty);
        TL_PROBE_END(kProbeQK, s, blk);

        // Mask keys past each row's limit (only the blocks that reach a limit pay for it).
        TL_PROBE_BEGIN(kProbeSoftmax, s, blk);
        const int n0 = blk * kBlock + tok0;
        if (n0 + NS > min(lim[0], lim[1])) {
#pragma unroll
          for (int j = 0; j < NS / 8; ++j)
#pragma unroll
            for (int h = 0; h < 2; ++h)
#pragma unroll
              for (int e = 0; e < 2; ++e)
                if (n0 + 8 * j + 2 * (lane % 4) + e >= lim[h]) sacc[4 * j + 2 * h + e] = -kInf;
        }
        float mx[2];
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          float v = -kInf;
#pragma unroll
          for (int j = 0; j < NS / 8; ++j) v = fmaxf(v, fmaxf(sacc[4 * j + 2 * h], sacc[4 * j + 2 * h + 1]));
          mx[h] = quad_max(v) * kScaleLog2;
        }
        if constexpr (QK_WG == 2) {
          // Row maxima of both halves: through shared memory, one barrier of the 256 consumer threads (which also
          // tells each that the other's P V of the previous block is done with the P tile).
#pragma unroll
          for (int h = 0; h < 2; ++h)
            if (lane % 4 == 0) st_shared_f32(base + kOffMax + (c * 64 + rl[h]) * 4, mx[h]);
          named_barrier_sync(1, 256);
#pragma unroll
          for (int h = 0; h < 2; ++h) mx[h] = fmaxf(mx[h], ld_shared_f32(base + kOffMax + ((1 - c) * 64 + rl[h]) * 4));
        } else {
          if (it > 0) named_barrier_sync(3, 256);  // consumer 1's P V of the previous block is done with the P tile
        }
        float m_use[2], alpha[2], sum[2] = {0.f, 0.f};
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const float m_new = fmaxf(row_m[h], mx[h]);
          // A row with every key masked so far keeps m = -inf; subtract 0 then so exp2 gives 0, not NaN.
          m_use[h] = m_new == -kInf ? 0.f : m_new;
          alpha[h] = exp2_approx(row_m[h] - m_use[h]);
          row_m[h] = m_new;
          if (QK_WG == 1 && lane % 4 == 0) st_shared_f32(base + kOffMax + ((it & 1) * 64 + rl[h]) * 4, alpha[h]);
        }
        // P = exp2(S scale - m) as 16 bits into the P tile: row r, tokens tok0 + 8j + 2(lane % 4) + {0, 1}, i.e.
        // chunk tok0 / 8 + j of the 128-byte row, swizzled.
#pragma unroll
        for (int j = 0; j < NS / 8; ++j)
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const float e0 = exp2_approx(fmaf(sacc[4 * j + 2 * h], kScaleLog2, -m_use[h]));
            const float e1 = exp2_approx(fmaf(sacc[4 * j + 2 * h + 1], kScaleLog2, -m_use[h]));
            sum[h] += e0 + e1;
            const unsigned addr = p_base + rl[h] * 128 + (((tok0 / 8 + j) ^ (rl[h] & 7)) << 4) + 4 * (lane % 4);
            st_shared_b32(addr, pack2<BF16>(e0, e1));
          }
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          row_l[h] = row_l[h] * alpha[h] + sum[h];  // per-thread partial; quad and halves are summed at the end
#pragma unroll
          for (int j = 0; j < 32; ++j) o[4 * j + 2 * h] *= alpha[h], o[4 * j + 2 * h + 1] *= alpha[h];
        }
        // Tokens past L in the request's last block may hold anything (NaN in FlashMLA's tests): P is 0 there, but
        // 0 * NaN is NaN, so each warpgroup zeroes those rows of its V columns (panels 4c .. 4c + 3) once every
        // Q K^T read of the stage is complete (here: this warpgroup's, and with QK_WG == 2 barrier 1 for the other's).
        if (valid < kBlock) {
          for (int i = tid; i < (kBlock - valid) * 32; i += 128) {
            const unsigned addr = kv + (4 * c + (i / 8) % 4) * kPanelBytes + (valid + i / 32) * 128 + (i % 8) * 16;
            st_shared_v4_fill(addr, 0u);
          }
        }
        fence_proxy_async_smem();  // generic-proxy writes (P, zeroed rows) visible to wgmma
        named_barrier_sync(2, 256);
        TL_PROBE_END(kProbeSoftmax, s, blk);
      } else {
        // QK_WG == 1, consumer 1: wait for P and the rescale factors, rescale O, zero its V tail rows (consumer 0's
        // Q K^T of this block is complete: it waited before the softmax).
        TL_PROBE_BEGIN(kProbeSoftmax, s, blk);
        named_barrier_sync(2, 256);
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const float alpha = ld_shared_f32(base + kOffMax + ((it & 1) * 64 + rl[h]) * 4);
#pragma unroll
          for (int j = 0; j < 32; ++j) o[4 * j + 2 * h] *= alpha, o[4 * j + 2 * h + 1] *= alpha;
        }
        mbar_wait(full_bar(s), (it >> 1) & 1);  // long complete; makes the TMA writes visible to this warpgroup too
        if (valid < kBlock) {
          for (int i = tid; i < (kBlock - valid) * 32; i += 128) {
            const unsigned addr = kv + (4 * c + (i / 8) % 4) * kPanelBytes + (valid + i / 32) * 128 + (i % 8) * 16;
            st_shared_v4_fill(addr, 0u);
          }
          fence_proxy_async_smem();
          named_barrier_sync(4, 128);
        }
        TL_PROBE_END(kProbeSoftmax, s, blk);
      }

      // O_c += P V[:, 256c : 256c + 256]: 4 k16 steps of 16 tokens.
      TL_PROBE_BEGIN(kProbePV, s, blk);
      wgmma_fence();
#pragma unroll
      for (int kk = 0; kk < 4; ++kk)
        WgmmaSS<256, BF16, 1>::run(o, smem_desc_sw128(p_base + kk * 32, 16, 1024),  // V N-major
                                   smem_desc_sw128(kv + 4 * c * kPanelBytes + kk * 16 * 128, kPanelBytes, 1024));
      wgmma_commit();
      wgmma_wait<0>();
      if (QK_WG == 1 && c == 1) named_barrier_arrive(3, 256);  // this P V is done with the P tile
      if (tid == 0) mbar_arrive(empty_bar(s));
      TL_PROBE_END(kProbePV, s, blk);
    }
    if (tid == 0 && (b0 == b1 || !does_qk)) mbar_arrive(q_empty);  // those that did no Q K^T of this request

    // Row sums: the quad's lanes, then the two halves (a buffer per request parity, so a fast warpgroup cannot
    // overwrite what the other has yet to read). With QK_WG == 1 consumer 0 alone holds the softmax state: it hands
    // consumer 1 the sums and the row maxima (the merge of a split request needs this split's LSE in both).
    const unsigned sum_buf = base + kOffSum + (qn & 1) * 512;
    float l_tot[2];
    if constexpr (QK_WG == 2) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        l_tot[h] = quad_sum(row_l[h]);
        if (lane % 4 == 0) st_shared_f32(sum_buf + (c * 64 + rl[h]) * 4, l_tot[h]);
      }
      named_barrier_sync(1, 256);
#pragma unroll
      for (int h = 0; h < 2; ++h) l_tot[h] += ld_shared_f32(sum_buf + ((1 - c) * 64 + rl[h]) * 4);
    } else {
      if constexpr (c == 0) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          l_tot[h] = quad_sum(row_l[h]);
          if (lane % 4 == 0) {
            st_shared_f32(sum_buf + rl[h] * 4, l_tot[h]);
            st_shared_f32(sum_buf + (64 + rl[h]) * 4, row_m[h]);
          }
        }
      }
      named_barrier_sync(1, 256);
      if constexpr (c == 1) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          l_tot[h] = ld_shared_f32(sum_buf + rl[h] * 4);
          row_m[h] = ld_shared_f32(sum_buf + (64 + rl[h]) * 4);
        }
      }
    }
    ++qn;

    const int nspl = num_splits[r + 1] - num_splits[r];
    const int g0 = num_splits[r];
    TL_PROBE_BEGIN(kProbeCombine, probe::kNoStage, r);
    // This split's LSE per row and the factor that turns o into its O (1 / row sum).
    float lse[2], scale[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const bool empty = !(l_tot[h] > 0.f);
      scale[h] = empty ? 0.f : 1.f / l_tot[h];
      lse[h] = empty ? (nspl == 1 ? kInf : -kInf) : (row_m[h] + __log2f(l_tot[h])) * 0.6931471805599453f;
    }
    bool write_out = nspl == 1;
    if (nspl > 1) {
      // The split of this (request, tile) that finishes last merges them all, from its own registers and the
      // others' partials. A split first looks at the counter: when every other split has already published
      // (count nspl - 1) it is the last and publishes nothing; otherwise it writes its partial, counts itself, and
      // the one whose increment completes the count merges. Either way the counter ends at zero for the next launch.
      int* counter = counters + static_cast<long long>(r) * gridDim.y + blockIdx.y;
      if (ctid == 0) {
        const int seen = ld_acquire_gpu(counter);
        st_shared_b32(flag_addr, seen == nspl - 1 ? 1u : 0u);
      }
      named_barrier_sync(1, 256);
      unsigned last = ld_shared_b32(flag_addr);
      const bool wrote = !last;
      if (!last) {
        store_partial<BF16, VEC_STORE>(o, lse, scale, o_acc, lse_acc, g0 + split, R, m0, rl, c, lane);
        __threadfence();
        named_barrier_sync(1, 256);  // every thread's partial is out before the count says so
        if (ctid == 0) {
          const int done = atomicAdd(counter, 1);
          st_shared_b32(flag_addr, done == nspl - 1 ? 1u : 0u);
        }
        named_barrier_sync(1, 256);
        last = ld_shared_b32(flag_addr);
      }
      if (last) {
        // When the first look found the set complete, ctid 0's ld.acquire and barrier 1 already order the others'
        // partials before these loads (acquire, then a CTA barrier: CUTLASS's semaphore pattern); only the relaxed
        // atomicAdd path needs the fence.
        if (wrote) __threadfence();
        merge_splits<BF16>(o, lse, scale, o_acc, lse_acc, g0, nspl, split, R, m0, rl, c, lane);
        if (ctid == 0) *counter = 0;  // ready for the next launch
        write_out = true;
      }
    }
    if (write_out) store_output<BF16, VEC_STORE>(o, lse, scale, O, LSE, r, R, m0, heads, seq_q, rl, c, lane);
    TL_PROBE_END(kProbeCombine, probe::kNoStage, r);
  }
  // QK_WG == 1: consume consumer 1's last barrier-3 arrival, so every arrive has its sync.
  if (QK_WG == 1 && c == 0 && it > 0) named_barrier_sync(3, 256);
  TL_PROBE_FLUSH();
  if (c == 0 && tid == 0) TL_PROBE_BLOCK_END();
}

}  // namespace mla_detail

template <bool CAUSAL, bool BF16, int QK_WG, bool VEC_STORE>
__global__ void __launch_bounds__(384, 1)
    mla_decode(const __grid_constant__ TmaDescriptor tma_q, const __grid_constant__ TmaDescriptor tma_kv,
               unsigned short* __restrict__ O, float* __restrict__ LSE, const int* __restrict__ cache_seqlens,
               const int* __restrict__ block_table, const int* __restrict__ parts, const int* __restrict__ num_splits,
               float* __restrict__ o_acc, float* __restrict__ lse_acc, int* __restrict__ counters, int batch, int seq_q,
               int heads, int table_stride) {
  using namespace mla_detail;
  const float kInf = __int_as_float(0x7f800000);
  static_assert(kSmemBytes == 232000, "mla_decode.cpp's mla_detail_smem() must match");
  // 1/sqrt(576) = 1/24, times log2(e): scores go straight into exp2.
  constexpr float kScaleLog2 = 1.4426950408889634f / 24.0f;

  extern __shared__ unsigned char smem_raw[];
  const unsigned base = smem_align<1024>(smem_raw);
  const unsigned q_base = base, kv_base = base + kOffKV, p_base = base + kOffP;
  auto full_bar = [&](int s) { return base + kOffBar + 8u * s; };
  auto empty_bar = [&](int s) { return base + kOffBar + 16u + 8u * s; };
  const unsigned q_full = base + kOffBar + 32u, q_empty = base + kOffBar + 40u, flag_addr = base + kOffFlag;

  const int R = seq_q * heads, m0 = blockIdx.y * 64, part = blockIdx.x;
  const int wg = threadIdx.x / 128, tid = threadIdx.x % 128, warp = tid / 32, lane = tid % 32;
  if (threadIdx.x == 0) {
    // Fetch both TMA descriptors into the descriptor cache now, so the first Q and KV loads (after the schedule
    // reads) do not wait for them; the producer also prefetches the part's first block-table entry beside the
    // request's length instead of reading it after (one dependent global round trip less before the first TMA).
    // Alone measured neutral (-0.2..+0.4% at MB 4096), part of the measured default set (docs/perf.md, mla4).
    prefetch_tensormap(&tma_kv);
    prefetch_tensormap(&tma_q);
    for (int s = 0; s < 2; ++s) {
      mbar_init(full_bar(s), 1);
      mbar_init(empty_bar(s), 2);
    }
    mbar_init(q_full, 1);
    mbar_init(q_empty, 2);
    fence_mbarrier_init();
    TL_PROBE_BLOCK_BEGIN();
  }
  __syncthreads();

  if (wg == 0) {
    // Producer: one lane issues, the warp waits (the probe marks are warp-collective).
    setmaxnreg_dec<40>();
    if (warp == 0) {
      TL_PROBE_WARP_INIT();
      int it = 0, qn = 0;
      const PartWalk walk(parts, part, batch);
      // The first block's entry into L1 beside the request's length (a prefetch holds no register of the 40; a part
      // never begins at the end of a request, so the entry is in the row).
      if (walk.count > 0 && lane == 0) {
        const int* at = block_table + static_cast<long long>(walk.first) * table_stride + walk.begin_block;
        prefetch_l1(at);
      }
      for (int k = 0; k < walk.count; ++k) {
        const int r = walk.first + k;
        int b0, b1, split;
        walk.range<CAUSAL>(r, cache_seqlens[r], seq_q, heads, m0, R, b0, b1, split);
        const int* row_table = block_table + static_cast<long long>(r) * table_stride;
        // Q waits for both consumers to be done with the previous request's Q; it is issued after this request's
        // first KV block, so that block's load overlaps the wait.
        auto load_q = [&] {
          if (qn > 0) mbar_wait(q_empty, (qn - 1) & 1);
          if (lane == 0) {
            mbar_expect_tx(q_full, kTileBytes);
#pragma unroll
            for (int p = 0; p < kPanels; ++p) tma_load(q_base + p * kPanelBytes, &tma_q, q_full, p * 64, r * R + m0);
          }
          ++qn;
        };
        if (b0 == b1) load_q();
        for (int blk = b0; blk < b1; ++blk, ++it) {
          const int s = it & 1;
          TL_PROBE_BEGIN(kProbeLoadWait, s, blk);
          mbar_wait(empty_bar(s), ((it >> 1) & 1) ^ 1);
          TL_PROBE_END(kProbeLoadWait, s, blk);
          TL_PROBE_BEGIN(kProbeLoadIssue, s, blk);
          if (lane == 0) {
            mbar_expect_tx(full_bar(s), kTileBytes);
            const int phys = __ldg(row_table + blk);
#pragma unroll
            for (int p = 0; p < kPanels; ++p)
              tma_load(kv_base + s * kTileBytes + p * kPanelBytes, &tma_kv, full_bar(s), p * 64, phys * kBlock);
          }
          __syncwarp();
          TL_PROBE_END(kProbeLoadIssue, s, blk);
          if (blk == b0) load_q();
        }
        // The part's last request is usually split (the part ends inside it) and its other splits, computed at the
        // start of the next part, are usually done by now: then this CTA will merge them (the consumers' epilogue),
        // so their partials go to L2 while the last blocks compute, and the merge's loads hit L2 instead of HBM.
        if (k == walk.count - 1 && b1 > b0 && lane == 0) {
          const int nspl = num_splits[r + 1] - num_splits[r];
          if (nspl > 1) {
            const int* counter = counters + static_cast<long long>(r) * gridDim.y + blockIdx.y;
            const int seen = ld_relaxed_gpu(counter);
            if (seen == nspl - 1) {
              const int rows = min(64, R - m0);
              for (int i = 0; i < nspl; ++i) {
                if (i == split) continue;
                const long long at = static_cast<long long>(num_splits[r] + i) * R + m0;
                bulk_prefetch_l2(reinterpret_cast<const char*>(o_acc) + at * kDV * 2, rows * kDV * 2);
                prefetch_l2(lse_acc + at);
                prefetch_l2(lse_acc + at + rows - 1);
              }
            }
          }
        }
      }
      TL_PROBE_FLUSH();
    }
    return;
  }

  setmaxnreg_inc<232>();
  const ConsumerArgs args{base, O, LSE, cache_seqlens, parts, num_splits, o_acc, lse_acc, counters, batch, seq_q, heads};
  if (wg == 1) mla_consumer<CAUSAL, BF16, QK_WG, VEC_STORE, 0>(args);
  else mla_consumer<CAUSAL, BF16, QK_WG, VEC_STORE, 1>(args);
}

}  // namespace tl
