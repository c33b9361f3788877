// Launch geometry (grid, block, cluster, dynamic shared memory): what a kernel spec computes and the worker launches.
#pragma once

#include <cstdint>

#include <nlohmann/json_fwd.hpp>

namespace tl {

struct Dim3 {
  std::uint32_t x = 1, y = 1, z = 1;
  std::uint64_t volume() const { return std::uint64_t{x} * y * z; }
};

struct LaunchGeometry {
  Dim3 grid, block;
  Dim3 cluster;                    // 1x1x1 = no cluster; grid must be a multiple of it
  std::uint32_t dynamic_smem = 0;  // bytes; above 48 KiB the launcher opts the kernel in
  // The kernel strides over its work by gridDim (a persistent grid): the launcher shrinks a 1-D grid.x to the CTAs
  // (whole clusters) this GPU holds at once, since a CTA that only starts when others finish runs its whole share
  // after them. The spec cannot know the device: it sizes the grid for the largest it expects.
  bool persistent = false;
};

void to_json(nlohmann::json& j, const LaunchGeometry& g);

}  // namespace tl
