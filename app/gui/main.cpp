// `tilelab-gui`: the desktop workbench window (GLFW + OpenGL3 + Dear ImGui), with a scripted screenshot mode.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <cstdlib>
#include <cstring>

#include <CLI/CLI.hpp>
#include <GLFW/glfw3.h>
#include <imgui.h>
#include <imgui_impl_glfw.h>
#include <imgui_impl_opengl3.h>

#include <stb_image_write.h>  // implementation comes from libstb

#include "app/gui/app.hpp"
#include "app/gui/fonts.hpp"
#include "app/gui/script_api.hpp"
#include "app/gui/ui_check.hpp"
#include "runtime/worker/server.hpp"
#include "scripting/lua_options.hpp"
#include "viz/imgui_painter.hpp"

namespace {

struct Options {
  int frames = 0;            // > 0: quit after this many frames once the app is idle (test mode)
  std::string screenshot;    // PNG written after the last frame
  std::string script;        // Lua run before the first frame, with the `gui` table
  std::string workspace;     // "" -> default_workspace_path(), except in test mode (no workspace)
  int width = 1400, height = 900;
  double max_wait_s = 120;   // test mode: how long to wait for background work before the screenshot
  std::string db;            // results store ("" -> $TILELAB_DB or ~/.local/share/tilelab/results.db)
  bool no_store = false;     // do not record runs and sweep points
  double scale = 0;          // UI scale; 0: the monitor's content scale
  std::string theme;         // "dark", "light"; "": the workspace's (dark at first)
  bool no_text_check = false;
  tl::lua::ScriptArgs script_args;  // limits and sandbox of --script and the Lua panel
};

// Reads the back buffer and writes it as PNG (rows flipped: GL's origin is bottom-left).
bool save_screenshot(const std::string& path, int w, int h) {
  std::vector<unsigned char> pixels(static_cast<size_t>(w) * h * 4);
  glPixelStorei(GL_PACK_ALIGNMENT, 1);
  glReadBuffer(GL_BACK);
  glReadPixels(0, 0, w, h, GL_RGBA, GL_UNSIGNED_BYTE, pixels.data());
  std::error_code ec;
  std::filesystem::path p(path);
  if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path(), ec);
  stbi_flip_vertically_on_write(1);
  return stbi_write_png(path.c_str(), w, h, 4, pixels.data(), w * 4) != 0;
}

// Test mode, on the frame a screenshot is taken: the plots' text audit (texts inside their plot, none overlapping)
// and the drawn-text check (nothing cut off by its window, no glyph the font lacks). Prints each problem; false
// when there is one.
bool text_checks_pass(const std::string& shot) {
  std::vector<std::string> problems = tl::viz::take_text_audit();
  for (auto& p : tl::gui::check_drawn_text()) problems.push_back(std::move(p));
  for (const auto& p : problems) std::fprintf(stderr, "tilelab-gui: text check (%s): %s\n", shot.c_str(), p.c_str());
  if (problems.empty()) std::printf("tilelab-gui: text check (%s): no text cut off, overlapping or missing a glyph\n",
                                    shot.c_str());
  return problems.empty();
}

