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

}  // namespace tl
