// The loop's shortcuts through a real (headless) ImGui frame of the app: Ctrl+B compiles, Ctrl+R / Ctrl+Shift+R /
// Ctrl+T run, bench and capture, or say why not without a GPU; the letter alone does nothing.
#include <gtest/gtest.h>

#include <filesystem>

#include <imgui.h>

#include "app/gui/app.hpp"

namespace tl::gui {
namespace {

// An ImGui context with a built font atlas and a display size: enough for NewFrame/Render without a backend.
struct Headless {
  Headless() {
    ImGui::CreateContext();
    ImGuiIO& io = ImGui::GetIO();
    io.IniFilename = nullptr;
    io.DisplaySize = ImVec2(1400, 900);
    io.DeltaTime = 1.0f / 60;
    unsigned char* pixels = nullptr;
    int w = 0, h = 0;
    io.Fonts->GetTexDataAsRGBA32(&pixels, &w, &h);
  }
  ~Headless() { ImGui::DestroyContext(); }
};

void frame(App& app) {
  ImGui::NewFrame();
  app.frame();
  ImGui::Render();
}

// A frame with `key` down (and the modifiers), then one with it up again.
void press(App& app, int key, bool ctrl, bool shift = false) {
  ImGuiIO& io = ImGui::GetIO();
  io.KeyCtrl = ctrl;
  io.KeyShift = shift;
  io.KeysDown[key] = true;
  frame(app);
  io.KeysDown[key] = false;
  io.KeyCtrl = io.KeyShift = false;
  frame(app);
}

std::string last_message(const App& app) { return app.messages().empty() ? "" : app.messages().back().text; }

TEST(Keys, CtrlLettersDoWhatTheKernelMenuSays) {
  Headless h;
  AppOptions o;
  o.results_db = (std::filesystem::temp_directory_path() / "tl_test_gui_keys.db").string();
  o.record_runs = false;
  App app(o);
  ASSERT_TRUE(app.select_kernel("copy").ok());
  frame(app);
  press(app, 'B', false);  // the letter alone is typing, not a shortcut
  EXPECT_FALSE(app.compiling());
  press(app, 'B', true);
  EXPECT_TRUE(app.compiling() || app.compiled().compiled) << last_message(app);
  ASSERT_TRUE(app.wait_for_jobs(300));
  frame(app);
  EXPECT_TRUE(app.compiled().compiled.has_value()) << app.compiled().error;
  if (app.has_device()) GTEST_SKIP() << "a GPU is present: the no-GPU refusals are not what Ctrl+R does here";
  press(app, 'R', true);
  EXPECT_NE(last_message(app).find("cannot run: no GPU"), std::string::npos) << last_message(app);
  press(app, 'R', true, true);
  EXPECT_NE(last_message(app).find("cannot bench: no GPU"), std::string::npos) << last_message(app);
  press(app, 'T', true);
  EXPECT_NE(last_message(app).find("cannot capture a timeline"), std::string::npos) << last_message(app);
}

}  // namespace
}  // namespace tl::gui
