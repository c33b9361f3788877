// The split-KV schedule of MLA decoding (kernels/mla/mla_schedule.hpp): every KV block of every request is computed
// exactly once, in order, no SM part costs more than the payload, and the split counts agree with the parts.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <vector>

#include "mla/mla_schedule.hpp"

namespace tl::mla {
namespace {

struct Result {
  std::vector<PartRange> parts;
  std::vector<int> num_splits;
  int payload = 0;
};

Result schedule(const std::vector<int>& seqlens, int parts, int block_n = 64, int overhead = 5, int tie_gap = 0,
                int merge_blocks = 0) {
  Result r;
  r.parts.resize(static_cast<std::size_t>(parts));
  r.num_splits.resize(seqlens.size() + 1);
  r.payload = schedule_split_kv(seqlens.data(), static_cast<int>(seqlens.size()), block_n, overhead, parts,
                                r.parts.data(), r.num_splits.data(), tie_gap, merge_blocks);
  return r;
}

// Walks the parts as a kernel would: each part's requests, each with its block range; checks coverage, order,
// split numbering and the cost bound.
void check(const std::vector<int>& seqlens, int parts, int block_n = 64, int overhead = 5, int tie_gap = 0,
           int merge_blocks = 0) {
  SCOPED_TRACE("batch " + std::to_string(seqlens.size()) + ", " + std::to_string(parts) + " parts, tie_gap " +
               std::to_string(tie_gap));
  const Result r = schedule(seqlens, parts, block_n, overhead, tie_gap, merge_blocks);
  const int batch = static_cast<int>(seqlens.size());
  std::vector<int> next_block(seqlens.size(), 0), splits_seen(seqlens.size(), 0);
  for (int p = 0; p < parts; ++p) {
    const PartRange& part = r.parts[static_cast<std::size_t>(p)];
    int cost = 0;
    for (int q = part.begin_req; q <= part.end_req && q < batch; ++q) {
      const int blocks = kv_blocks(seqlens[static_cast<std::size_t>(q)], block_n);
      const int b0 = q == part.begin_req ? part.begin_block : 0;
      const int b1 = q == part.end_req ? part.end_block : blocks;
      ASSERT_EQ(b0, next_block[static_cast<std::size_t>(q)]) << "part " << p << " request " << q << " starts out of order";
      ASSERT_LE(b1, blocks);
      ASSERT_TRUE(b1 > b0 || blocks == 0) << "part " << p << " request " << q << " holds no block";
      if (q == part.begin_req) {
        EXPECT_EQ(part.first_split, splits_seen[static_cast<std::size_t>(q)]);
      }
      next_block[static_cast<std::size_t>(q)] = b1;
      ++splits_seen[static_cast<std::size_t>(q)];
      cost += b1 - b0 + overhead;
    }
    // tie_gap: a part that starts inside a request and does not finish it (a middle split) gives up tie_gap blocks.
    const bool middle = part.begin_block > 0 && part.begin_req == part.end_req && part.begin_req < batch &&
                        part.end_block < kv_blocks(seqlens[static_cast<std::size_t>(part.begin_req)], block_n);
    EXPECT_LE(cost, r.payload - (middle ? tie_gap : 0)) << "part " << p;
  }
  EXPECT_EQ(r.num_splits[0], 0);
  for (int q = 0; q < batch; ++q) {
    EXPECT_EQ(next_block[static_cast<std::size_t>(q)], kv_blocks(seqlens[static_cast<std::size_t>(q)], block_n)) << "request " << q;
    EXPECT_EQ(r.num_splits[static_cast<std::size_t>(q) + 1] - r.num_splits[static_cast<std::size_t>(q)],
              splits_seen[static_cast<std::size_t>(q)])
        << "request " << q;
    EXPECT_GE(splits_seen[static_cast<std::size_t>(q)], 1);
  }
}

TEST(MlaSchedule, HandWorkedExample) {
  // One request of 10 blocks over 2 parts: 15 cost units, payload ceil(15/2) + 5 = 13; part 0 takes 13 - 5 = 8
  // blocks, part 1 the other 2 (2 + 5 <= 13).
  const Result r = schedule({640}, 2);
  EXPECT_EQ(r.payload, 13);
  EXPECT_EQ(r.parts[0].begin_req, 0);
  EXPECT_EQ(r.parts[0].end_req, 0);
  EXPECT_EQ(r.parts[0].end_block, 8);
  EXPECT_EQ(r.parts[1].begin_block, 8);
  EXPECT_EQ(r.parts[1].first_split, 1);
  EXPECT_EQ(r.parts[1].end_block, 10);
  EXPECT_EQ(r.num_splits, (std::vector<int>{0, 2}));
  // Short requests stay whole: 3 requests of 1 block on 1 part.
  const Result w = schedule({1, 64, 10}, 1);
  EXPECT_EQ(w.num_splits, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(w.parts[0].end_req, 2);
}

TEST(MlaSchedule, CoversEveryBlockOnceWithinThePayload) {
  std::mt19937 rng(6);
  for (int batch : {1, 2, 6, 64, 128})
    for (int parts : {1, 7, 66, 132})
      for (int mean : {20, 140, 4096, 32768}) {
        std::vector<int> seqlens(static_cast<std::size_t>(batch));
        for (auto& s : seqlens) s = static_cast<int>(rng() % static_cast<unsigned>(2 * mean));  // zeros included
        if (batch > 1) seqlens[1] = 0;
        check(seqlens, parts);
      }
  check({0}, 4);
  check({0, 0, 0}, 132);
}

// tie_gap shortens the middle-split parts and raises the payload until everything still fits (same invariants).
TEST(MlaSchedule, TieGapStillCoversEveryBlock) {
  std::mt19937 rng(8);
  for (int batch : {1, 6, 128})
    for (int parts : {1, 7, 132})
      for (int mean : {20, 4096, 32768})
        for (int gap : {1, 3, 8}) {
          std::vector<int> seqlens(static_cast<std::size_t>(batch));
          for (auto& s : seqlens) s = static_cast<int>(rng() % static_cast<unsigned>(2 * mean));
          check(seqlens, parts, 64, 2, gap);
        }
  // One request of 10 blocks over 3 parts with overhead 2: payload ceil(12 / 3) + 2 = 6 covers it without a gap;
  // with gap 1 the middle part holds 3 blocks, not 4, and the payload stays 6 (4 + 3 + 3 = 10).
  const Result r = schedule({640}, 3, 64, 2, 1);
  EXPECT_EQ(r.payload, 6);
  EXPECT_EQ(r.parts[1].end_block - r.parts[1].begin_block, 3);
}

// merge_blocks bounds the pieces of a long request near sqrt(blocks / merge_blocks) (the merge folds them in one by
// one) and leaves a batch that fills the SMs as it was.
TEST(MlaSchedule, MergeCostBoundsThePieces) {
  const Result one = schedule({4096}, 132, 64, 2, 0, 1);  // 64 blocks: sqrt(64) = 8 pieces of 8
  EXPECT_EQ(one.payload, 10);
  EXPECT_EQ(one.num_splits, (std::vector<int>{0, 8}));
  EXPECT_EQ(schedule({4096}, 132, 64, 2, 0, 0).num_splits, (std::vector<int>{0, 64}));  // unbounded: one block each
  EXPECT_EQ(schedule({4096}, 132, 64, 2, 0, 4).num_splits, (std::vector<int>{0, 4}));   // sqrt(64 / 4) = 4
  const std::vector<int> full(128, 4096);
  EXPECT_EQ(schedule(full, 132, 64, 2, 3, 1).num_splits, schedule(full, 132, 64, 2, 3, 0).num_splits);
  std::mt19937 rng(9);
  for (int batch : {1, 2, 6, 128})
    for (int mean : {20, 4096, 32768})
      for (int mb : {1, 3}) {
        std::vector<int> seqlens(static_cast<std::size_t>(batch));
        for (auto& s : seqlens) s = static_cast<int>(rng() % static_cast<unsigned>(2 * mean));
        check(seqlens, 132, 64, 2, 3, mb);
        check(seqlens, 66, 64, 5, 0, mb);
      }
}

// The split-KV schedule is balanced: a part that is followed by more work carries at least payload - overhead (it
// stops only when not even one block more and its split's overhead fit).
TEST(MlaSchedule, IsBalanced) {
  std::vector<int> seqlens(128);
  std::mt19937 rng(7);
  for (auto& s : seqlens) s = 2048 + static_cast<int>(rng() % 4096);
  const int parts = 132, overhead = 5;
  const Result r = schedule(seqlens, parts, 64, overhead);
  int busy = 0;
  for (int p = 0; p + 1 < parts; ++p) {
    const PartRange& part = r.parts[static_cast<std::size_t>(p)];
    const PartRange& next = r.parts[static_cast<std::size_t>(p) + 1];
    if (next.begin_req > next.end_req || next.begin_req >= 128) continue;  // the work ended in this part
    ++busy;
    int cost = 0;
    for (int q = part.begin_req; q <= part.end_req; ++q) {
      const int b0 = q == part.begin_req ? part.begin_block : 0;
      const int b1 = q == part.end_req ? part.end_block : kv_blocks(seqlens[static_cast<std::size_t>(q)], 64);
      cost += b1 - b0 + overhead;
    }
    EXPECT_GE(cost, r.payload - overhead) << "part " << p;
  }
  EXPECT_GT(busy, parts / 2);
}

// The varlen lengths are pinned: tests/perf/mla_lengths.py draws the same ones in Python (and tests/python's
// test_perf_scripts.py pins them there), so a baseline timed from Python runs on the very caches mla.decode ran on.
TEST(MlaSchedule, VarlenLengthsArePinned) {
  const PagedCache c = make_paged_cache(32, 32768, 1, true, false, 64);
  ASSERT_EQ(c.lens.size(), 32u);
  EXPECT_EQ(std::vector<std::int32_t>(c.lens.begin(), c.lens.begin() + 4),
            (std::vector<std::int32_t>{37585, 14909, 54423, 50093}));
  EXPECT_EQ(std::accumulate(c.lens.begin(), c.lens.end(), std::int64_t{0}), 1046307);
  EXPECT_EQ(*std::max_element(c.lens.begin(), c.lens.end()), 83074);
  const PagedCache z = make_paged_cache(128, 4096, 2, true, true, 64);
  EXPECT_EQ(std::accumulate(z.lens.begin(), z.lens.end(), std::int64_t{0}), 295911);
}

}  // namespace
}  // namespace tl::mla
