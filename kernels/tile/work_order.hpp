// Orders in which a persistent kernel's CTAs walk (row block, pair) work tiles: host and device, so the order a
// kernel uses is the one the tests check and the scheduler models compute.
//
// A grid of G CTAs takes work tiles t = i, i + G, i + 2G, ... (static striding). The tiles are row blocks (query
// blocks of attention) of `pairs` independent problems (sequence x head), `m_blocks` per pair, where block index 0
// is the heaviest (attention with a causal mask: the last query block sees the most keys).
//   m_fastest:  the m_blocks of one pair are consecutive (t = pair * m_blocks + m). CTAs running together share one
//               pair's inputs (K and V) in L2, but with unequal blocks each CTA's sum of work differs: with striding,
//               CTA i meets the same few block indices again and again (i + kG mod m_blocks).
//   sections:   pairs are grouped `section` at a time; inside a group the tiles go heaviest block first across its
//               pairs (t = group * section * m_blocks + m * section + pair_in_group), so every round of G tiles
//               has nearly equal work for all CTAs (longest-processing-time first), while the CTAs running together
//               stay within `section` pairs (whose K and V should fit in L2).
//               A GEMM's grouped ("panel") raster is the same order: the panel's tile rows (or columns) are the
//               pairs, the tiles along the other dimension the m_blocks.
// GEMM cluster pairs: with 2-CTA clusters the work tiles are cluster tiles (two output tiles side by side along M or
// N); both CTAs of a cluster walk the same cluster tiles, rank r taking output tile r of each (gemm_cluster_tile).
#pragma once

#include "tile/config.hpp"

#if !TL_DEVICE_CODE
#include <cstddef>
#include <vector>
#endif

namespace tl {

struct WorkCoord {
  int m;     // row block, 0 = heaviest
  int pair;  // which (sequence, head)
};

TL_HOST_DEVICE inline WorkCoord work_m_fastest(int t, int m_blocks) { return {t % m_blocks, t / m_blocks}; }

// Bijective on [0, m_blocks * pairs) for any section >= 1 (the last group may hold fewer pairs).
TL_HOST_DEVICE inline WorkCoord work_sections(int t, int m_blocks, int pairs, int section) {
  const int per_group = section * m_blocks;
  const int group = t / per_group, r = t % per_group;
  const int left = pairs - group * section;
  const int in_group = left < section ? left : section;
  return {r / in_group, group * section + r % in_group};
}

#if !TL_DEVICE_CODE
// A model of the static striding's balance (host only): the busiest CTA's work over the mean when `grid` CTAs take
// work tiles t, t + grid, ... of m_blocks x pairs in section order (section 0: work_m_fastest) and the tile of row
// block m (0 = heaviest) costs cost(m). It leaves out the CTAs' drift against each other, so it ranks orders whose
// busiest CTA differs by whole tiles, not by a few percent.
template <class Cost>
double work_imbalance(int m_blocks, int pairs, int section, int grid, Cost cost) {
  std::vector<double> load(static_cast<std::size_t>(grid > 0 ? grid : 1), 0.0);
  for (int t = 0; t < m_blocks * pairs; ++t) {
    const WorkCoord w = section > 0 ? work_sections(t, m_blocks, pairs, section) : work_m_fastest(t, m_blocks);
    load[static_cast<std::size_t>(t) % load.size()] += cost(w.m);
  }
  double sum = 0, most = 0;
  for (double l : load) sum += l, most = l > most ? l : most;
  return sum > 0 ? most * static_cast<double>(load.size()) / sum : 1.0;
}
#endif

// Output tile (m, n) of a GEMM's t-th work tile in grouped raster order: panels of `panel` tile rows walked column
// by column (raster_n false: the CTAs in flight share A's row blocks), or of `panel` tile columns walked row by row
// (raster_n: they share B's column blocks).
struct GemmTile {
  int m, n;
};
TL_HOST_DEVICE inline GemmTile gemm_raster_tile(int t, int tiles_m, int tiles_n, int panel, bool raster_n) {
  if (raster_n) {
    const WorkCoord w = work_sections(t, tiles_m, tiles_n, panel);
    return {w.m, w.pair};
  }
  const WorkCoord w = work_sections(t, tiles_n, tiles_m, panel);
  return {w.pair, w.m};
}

// Work tiles of a GEMM with clusters of cluster_m x cluster_n CTAs (1x1, 2x1 or 1x2).
TL_HOST_DEVICE inline int gemm_cluster_tiles(int tiles_m, int tiles_n, int cluster_m, int cluster_n) {
  return ((tiles_m + cluster_m - 1) / cluster_m) * ((tiles_n + cluster_n - 1) / cluster_n);
}
// Output tile of CTA `rank` of a cluster for the t-th cluster tile (raster order over the grid of cluster tiles).
// With an odd tile count along the cluster's direction, rank 1's tile of the last cluster tiles lies past the matrix
// (m >= tiles_m or n >= tiles_n): the caller skips its output, every tile inside is handed out exactly once.
TL_HOST_DEVICE inline GemmTile gemm_cluster_tile(int t, int tiles_m, int tiles_n, int panel, bool raster_n,
                                                  int cluster_m, int cluster_n, int rank) {
  const GemmTile c = gemm_raster_tile(t, (tiles_m + cluster_m - 1) / cluster_m, (tiles_n + cluster_n - 1) / cluster_n,
                                       panel, raster_n);
  return {c.m * cluster_m + (cluster_m > 1 ? rank : 0), c.n * cluster_n + (cluster_n > 1 ? rank : 0)};
}

// Stream-K for the last partial wave of a persistent GEMM (gemm.wgmma schedule=stream_k). A grid of G CTAs over T
// tiles of k_steps k-steps each runs whole tiles in full waves (CTA b: tiles b, b + G, ..., in step with the others
// as data-parallel runs them); the last split_tiles tiles ("split tiles", the last in the raster order) are cut along
// K instead and shared by split_ctas CTAs: their k-steps, laid end to end tile after tile, are cut into split_ctas
// equal contiguous ranges, CTA b taking range b after its whole tiles.
//   T > G: the split tiles are the last partial wave and the full wave before it (the stream-K paper's "two-tile
//     stream-K + data-parallel"), over all G CTAs: a range is 1 to 2 tiles long, so no tile holds two range ends: a
//     tile is whole in one range, or the tail of one range and the head of the next. (With only the partial wave
//     split, a range is shorter than a tile and cuts a tile into three or more pieces: a middle piece as long as the
//     range ends with it, and its tile's finisher waits for it and adds two partials: 4-9 us of fix-up where one
//     partial costs about 3, on an H100 at 3000 x 5000 x 4096.)
//   T < G: the T tiles over up to G CTAs, `pieces` a tile (below).
// A CTA walks its range from its end: the head of the later tile first, then a whole tile if the range holds one,
// then the tail. Every CTA starts its head at k-step 0 and its tail where the ranges' common length puts it, so the
// heads and the tails of the split stream the same k-slices of A and B at the same time, as the full waves do (walked
// in range order, each CTA at its own k offset, the split read A and B from HBM again: 2-3x its MMA time at 8192^3 on
// an H200). A whole tile inside a range is loaded from the k-step its time puts it at (GemmStreamKWalk). The piece
// that holds a tile's last k-step is its finisher; one that adds partials is the last piece its CTA walks, and the
// tile's other pieces (the head, a middle part) are the first piece of earlier CTAs. Each of those writes its f32
// partial tile to its CTA's workspace slot and raises its flag; the finisher adds them to its own accumulator in CTA
// order, nearest first (a fixed order: deterministic results), and stores the tile. Split before the whole tiles, the
// CTAs would also enter the full waves out of step.
struct GemmStreamK {
  int tiles = 0, k_steps = 1, ctas = 1;
  int split_tiles = 0;  // the last split_tiles work tiles are split along K (0: data-parallel)
  int split_ctas = 0;   // CTAs [0, split_ctas) share them

