// Split-KV schedule of MLA decoding: every request's KV blocks dealt out over the SM parts in equal shares.
#pragma once

// Decoding attention has one query row group per request but KV lengths that differ by orders of magnitude, so one
// CTA per request leaves most SMs idle. The schedule (the facts of FlashMLA's get_mla_metadata, written here from
// its description) walks the requests' KV blocks in request-major order and cuts that sequence into num_parts
// pieces of about equal cost, where a piece costs its blocks plus a fixed overhead per (request, piece) pair: a
// part that starts or ends inside a request splits it, and the split's partial O / LSE are merged by the combine
// kernel. Plain loops over caller-provided arrays, so the same code can run on the host or in a one-thread kernel.

#include "tile/config.hpp"

#if !TL_DEVICE_CODE
#include <cstdint>
#include <vector>
#endif

namespace tl::mla {

// The KV blocks of SM part p: from block begin_block of request begin_req up to block end_block (exclusive) of
// request end_req, every request in between whole. first_split is the index of begin_req's split that the part
// computes (0 when the part starts at the request's first block). A part with no work has begin_req > end_req.
struct PartRange {
  int begin_req, begin_block;
  int end_req, end_block;
  int first_split;
};

TL_HOST_DEVICE constexpr int kv_blocks(int seqlen, int block_n) { return (seqlen + block_n - 1) / block_n; }

// One walk of the schedule at a given payload (see schedule_split_kv); returns whether every request was dealt out.
TL_HOST_DEVICE inline bool walk_split_kv(const int* seqlens, int batch, int block_n, int overhead_blocks, int num_parts,
                                         int payload, int tie_gap, PartRange* parts, int* num_splits) {
  int req = 0, block = 0, split = 0;  // the next block to hand out, and the split it starts
  num_splits[0] = 0;
  for (int p = 0; p < num_parts; ++p) {
    PartRange& part = parts[p];
    part.begin_req = req;
    part.begin_block = block;
    part.first_split = split;
    int budget = payload;
    // A part that starts inside a request and cannot finish it holds that request alone (a middle split). It would
    // end together with the part before it, which ends with the same request's head: both then find the other
    // outstanding, both write a partial and one merges after them, the costliest end of any part (docs/perf.md).
    // tie_gap blocks less for it lets its partial be counted before the head's part ends, which then merges.
    if (tie_gap > 0 && req < batch && block > 0 && kv_blocks(seqlens[req], block_n) - block + overhead_blocks > budget)
      budget -= tie_gap;
    while (req < batch) {
      const int left = kv_blocks(seqlens[req], block_n) - block;
      if (budget >= left + overhead_blocks) {  // the rest of this request fits: finish it here
        budget -= left + overhead_blocks;
        num_splits[req + 1] = num_splits[req] + split + 1;
        ++req;
        block = 0;
        split = 0;
      } else {  // take what fits (if more than the overhead) and leave the rest to the next part
        if (budget > overhead_blocks) {
          block += budget - overhead_blocks;
          ++split;
        }
        break;
      }
    }
    // Ends inside request `req` when it took some of its blocks, else after the last request it finished.
    if (block > 0 && req < batch && !(part.begin_req == req && part.begin_block == block)) {
      part.end_req = req;
      part.end_block = block;
    } else {
      part.end_req = req - 1;
      part.end_block = req > 0 ? kv_blocks(seqlens[req - 1], block_n) : 0;
    }
  }
  return req >= batch;
}

// Fills parts[num_parts] and num_splits[batch + 1] (prefix sums: request r has num_splits[r + 1] - num_splits[r]
// splits, at least 1, also for an empty request, whose single split computes nothing and yields O = 0); returns
// the payload, the most any part may cost. overhead_blocks is the cost of one split in block units. tie_gap > 0
// shortens every middle-split part by that many blocks (walk_split_kv) and raises the payload until the parts
// still hold every request.
//
// merge_blocks > 0 bounds how finely a request is cut. The split that finishes a request last folds in every
// other split's partial, one after another, at about merge_blocks blocks' cost each: a request of B blocks cut
// into n pieces ends after about B / n + n * merge_blocks, least at n = sqrt(B / merge_blocks). The payload is
// raised so that no request is cut finer than that; the parts it frees stay idle. Few, long requests are what it
// changes (one request of 64 blocks over 132 parts: 64 one-block splits merged one by one before, 8 now); a batch
// that fills the SMs is cut into few pieces a request anyway and keeps its payload.
TL_HOST_DEVICE inline int isqrt_floor(int v) {
  int r = 0;
  while ((r + 1) * (r + 1) <= v) ++r;
  return r;
}

TL_HOST_DEVICE inline int schedule_split_kv(const int* seqlens, int batch, int block_n, int overhead_blocks, int num_parts,
                                            PartRange* parts, int* num_splits, int tie_gap = 0, int merge_blocks = 0) {
  int total = 0, piece = 0;
  for (int r = 0; r < batch; ++r) {
    const int blocks = kv_blocks(seqlens[r], block_n);
    total += blocks + overhead_blocks;
    if (merge_blocks > 0 && blocks > 0) {
      const int root = isqrt_floor(blocks / merge_blocks), pieces = root > 1 ? root : 1;
      const int size = (blocks + pieces - 1) / pieces;
      if (size > piece) piece = size;
    }
  }
  int payload = (total + num_parts - 1) / num_parts + overhead_blocks;
  if (piece + overhead_blocks > payload) payload = piece + overhead_blocks;
  while (!walk_split_kv(seqlens, batch, block_n, overhead_blocks, num_parts, payload, tie_gap, parts, num_splits) && tie_gap > 0)
    ++payload;
  return payload;
}

#if !TL_DEVICE_CODE
// A paged cache as FlashMLA's tests make it (defined in mla_decode.cpp, used by both MLA decode specs): per request
// seq_k tokens, or with varlen max(N(seq_k, seq_k / 2), min_len) drawn from hashes, about half of them 0 with
// zero_lengths; the requests' blocks of `block` tokens dealt out over physical blocks 0 .. num_blocks - 1 in a
// shuffled order, through a table of table_stride columns (the longest request padded to 256 tokens) whose unused
// entries hold FlashMLA's sentinel 2147480000.
struct PagedCache {
  std::vector<std::int32_t> lens;
  std::int64_t table_stride = 1, num_blocks = 1;
  std::vector<std::int32_t> table;  // [batch, table_stride]
};
PagedCache make_paged_cache(std::int64_t batch, std::int64_t seq_k, std::int64_t min_len, bool varlen, bool zero_lengths,
                            std::int64_t block);

// The host's schedule for a launch of grid (num_parts, m_tiles): one part per (SM, row tile) as FlashMLA's
// get_mla_metadata sizes it, the parts as 5 ints each (begin_req, begin_block, end_req, end_block, first_split) and
// the requests' split counts as prefix sums, the kernels' int32 arguments.
struct SplitSchedule {
  int num_parts = 1, payload = 0, total_splits = 0;
  bool any_split = false;  // some request has more than one split (the merge's workspace is needed)
  std::vector<std::int32_t> parts, num_splits;
};

inline SplitSchedule make_split_schedule(const std::vector<std::int32_t>& lens, int block_n, int m_tiles, int sms,
                                         int overhead_blocks, int tie_gap, int merge_blocks) {
  SplitSchedule s;
  const int batch = static_cast<int>(lens.size());
  s.num_parts = sms / m_tiles > 1 ? sms / m_tiles : 1;
  std::vector<PartRange> pr(static_cast<std::size_t>(s.num_parts));
  s.num_splits.assign(lens.size() + 1, 0);
  s.payload = schedule_split_kv(lens.data(), batch, block_n, overhead_blocks, s.num_parts, pr.data(), s.num_splits.data(),
                                tie_gap, merge_blocks);
  for (const auto& p : pr) s.parts.insert(s.parts.end(), {p.begin_req, p.begin_block, p.end_req, p.end_block, p.first_split});
  s.total_splits = s.num_splits.back();
  for (int i = 0; i < batch; ++i)
    s.any_split = s.any_split || s.num_splits[static_cast<std::size_t>(i) + 1] - s.num_splits[static_cast<std::size_t>(i)] > 1;
  return s;
}
#endif

}  // namespace tl::mla
