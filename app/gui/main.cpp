// `tilelab-gui`: the desktop workbench window (GLFW + OpenGL3 + Dear ImGui), with a scripted screenshot mode.
#include <cstdio>
#include <string>

#include <CLI/CLI.hpp>
#include <GLFW/glfw3.h>
#include <imgui.h>
#include <imgui_impl_glfw.h>
#include <imgui_impl_opengl3.h>

#include <stb_image_write.h>  // implementation comes from libstb

#include "app/gui/layout_panel.hpp"
#include "runtime/device.hpp"

namespace {

struct Options {
  int frames = 0;               // > 0: quit after this many frames (test mode)
  std::string screenshot;       // PNG written after the last frame
  int width = 1400, height = 900;
};

// Reads the back buffer and writes it as PNG (rows flipped: GL's origin is bottom-left).
bool save_screenshot(const std::string& path, int w, int h) {
  std::vector<unsigned char> pixels(static_cast<size_t>(w) * h * 4);
  glPixelStorei(GL_PACK_ALIGNMENT, 1);
  glReadBuffer(GL_BACK);
  glReadPixels(0, 0, w, h, GL_RGBA, GL_UNSIGNED_BYTE, pixels.data());
  stbi_flip_vertically_on_write(1);
  return stbi_write_png(path.c_str(), w, h, 4, pixels.data(), w * 4) != 0;
}

void draw_device_panel(const tl::SystemInfo& sys) {
  ImGui::SetNextWindowPos(ImVec2(20, 40), ImGuiCond_FirstUseEver);
  ImGui::SetNextWindowSize(ImVec2(620, 260), ImGuiCond_FirstUseEver);
  ImGui::Begin("Device");
  ImGui::Text("Host: %s (%s)", sys.host.hostname.c_str(), sys.host.os.c_str());
  ImGui::Text("CPU: %s, %d cores", sys.host.cpu.c_str(), sys.host.cpu_cores);
  ImGui::Text("CUDA: built with %s, runtime %s, driver %s, NVRTC %d.%d", sys.toolkit.built_with.c_str(),
              tl::version_string(sys.toolkit.runtime_version).c_str(),
              tl::version_string(sys.toolkit.driver_version).c_str(), sys.toolkit.nvrtc_major,
              sys.toolkit.nvrtc_minor);
  ImGui::Separator();
  if (sys.devices.empty()) {
    ImGui::TextWrapped("No GPU: %s", sys.why_no_device.c_str());
  }
  for (const auto& d : sys.devices) {
    ImGui::Text("GPU %d: %s", d.index, d.name.c_str());
    ImGui::BulletText("%s, %d SMs, %.1f GiB, L2 %.0f MiB", d.arch().c_str(), d.sm_count,
                      d.memory_bytes / double(1ull << 30), d.l2_bytes / 1048576.0);
    ImGui::BulletText("SM clock %d MHz, memory %d-bit @ %d MHz", d.clock_khz / 1000, d.memory_bus_bits,
                      d.memory_clock_khz / 1000);
  }
  ImGui::End();
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  CLI::App app{"TileLab desktop workbench", "tilelab-gui"};
  app.add_option("--frames", opt.frames, "Quit after N frames (test mode)");
  app.add_option("--screenshot", opt.screenshot, "Write a PNG of the last frame");
  app.add_option("--width", opt.width, "Window width");
  app.add_option("--height", opt.height, "Window height");
  CLI11_PARSE(app, argc, argv);

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
  glfwSwapInterval(opt.frames > 0 ? 0 : 1);

  IMGUI_CHECKVERSION();
  ImGui::CreateContext();
  ImGui::GetIO().IniFilename = opt.frames > 0 ? nullptr : "tilelab-gui.ini";
  ImGui::StyleColorsDark();
  ImGui_ImplGlfw_InitForOpenGL(window, true);
  ImGui_ImplOpenGL3_Init("#version 330");

  const tl::SystemInfo sys = tl::query_system();
  tl::gui::LayoutPanel layout_panel;
  int frame = 0;
  bool ok = true;
  while (!glfwWindowShouldClose(window)) {
    glfwPollEvents();
    ImGui_ImplOpenGL3_NewFrame();
    ImGui_ImplGlfw_NewFrame();
    ImGui::NewFrame();

    if (ImGui::BeginMainMenuBar()) {
      if (ImGui::BeginMenu("File")) {
        if (ImGui::MenuItem("Quit")) glfwSetWindowShouldClose(window, 1);
        ImGui::EndMenu();
      }
      ImGui::TextDisabled("TileLab %s", TILELAB_VERSION);
      ImGui::EndMainMenuBar();
    }
    draw_device_panel(sys);
    layout_panel.draw();

    ImGui::Render();
    int w = 0, h = 0;
    glfwGetFramebufferSize(window, &w, &h);
    glViewport(0, 0, w, h);
    glClearColor(0.10f, 0.11f, 0.13f, 1.0f);
    glClear(GL_COLOR_BUFFER_BIT);
    ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
    ++frame;
    if (opt.frames > 0 && frame >= opt.frames) {
      if (!opt.screenshot.empty()) {
        ok = save_screenshot(opt.screenshot, w, h);
        if (!ok) std::fprintf(stderr, "tilelab-gui: error: cannot write %s\n", opt.screenshot.c_str());
      }
      glfwSetWindowShouldClose(window, 1);
    }
    glfwSwapBuffers(window);
  }

  ImGui_ImplOpenGL3_Shutdown();
  ImGui_ImplGlfw_Shutdown();
  ImGui::DestroyContext();
  glfwDestroyWindow(window);
  glfwTerminate();
  return ok ? 0 : 1;
}