// `tilelab-gui worker [--protocol N]`: the App's Session starts its GPU worker as this very binary
// (/proc/self/exe worker, as the CLI does), so the GUI must serve the worker protocol itself.
int serve_as_worker(int argc, char** argv) {
  tl::WorkerServeOptions options;
  for (int i = 2; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], "--protocol") == 0) options.protocol_version = std::atoi(argv[i + 1]);
  return tl::serve_worker(options);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && std::strcmp(argv[1], "worker") == 0) return serve_as_worker(argc, argv);
  const auto t_start = std::chrono::steady_clock::now();
  Options opt;
  CLI::App cli{"TileLab desktop workbench (also started as `tilelab gui`)", "tilelab-gui"};
  std::string keys;
  for (const auto& k : tl::gui::kShortcuts) keys += std::string(keys.empty() ? "" : ", ") + k.keys + " " + k.label;
  cli.footer("Keyboard (also in the Kernel menu): " + keys +
             ".\nEnvironment: TILELAB_DB (results store), TILELAB_WORKSPACE (workspace file), TILELAB_GUI_FONT (a .ttf "
             "instead of the embedded DejaVu Sans), TILELAB_KERNELS_DIR, TILELAB_CACHE_DIR.");
  cli.add_option("--frames", opt.frames, "Test mode: quit after N frames (once background work is done)");
  cli.add_option("--screenshot", opt.screenshot, "Test mode: write a PNG of the last frame");
  cli.add_option("--script", opt.script, "Run a Lua script with the `gui` table before the first frame");
  cli.add_option("--workspace", opt.workspace, "Workspace file (default ~/.config/tilelab/workspace.json; none "
                                               "in test mode unless given)");
  cli.add_option("--width", opt.width, "Window width in pixels (320 to 16384)");
  cli.add_option("--height", opt.height, "Window height in pixels (240 to 16384)");
  cli.add_option("--max-wait", opt.max_wait_s, "Test mode: seconds to wait for background work");
  cli.add_option("--db", opt.db, "Results store: history shown, runs and sweeps recorded (default: $TILELAB_DB or "
                                 "~/.local/share/tilelab/results.db)");
  cli.add_flag("--no-store", opt.no_store, "Do not record this session's runs and sweep points in the results store");
  cli.add_option("--scale", opt.scale, "UI scale for HiDPI screens, 0.5 to 4: fonts, widgets and plots (default: "
                                       "the monitor's content scale)");
  cli.add_option("--theme", opt.theme, "dark or light: the window and its plots (default: the workspace's, else dark)");
  cli.add_flag("--no-text-check", opt.no_text_check, "Test mode: skip the check that no text is cut off, overlapping "
                                                     "or missing a glyph when a screenshot is written");
  // --timeout bounds --script only (the Lua panel has Stop), 10 minutes unless given: the script runs before the
  // first frame, and one that never ends must not keep the window from ever showing.
  opt.script_args.timeout_s = 600;
  tl::lua::add_script_options(cli, opt.script_args);
  try {
    cli.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return cli.exit(e) == 0 ? 0 : 1;  // --help is one too; any usage error exits 1, as `tilelab` does
  }
  // Values checked here, each refusal naming the option and what it accepts (as `tilelab` does).
  std::string bad;
  if (opt.width < 320 || opt.width > 16384) bad = "--width " + std::to_string(opt.width) + ": must be from 320 to 16384";
  if (opt.height < 240 || opt.height > 16384) bad = "--height " + std::to_string(opt.height) + ": must be from 240 to 16384";
  if (opt.scale != 0 && !(opt.scale >= 0.5 && opt.scale <= 4)) {
    char v[32];
    std::snprintf(v, sizeof v, "%g", opt.scale);
    bad = std::string("--scale ") + v + ": must be from 0.5 to 4";
  }
  if (!opt.theme.empty() && opt.theme != "dark" && opt.theme != "light") bad = "--theme " + opt.theme + ": must be dark or light";
  if (!bad.empty()) {
    std::fprintf(stderr, "tilelab-gui: error: %s\n", bad.c_str());
    return 1;
  }
  tl::lua::ScriptOptions script_options;
  script_options.command = "tilelab gui";
  if (tl::Status st = tl::lua::apply_script_args(opt.script_args, script_options); !st) {
    std::fprintf(stderr, "tilelab-gui: error: %s\n", st.message().c_str());
    return 1;
  }
  const bool test_mode = opt.frames > 0;

  glfwSetErrorCallback([](int code, const char* msg) { std::fprintf(stderr, "tilelab-gui: GLFW error %d: %s\n", code, msg); });
  if (!glfwInit()) {
    std::fprintf(stderr, "tilelab-gui: error: cannot open a window (no display? set DISPLAY or use the headless "
                         "`tilelab run`)\n");
    return 1;
  }
  glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
  glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 3);
  glfwWindowHint(GLFW_OPENGL_PROFILE, GLFW_OPENGL_CORE_PROFILE);
  GLFWwindow* window = glfwCreateWindow(opt.width, opt.height, "TileLab", nullptr, nullptr);
  if (!window) {
    std::fprintf(stderr, "tilelab-gui: error: cannot create an OpenGL 3.3 window\n");
    glfwTerminate();
    return 1;
  }
  glfwMakeContextCurrent(window);
  glfwSwapInterval(test_mode ? 0 : 1);
  float scale = static_cast<float>(opt.scale);
  if (scale <= 0) {
    // The monitor's content scale, less what the platform already scales (framebuffer larger than the window, as
    // on Wayland and macOS; on X11 the two are the same and the app scales everything itself).
    float sx = 1, sy = 1;
    glfwGetWindowContentScale(window, &sx, &sy);
    int ww = 1, wh = 1, fw = 1, fh = 1;
    glfwGetWindowSize(window, &ww, &wh);
    glfwGetFramebufferSize(window, &fw, &fh);
    const float platform = ww > 0 ? static_cast<float>(fw) / static_cast<float>(ww) : 1.0f;
    scale = std::clamp(std::max(sx, sy) / std::max(platform, 1.0f), 0.5f, 4.0f);
  }

  tl::gui::AppOptions app_options;
  app_options.results_db = opt.db;
  app_options.record_runs = !opt.no_store;
  app_options.script = script_options;
  app_options.ui_scale = scale;
  app_options.theme = opt.theme;
  if (!opt.workspace.empty()) app_options.workspace_path = opt.workspace;
  else if (!test_mode) app_options.workspace_path = tl::gui::default_workspace_path();
  const std::string ini = app_options.workspace_path.empty() ? "" : tl::gui::imgui_ini_path(app_options.workspace_path);

  IMGUI_CHECKVERSION();
  ImGui::CreateContext();
  ImGui::GetIO().IniFilename = ini.empty() ? nullptr : ini.c_str();
  ImGui::GetStyle().ScaleAllSizes(scale);
  const tl::gui::AppFonts fonts = tl::gui::load_app_fonts(std::round(15.0f * scale));
  tl::viz::set_bold_font(fonts.bold);
  if (test_mode) std::printf("tilelab-gui: font %s at scale %.2f\n", fonts.from.c_str(), scale);
  tl::viz::set_text_audit(test_mode && !opt.no_text_check);
  ImGui_ImplGlfw_InitForOpenGL(window, true);
  ImGui_ImplOpenGL3_Init("#version 330");

  int rc = 0;
  {
    tl::gui::App app(app_options);
    if (!opt.script.empty()) {
      tl::Status st = tl::gui::run_gui_script(app, opt.script);
      if (!st) {
        std::fprintf(stderr, "tilelab-gui: %s\n", st.message().c_str());
        rc = 1;
        if (test_mode) glfwSetWindowShouldClose(window, 1);
        else app.message(tl::gui::Message::Level::error, st.message().substr(0, st.message().find('\n')));
      }
    }
    if (!app.screenshots.empty()) (void)app.show_panel(app.screenshots.front().panel);
    int frame = 0;
    while (!glfwWindowShouldClose(window)) {
      glfwPollEvents();
      ImGui_ImplOpenGL3_NewFrame();
      ImGui_ImplGlfw_NewFrame();
      ImGui::NewFrame();
      app.frame();
      ImGui::Render();
      int w = 0, h = 0;
      glfwGetFramebufferSize(window, &w, &h);
      glViewport(0, 0, w, h);
      glClearColor(0.10f, 0.11f, 0.13f, 1.0f);
      glClear(GL_COLOR_BUFFER_BIT);
      ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
      if (frame == 0) {
        app.startup_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t_start).count();
        if (test_mode) {
          const auto* renderer = reinterpret_cast<const char*>(glGetString(GL_RENDERER));
          std::printf("tilelab-gui: first frame after %.0f ms (GL: %s)\n", app.startup_ms, renderer ? renderer : "?");
        }
      }
      ++frame;
      if (test_mode) {
        // Count the last frames from when background work (compiles, runs, scripts) is done, so the screenshot
        // shows its results; give up waiting after --max-wait.
        const auto now = std::chrono::steady_clock::now();
        const bool waited_out = std::chrono::duration<double>(now - t_start).count() > opt.max_wait_s;
        if (!app.idle() && !waited_out) {
          frame = std::min(frame, 1);
        } else if (frame >= opt.frames && !app.screenshots.empty()) {
          // gui.screenshot(panel, path) of the script, in order: this panel was shown for the last frames.
          const auto shot = app.screenshots.front();
          app.screenshots.erase(app.screenshots.begin());
          if (!opt.no_text_check && !text_checks_pass(shot.path)) rc = 1;
          if (save_screenshot(shot.path, w, h)) {
            std::printf("tilelab-gui: wrote %s (%s, %dx%d)\n", shot.path.c_str(), shot.panel.c_str(), w, h);
          } else {
            std::fprintf(stderr, "tilelab-gui: error: cannot write %s\n", shot.path.c_str());
            rc = 1;
          }
          if (!app.screenshots.empty()) (void)app.show_panel(app.screenshots.front().panel);
          frame = 1;
        } else if (frame >= opt.frames) {
          if (waited_out && !app.idle()) std::fprintf(stderr, "tilelab-gui: background work still running after %.0f s\n", opt.max_wait_s);
          if (!opt.screenshot.empty()) {
            if (!opt.no_text_check && !text_checks_pass(opt.screenshot)) rc = 1;
            if (save_screenshot(opt.screenshot, w, h)) {
              std::printf("tilelab-gui: wrote %s (%dx%d)\n", opt.screenshot.c_str(), w, h);
            } else {
              std::fprintf(stderr, "tilelab-gui: error: cannot write %s\n", opt.screenshot.c_str());
              rc = 1;
            }
          }
          glfwSetWindowShouldClose(window, 1);
        }
        (void)tl::viz::take_text_audit();  // only a screenshot frame's audit counts: earlier ones may be mid-build
      } else {
        // Idle frames need not spin: wait for input, but wake up to show background progress.
        if (app.idle()) glfwWaitEventsTimeout(0.25);
      }
      glfwSwapBuffers(window);
    }
  }

  ImGui_ImplOpenGL3_Shutdown();
  ImGui_ImplGlfw_Shutdown();
  ImGui::DestroyContext();
  glfwDestroyWindow(window);
  glfwTerminate();
  return rc;
}