  TL_HOST_DEVICE int whole_tiles() const { return tiles - split_tiles; }
  TL_HOST_DEVICE int split_steps() const { return split_tiles * k_steps; }
  // The first k-step of CTA b's range, in the split tiles' joint k-step index (ranges end where the next begins;
  // CTAs from split_ctas on have none). The product is 64-bit: up to 2 G tiles of 2^14 k-steps (K <= 2^20) times b.
  TL_HOST_DEVICE int begin(int b) const {
    return b >= split_ctas ? split_steps() : static_cast<int>(static_cast<long long>(split_steps()) * b / split_ctas);
  }
};

// What a partial tile costs against a k-step of the tile's MMA: writing one, or waiting for one and adding it, took
// about 3 us each on an H100 (the split's epilogues at 3000 x 5000 x 4096 against data-parallel's 1 us), where a
// 128 x 256 x 64 k-step is about 0.65 us: 5 k-steps each.
// (Enums: NVRTC would emit a constexpr variable as a device global.)
enum : int { kStreamKPartialSteps = 5 };

// What the split costs a CTA in all, in k-steps: its partials, and k-steps that run slower than in the full waves.
// Measured on an H100 with the whole tiles rotated (docs/perf.md, 2026-11-26, gemm_tune_device.sh): the k-steps the
// split saves against data-parallel minus the time it gained, at data-parallel's time per k-step, were (two runs)
// 9-10, 14, 17-21, 30-37, 35-38, 33-35 and 38-39 at tiles of 8 (4096^2 x 512), 16 (8192^2 x 1024), 64 (4096^3,
// 3000 x 5000 x 4096), 96 (6144^3) and 128 k-steps (2048 x 8192^2, 8192^3): about 6 + k_steps / 4, within 4 k-steps
// at 8192^3 (the one shape where the split pays) and the short tiles, 15 at most (16384^2 x 4096 left out: cuBLAS
// itself moved 5% between its runs).
TL_HOST_DEVICE constexpr int gemm_stream_k_split_cost(int k_steps) { return 6 + k_steps / 4; }

// Whether splitting pays for T tiles of k_steps k-steps on G CTAs (T > G, T not a multiple of G): the split saves
// every CTA (1 - (T mod G) / G) tiles of k-steps against data-parallel's last two waves and costs it
// gemm_stream_k_split_cost; what is left has to be more than 1% of the CTA's k-steps (the run-to-run spread of the
// measurements). Of the issue-21 shapes only 8192^3 passes (62 k-steps saved of 2048, 38 spent: 1.2% left).
// schedule=auto splits only then; the kernel decides it again from its own grid.
TL_HOST_DEVICE inline bool gemm_stream_k_pays(int tiles, int k_steps, int ctas) {
  if (ctas < 1 || tiles <= ctas || tiles % ctas == 0) return false;
  const long long saved = static_cast<long long>(ctas - tiles % ctas) * k_steps;  // x G
  const long long steps = static_cast<long long>((tiles + ctas - 1) / ctas) * k_steps * ctas;  // x G
  return 100 * (saved - static_cast<long long>(gemm_stream_k_split_cost(k_steps)) * ctas) > steps;
}

// The split for T tiles of k_steps k-steps on G CTAs. T > G: the last partial wave and one full wave over all G CTAs.
// T < G: each tile cut into `pieces` (2 up to k_steps and G / T): a piece of k_steps / pieces k-steps, and a
// finisher that reads pieces - 1 partials, cost about k_steps / pieces + kStreamKPartialSteps * (pieces - 1); the
// cheapest count is taken. `only_if_it_pays` (schedule=auto): no split where gemm_stream_k_pays says no.
TL_HOST_DEVICE inline GemmStreamK gemm_stream_k(int tiles, int k_steps, int ctas, bool only_if_it_pays = false) {
  GemmStreamK s;
  s.tiles = tiles;
  s.k_steps = k_steps < 1 ? 1 : k_steps;
  s.ctas = ctas < 1 ? 1 : ctas;
  const int rest = tiles % s.ctas;
  if (rest == 0 || s.k_steps < 2 || (only_if_it_pays && !gemm_stream_k_pays(tiles, s.k_steps, s.ctas))) return s;
  if (tiles > s.ctas) {
    s.split_tiles = rest + s.ctas;
    s.split_ctas = s.ctas;
    return s;
  }
  int most = s.ctas / rest;
  if (most > s.k_steps) most = s.k_steps;
  if (most < 2) most = 2;
  int pieces = 2, best = 0;
  for (int n = 2; n <= most; ++n) {
    const int cost = (s.k_steps + n - 1) / n + kStreamKPartialSteps * (n - 1);
    if (n == 2 || cost < best) pieces = n, best = cost;
  }
  s.split_tiles = rest;
  s.split_ctas = rest * pieces < s.ctas ? rest * pieces : s.ctas;
  return s;
}

// One piece of work: k-steps [k0, k1) of work tile `tile`, walked from k_first up and then from k0 (the loads' order;
// the k-steps of a piece are summed in any order).
struct GemmWorkPiece {
  int tile = 0, k0 = 0, k1 = 0, k_first = 0;
};

// The split pieces CTA b walks after its whole tiles (b, b + G, ... below whole_tiles()), in order: its range of the
// split tiles from its end (the head of the later tile first, then a whole tile or the tail of the earlier one). A
// whole tile inside the range is walked from the k-step its time in the range puts it at (the head's length), so it
// reads the k-slices the other CTAs' heads read at the same time: walked from k-step 0, the CTAs' whole tiles were as
// many k offsets apart as their heads' lengths differ, and the split read A and B from HBM again (2048 x 8192 x 8192
// on an H100: 0.447 ms from k-step 0, 0.349 rotated, data-parallel 0.337).
struct GemmStreamKWalk {
  int at = 0, end = 0;  // what is left of its range
  int walked = 0;       // k-steps of the range walked so far

  TL_HOST_DEVICE GemmStreamKWalk(const GemmStreamK& s, int b) : at(s.begin(b)), end(s.begin(b + 1)) {}
  TL_HOST_DEVICE bool next(const GemmStreamK& s, GemmWorkPiece& w) {
    if (at >= end) return false;
    const int tile = (end - 1) / s.k_steps, first = tile * s.k_steps;
    w.tile = s.whole_tiles() + tile;
    w.k0 = at > first ? at - first : 0;
    w.k1 = end - first;
    w.k_first = w.k0 == 0 && w.k1 == s.k_steps ? walked % s.k_steps : w.k0;
    walked += w.k1 - w.k0;
    end = first + w.k0;
    return true;
  }
};

// Whether CTA q holds a piece of split work tile `tile` before the finisher's (the piece with its last k-step, on a
// CTA after q): the finisher adds the partials of q = its CTA - 1, - 2, ... while this holds.
TL_HOST_DEVICE inline bool gemm_stream_k_contributor(const GemmStreamK& s, int tile, int q) {
  return q >= 0 && s.begin(q + 1) > (tile - s.whole_tiles()) * s.k_steps && s.begin(q) < s.begin(q + 1);
}

}  // namespace tl
