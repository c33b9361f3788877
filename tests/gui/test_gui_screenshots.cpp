// Screenshots of each panel from the scripted test mode under xvfb: the right size, not blank, and for the heat map
// its cells. Each panel script asserts on the state it shows (gui.state(), gui.results_history(), gui.sweep_state())
// and fails the run when it is wrong; the app's text check (no text cut off, overlapping, struck through or missing a
// glyph) fails it too.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <unordered_map>

#include <unistd.h>

#include <stb_image.h>

namespace fs = std::filesystem;

namespace {

constexpr int kWidth = 1400, kHeight = 900;

// TL_SCREENSHOT_DIR set (make gui-smoke): check the PNGs it already wrote there. Otherwise run the app here.
std::string screenshot_dir() {
  const char* d = std::getenv("TL_SCREENSHOT_DIR");
  return d && *d ? d : "";
}

// A panel script's extra options: its "-- args: ..." line (as make gui-smoke reads it).
std::string script_args(const std::string& script) {
  std::ifstream in(script);
  const std::string tag = "-- args: ";
  for (std::string line; std::getline(in, line);)
    if (line.rfind(tag, 0) == 0) return line.substr(tag.size());
  return "";
}

class PanelScreenshot : public ::testing::TestWithParam<const char*> {};

TEST_P(PanelScreenshot, IsTheWindowSizeAndNotBlank) {
  const std::string panel = GetParam();
  std::string png;
  if (!screenshot_dir().empty()) {
    png = screenshot_dir() + "/" + panel + ".png";
  } else {
    if (std::system("command -v xvfb-run > /dev/null 2>&1") != 0) GTEST_SKIP() << "xvfb-run is not installed";
    const fs::path out = fs::temp_directory_path() / ("tl_gui_shots_" + std::to_string(::getpid()));
    fs::create_directories(out);
    png = (out / (panel + ".png")).string();
    fs::remove(png);
    // Each panel gets a fresh results store of the fixture's rows (the Results panel asserts on them; a sweep's
    // skipped points would otherwise land in the next panel's history).
    const std::string db = (out / (panel + ".db")).string();
    ASSERT_EQ(std::system((std::string(TL_GUI_FIXTURE) + " " + db + " > /dev/null").c_str()), 0);
    const std::string script = std::string(TL_GUI_SCRIPTS) + "/panel_" + panel + ".lua";
    const std::string cmd = "TILELAB_DB=" + db + " xvfb-run -a -s '-screen 0 " + std::to_string(kWidth) + "x" +
                            std::to_string(kHeight) + "x24' " + TL_GUI_EXE + " --script " + script +
                            " --frames 5 --screenshot " + png + " " + script_args(script) + " > " + png + ".log 2>&1";
    const int rc = std::system(cmd.c_str());
    ASSERT_EQ(rc, 0) << cmd << " failed; see " << png << ".log";
  }
  ASSERT_TRUE(fs::exists(png)) << png;
  int w = 0, h = 0, n = 0;
  unsigned char* data = stbi_load(png.c_str(), &w, &h, &n, 4);
  ASSERT_NE(data, nullptr) << png << " is not a readable PNG";
  EXPECT_EQ(w, kWidth);
  EXPECT_EQ(h, kHeight);
  // Not blank: many distinct colours, and no single colour covering nearly everything.
  std::unordered_map<std::uint32_t, int> counts;
  const std::size_t pixels = static_cast<std::size_t>(w) * h;
  for (std::size_t i = 0; i < pixels; ++i) {
    const unsigned char* p = data + 4 * i;
    ++counts[(std::uint32_t{p[0]} << 16) | (std::uint32_t{p[1]} << 8) | p[2]];
  }
  stbi_image_free(data);
  int top = 0;
  for (const auto& [c, k] : counts) top = std::max(top, k);
  EXPECT_GT(counts.size(), 40u) << png << " has only " << counts.size() << " colours";
  EXPECT_LT(static_cast<double>(top) / static_cast<double>(pixels), 0.97) << png << " is one colour";
  // Flat areas of one colour (panel backgrounds, heat map cells): the sweep's 3x3 heat map adds one per distinct
  // value, so it has many more than a panel of text.
  // Flat areas of one saturated colour (heat map cells, plots; the dark theme is mostly grey): the sweep's 3x3 heat
  // map of registers adds one per distinct value.
  int flat = 0;
  for (const auto& [c, k] : counts) {
    const int r = static_cast<int>(c >> 16), g = static_cast<int>((c >> 8) & 255), b = static_cast<int>(c & 255);
    flat += k >= 3000 && std::max({r, g, b}) - std::min({r, g, b}) > 60;
  }
  std::printf("%s: %zu colours, %d saturated flat areas\n", panel.c_str(), counts.size(), flat);
  if (panel == "sweep") {
    EXPECT_GE(flat, 6) << png << ": the heat map's cells are missing";
  }
}

INSTANTIATE_TEST_SUITE_P(Panels, PanelScreenshot,
                         ::testing::Values("layouts", "source", "ptx", "sass", "results", "sweep", "timeline",
                                           "roofline", "lua", "device", "compare", "timelines", "hidpi"),
                         [](const auto& info) { return std::string(info.param); });

}  // namespace
