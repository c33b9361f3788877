// Colour palettes for plots: categorical (threads, values, banks), warp hue families, a sequential ramp.
#pragma once

#include "viz/scene.hpp"

namespace tl::viz {

// The neutral colours of a plot, so that one builder draws for a white page (files, the light app) and for the dark
// app alike; data colours (threads, roofs, regions) come from the palettes below and read on both.
struct Theme {
  bool dark = false;
  Color background;  // the page
  Color ink;         // titles, labels, axes
  Color muted;       // secondary text, ticks
  Color grid_major, grid_minor;
  Color stripe;      // alternate rows
  Color unset;       // a cell with nothing to colour
  Color rule;        // cell borders (its alpha is scaled for thin rules)
  Color accent;      // warnings and the MODEL banner's text
  Color accent_fill; // the banner's background
};
const Theme& light_theme();
const Theme& dark_theme();

// An OKLCH colour (perceptual lightness 0..1, chroma, hue in degrees) to sRGB, clamped into the gamut.
Color oklch(double lightness, double chroma, double hue_degrees, float alpha = 1);

// 32 colours, repeating: consecutive indices jump ~112 degrees in hue and alternate light/dark, so
// neighbouring lanes (which usually sit in neighbouring cells) never look alike.
Color categorical(int index);

// Threads of several warps: the lane's categorical colour (so neighbouring lanes differ as much as in one warp),
// its hue turned a little per warp, so thread t and t + 32 are related but not the same colour.
Color warp_family(int thread);

// A sequential ramp from dark blue (t = 0) to light yellow (t = 1), monotone in lightness.
Color sequential(double t);

// Conflict degree of a shared-memory bank: 0 = untouched (light grey), 1 = clean (green), 2.. = yellow
// to red on a log scale, saturating at 32-way.
Color conflict_color(int degree);

}  // namespace tl::viz
