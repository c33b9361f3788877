// Colour palettes for plots: categorical (threads, values, banks), warp hue families, a sequential ramp.
#pragma once

#include "viz/scene.hpp"

namespace tl::viz {

// An OKLCH colour (perceptual lightness 0..1, chroma, hue in degrees) to sRGB, clamped into the gamut.
Color oklch(double lightness, double chroma, double hue_degrees, float alpha = 1);

// 32 colours, repeating: consecutive indices jump ~112 degrees in hue and alternate light/dark, so
// neighbouring lanes (which usually sit in neighbouring cells) never look alike.
Color categorical(int index);

// Threads of one warp share a hue family (warp w's hue), lanes vary in lightness and a little in hue;
// used when a fragment spans several warps, so warps read as blocks and lanes stay tellable apart.
Color warp_family(int thread);

// A sequential ramp from dark blue (t = 0) to light yellow (t = 1), monotone in lightness.
Color sequential(double t);

// Conflict degree of a shared-memory bank: 0 = untouched (light grey), 1 = clean (green), 2.. = yellow
// to red on a log scale, saturating at 32-way.
Color conflict_color(int degree);

}  // namespace tl::viz
