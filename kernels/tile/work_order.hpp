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

}  // namespace tl
