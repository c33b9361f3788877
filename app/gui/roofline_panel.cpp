// Roofline panel (this session's runs and loaded run files on the measured ceilings; hover, click to select) and
// the Device panel.
#include <cmath>

#include <imgui.h>

#include "app/gui/app.hpp"
#include "runtime/device/device_profile.hpp"
#include "runtime/results/roofline.hpp"

namespace tl::gui {

Status RooflinePanel::load_profile(App& app, const std::string& path) {
  auto p = load_device_profile(path);
  if (!p) return p.status();
  std::snprintf(m_profile, sizeof(m_profile), "%s", path.c_str());
  app.set_ceilings(p->ceilings, "device profile " + path + " (" + p->device_name() + ")");
  app.workspace().device_profile = path;
  m_built_ceilings = nullptr;
  return Status::success();
}

Status RooflinePanel::load_runs(const std::string& path) {
  auto r = load_run_records(path);
  if (!r) return r.status();
  std::snprintf(m_runs_path, sizeof(m_runs_path), "%s", path.c_str());
  m_file_records = std::move(*r);
  m_built_runs = ~std::size_t{0};
  return Status::success();
}

void RooflinePanel::rebuild(App& app, ImVec2 canvas) {
  m_scene.reset();
  m_error.clear();
  m_point_run.clear();
  auto model = Roofline::from_ceilings(*app.ceilings());
  if (!model) {
    m_error = model.status().message();
    return;
  }
  std::vector<RooflinePoint> points;
  std::vector<std::string> skipped;
  auto add = [&](const nlohmann::json& record, int run) {
    auto p = roofline_point(*model, record);
    if (!p) {
      skipped.push_back(p.status().message());
      return;
    }
    points.push_back(std::move(*p));
    m_point_run.push_back(run);
  };
  for (const auto& r : m_file_records) add(r, -1);
  for (const auto& r : app.runs()) {
    add(r.json, r.id);
    // A bench's baseline (cuBLAS, cuDNN) on the same problem: its own point, the kernel's record timed at its median.
    const auto& b = r.record.baseline;
    if (b && b->error.empty() && b->time_ms.median > 0 && !r.record.failure) {
      nlohmann::json base = r.json;
      base["kernel"] = b->name;
      base["name_expression"] = b->name;
      base["config"] = nlohmann::json::object();
      base["time_ms"] = b->time_ms;
      base.erase("timeline");
      add(base, r.id);
    }
  }
  viz::RooflineOptions o;
  o.color_by = m_color_by;
  // Built at the canvas' size (in scene units: pixels over the UI scale), so the plot fills the panel at zoom 1.
  o.width = std::max(440.0, static_cast<double>(canvas.x / app.ui_scale()));
  o.height = std::max(300.0, static_cast<double>(canvas.y / app.ui_scale()));
  o.theme = app.plot_theme();
  auto scene = viz::build_roofline_scene(*model, points, o);
  if (!scene) {
    m_error = scene.status().message();
    return;
  }
  m_scene = std::move(*scene);
  for (const auto& s : skipped) m_scene->notes.push_back(s);
  m_view.fitted = false;
}

void RooflinePanel::draw(App& app) {
  ImGui::SetNextItemWidth(ui(260));
  ImGui::InputTextWithHint("##profile", "device profile (tilelab info --save-profile)", m_profile, sizeof(m_profile));
  ImGui::SameLine();
  if (ImGui::Button("Load profile")) {
    Status st = load_profile(app, m_profile);
    if (!st) app.message(Message::Level::error, st.message());
  }
  // Each group (a path and its button) goes on the line while it fits, else on the next: nothing runs off the panel.
  same_line_if_room(ui(220) + ImGui::GetStyle().ItemSpacing.x + button_width("Load runs"));
  ImGui::SetNextItemWidth(ui(220));
  ImGui::InputTextWithHint("##runs", "run records (.json / .jsonl)", m_runs_path, sizeof(m_runs_path));
  ImGui::SameLine();
  if (ImGui::Button("Load runs")) {
    Status st = load_runs(m_runs_path);
    if (!st) app.message(Message::Level::error, st.message());
  }
  same_line_if_room(ui(110) + label_width("colour by"));
  ImGui::SetNextItemWidth(ui(110));
  if (ImGui::InputTextWithHint("colour by", "kernel", m_color_by, sizeof(m_color_by),
                               ImGuiInputTextFlags_EnterReturnsTrue))
    m_built_runs = ~std::size_t{0};
  if (!app.ceilings()) {
    ImGui::TextWrapped("No ceilings: measure this GPU's (Device tab, or tilelab info --measure) or load a device "
                       "profile saved on one (tilelab info --measure --save-profile FILE).");
    return;
  }
  const std::size_t n = app.runs().size() + m_file_records.size();
  text_fit_dim("ceilings: " + app.ceilings_from() +
               (n == 0 ? "; no runs yet: run or bench a kernel, or load run records" : ""));
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  const ImVec2 size = ImGui::GetContentRegionAvail();
  if (n != m_built_runs || m_built_ceilings != &*app.ceilings() || m_built_selected != app.selected_run ||
      m_built_size.x != size.x || m_built_size.y != size.y || m_built_theme != app.theme_generation()) {
    m_built_runs = n;
    m_built_ceilings = &*app.ceilings();
    m_built_selected = app.selected_run;
    m_built_size = size;
    m_built_theme = app.theme_generation();
    rebuild(app, size);
  }
  if (!m_error.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, error_color());
    ImGui::TextWrapped("%s", m_error.c_str());
    ImGui::PopStyleColor();
    return;
  }
  if (!m_scene) return;
  const std::int64_t hovered = viz::scene_canvas("##roofline", m_scene->scene, m_view, size);
  // The selected run: a ring around its point.
  for (const auto& dp : m_scene->points) {
    if (dp.point < m_point_run.size() && m_point_run[dp.point] == app.selected_run && app.selected_run >= 0) {
      ImVec2 c = m_view.to_screen(origin, dp.x, dp.y);
      ImGui::GetWindowDrawList()->AddCircle(c, ui(9), IM_COL32(255, 200, 0, 255), 0, ui(2.5f));
    }
  }
  if (hovered >= 0 && static_cast<std::size_t>(hovered) < m_scene->hover.size())
    ImGui::SetTooltip("%s", m_scene->hover[static_cast<std::size_t>(hovered)].c_str());
  // Click: the nearest point within 12 px selects its run (Results and Timeline follow).
  if (ImGui::IsItemClicked(ImGuiMouseButton_Left)) {
    const ImVec2 m = ImGui::GetIO().MousePos;
    double best = ui(12) * ui(12);
    int run = -2;
    for (const auto& dp : m_scene->points) {
      ImVec2 c = m_view.to_screen(origin, dp.x, dp.y);
      const double d = (c.x - m.x) * (c.x - m.x) + (c.y - m.y) * (c.y - m.y);
      if (d < best && dp.point < m_point_run.size()) {
        best = d;
        run = m_point_run[dp.point];
      }
    }
    if (run >= 0) {
      app.selected_run = run;
      if (const RunEntry* e = app.find_run(run); e && e->timeline) app.timeline.set(e->timeline, "run " + std::to_string(run));
    }
  }
}

