// The text check (what CI asserts on the app's plots): it finds texts that overlap, run off the scene or are struck
// through by a drawn line, and passes a scene without them.
#include <gtest/gtest.h>

#include "viz/text_check.hpp"

namespace tl::viz {
namespace {

bool mentions(const std::vector<std::string>& problems, const std::string& needle) {
  for (const auto& p : problems)
    if (p.find(needle) != std::string::npos) return true;
  return false;
}

// Every width is 10 units per character: boxes are easy to reason about.
TextMeasure ten_per_char() {
  return [](const std::string& text, double, bool) { return 10.0 * static_cast<double>(text.size()); };
}

Scene page() {
  Scene s;
  s.width = 200;
  s.height = 100;
  return s;
}

TEST(TextCheck, APageWithLabelsApartPasses) {
  Scene s = page();
  s.texts.push_back({10, 20, "left", 10, {}, Align::left});     // [10, 50] x [15, 25]
  s.texts.push_back({150, 20, "mid", 10, {}, Align::center});   // [135, 165]
  s.texts.push_back({190, 40, "right", 10, {}, Align::right});  // [140, 190] x [35, 45]
  s.lines.push_back({0, 60, 200, 60, {}, 2});                   // a roof below all of them
  s.lines.push_back({60, 0, 60, 100, {}, 0.5});                 // a grid line may run behind text
  s.texts.push_back({58, 80, "grid", 10, {}, Align::left});
  EXPECT_TRUE(check_text_layout(s, ten_per_char()).empty());
}

TEST(TextCheck, FindsOverlapsEdgesAndStrikes) {
  Scene s = page();
  s.texts.push_back({10, 20, "83.3%", 10, {}, Align::left});  // [10, 60] x [15, 25]
  s.texts.push_back({50, 24, "71.4%", 10, {}, Align::left});  // overlaps the first by 10 x 6
  auto p = check_text_layout(s, ten_per_char());
  EXPECT_TRUE(mentions(p, "'83.3%' overlaps '71.4%'")) << testing::PrintToString(p);

  s = page();
  s.texts.push_back({150, 50, "a long title", 10, {}, Align::left});  // runs to 270: 70 past the right edge
  s.texts.push_back({20, 50, "axis", 10, {}, Align::right});          // starts at -20
  s.texts.push_back({100, 98, "bottom", 10, {}, Align::center});      // to 103
  p = check_text_layout(s, ten_per_char());
  EXPECT_TRUE(mentions(p, "'a long title' runs past the scene's right edge by 70.0")) << testing::PrintToString(p);
  EXPECT_TRUE(mentions(p, "'axis' runs past the scene's left edge by 20.0"));
  EXPECT_TRUE(mentions(p, "'bottom' runs past the scene's bottom edge by 3.0"));

  // A roof (2 units wide) through a label's box strikes it; one that passes just below it does not.
  s = page();
  s.texts.push_back({100, 50, "fp16", 10, {}, Align::center});  // [80, 120] x [45, 55]
  s.lines.push_back({0, 100, 200, 0, {}, 2});                   // the diagonal through (100, 50)
  p = check_text_layout(s, ten_per_char());
  EXPECT_TRUE(mentions(p, "'fp16' is struck through by a line")) << testing::PrintToString(p);
  s.lines = {{0, 57, 200, 57, {}, 2}};
  EXPECT_TRUE(check_text_layout(s, ten_per_char()).empty());
}

TEST(TextCheck, ReportsAtMostTheLimitAndCountsTheRest) {
  Scene s = page();
  for (int i = 0; i < 30; ++i) s.texts.push_back({10, 50, "same", 10, {}, Align::left});
  auto p = check_text_layout(s, ten_per_char(), 0.5, 5);
  ASSERT_EQ(p.size(), 6u);
  EXPECT_NE(p.back().find("more"), std::string::npos) << p.back();
}

TEST(TextCheck, ElidedTextFitsItsWidth) {
  const std::string title = "Roofline: Synthetic test GPU (made-up ceilings, not a measurement)";
  for (double width : {60.0, 150.0, 300.0}) {
    const std::string e = elide_text(title, 14, width, true);
    EXPECT_LE(estimate_text_width(e, 14) * 1.1, width + 1e-9) << e;
    EXPECT_EQ(e.rfind("…"), e.size() - std::string("…").size()) << e;
  }
  EXPECT_EQ(elide_text("short", 14, 300), "short");
}

}  // namespace
}  // namespace tl::viz
