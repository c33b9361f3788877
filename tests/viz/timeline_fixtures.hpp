// Synthetic timelines for the timeline view tests and benchmarks: many tracks of short back-to-back events.
#pragma once

#include "runtime/trace/timeline.hpp"

namespace tl::viz::testing {

// `tracks` warps (8 per block, one block per SM), each with `per_track` events of 3 regions, durations 5..14 ns
// separated by 1 ns gaps; every 8th event nests a child. Stages cycle through 4.
inline Timeline busy_timeline(int tracks, int per_track, bool model = false) {
  TimelineBuilder b({"load", "mma", "wait", "epilogue"});
  for (int k = 0; k < tracks; ++k) {
    b.begin_warp(k / 8, k / 8, k % 8);
    double t = k * 0.5;
    for (int i = 0; i < per_track; ++i) {
      const double d = 5 + (i * 7 + k) % 10;
      b.interval(i % 3, static_cast<std::uint8_t>(i % 4), static_cast<std::uint32_t>(i), t, t + d);
      if (i % 8 == 0) b.interval(3, kNoStage, 0, t + 1, t + 3);
      t += d + 1;
    }
  }
  Timeline tl = b.finish();
  tl.kernel = "synthetic";
  tl.num_stages = 4;
  tl.model = model;
  if (model) tl.model_note = "test defaults";
  return tl;
}

}  // namespace tl::viz::testing