void DevicePanel::draw(App& app) {
  const SystemInfo& sys = app.system();
  ImGui::TextWrapped("Host: %s (%s)", sys.host.hostname.c_str(), sys.host.os.c_str());
  ImGui::TextWrapped("CPU: %s, %d cores", sys.host.cpu.c_str(), sys.host.cpu_cores);
  ImGui::TextWrapped("CUDA: built with %s, runtime %s, driver %s, NVRTC %d.%d", sys.toolkit.built_with.c_str(),
              version_string(sys.toolkit.runtime_version).c_str(), version_string(sys.toolkit.driver_version).c_str(),
              sys.toolkit.nvrtc_major, sys.toolkit.nvrtc_minor);
  ImGui::Separator();
  if (sys.devices.empty()) ImGui::TextWrapped("No GPU: %s", sys.why_no_device.c_str());
  for (const auto& d : sys.devices) {
    ImGui::TextWrapped("GPU %d: %s", d.index, d.name.c_str());
    ImGui::Bullet();
    ImGui::TextWrapped("%s, %d SMs, %.1f GiB, L2 %.0f MiB", d.arch().c_str(), d.sm_count,
                      static_cast<double>(d.memory_bytes) / double(1ull << 30), d.l2_bytes / 1048576.0);
    ImGui::Bullet();
    ImGui::TextWrapped("SM clock %d MHz, memory %d-bit @ %d MHz (%.0f GB/s theoretical)", d.clock_khz / 1000,
                      d.memory_bus_bits, d.memory_clock_khz / 1000, d.theoretical_dram_bytes_per_s() / 1e9);
    ImGui::Bullet();
    ImGui::TextWrapped("shared memory %d KiB per block (opt-in), %d KiB per SM; %d registers per SM",
                      d.smem_per_block_optin / 1024, d.smem_per_sm / 1024, d.regs_per_sm);
  }
  ImGui::Separator();
  ImGui::TextWrapped("Compile target: %s (%s)", app.limits().arch.c_str(),
              sys.devices.empty() ? "no GPU: what CI compiles for" : "this GPU");
  ImGui::BeginDisabled(!app.has_device() || app.measuring_ceilings());
  if (ImGui::Button(app.measuring_ceilings() ? "Measuring..." : "Measure ceilings")) app.measure_ceilings();
  ImGui::EndDisabled();
  if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled))
    ImGui::SetTooltip("HBM, L2, shared memory, FP32 and tensor-core rates of this GPU (about 10 s, then cached), as "
                      "`tilelab info --measure`");
  if (!app.ceilings()) {
    ImGui::TextWrapped("Measured ceilings: none (Measure ceilings, tilelab info --measure on this GPU, or load a "
                       "device profile in the Roofline panel)");
    return;
  }
  const Ceilings& c = *app.ceilings();
  ImGui::TextWrapped("Measured ceilings (%s)", app.ceilings_from().c_str());
  if (ImGui::BeginTable("##ceilings", 2, ImGuiTableFlags_Borders | ImGuiTableFlags_RowBg | ImGuiTableFlags_SizingFixedFit)) {
    auto row = [](const char* name, double v, const char* unit) {
      if (v <= 0) return;
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(name);
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(viz::si_text(v, unit).c_str());
    };
    row("HBM copy", c.hbm_bytes_per_s, "B/s");
    row("L2 read", c.l2_bytes_per_s, "B/s");
    row("shared memory", c.smem_bytes_per_s, "B/s");
    row("FP32 FMA", c.fp32_flops, "FLOP/s");
    row("bf16 tensor", c.bf16_tc_flops, "FLOP/s");
    row("bf16 tensor, sustained", c.bf16_tc_sustained_flops, "FLOP/s");
    row("fp16 tensor", c.fp16_tc_flops, "FLOP/s");
    row("fp8 tensor", c.fp8_tc_flops, "FLOP/s");
    ImGui::EndTable();
  }
  if (!c.measured_at.empty()) text_fit_dim("measured " + c.measured_at + " on " + c.device_name);
}

}  // namespace tl::gui
