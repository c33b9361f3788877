-- The desktop app's GPU paths on a real GPU, scripted (tests/perf/gui_device.sh runs it under Xvfb): measure the
-- ceilings, open gemm.wgmma at 4096^3, Run + verify, Capture timeline, Bench vs cuBLAS, a 4-point sweep, SASS;
-- then one screenshot per panel into $TL_GUI_OUT. Each step is checked on its own: a failure prints and the next
-- step still runs; a table at the end says what each produced.
local out = os.getenv("TL_GUI_OUT") or "/tmp/tlgui_out"
local results = {}

local function step(name, f)
  local t0 = os.clock()
  local ok, what = pcall(f)
  what = tostring(what or "")
  results[#results + 1] = {name = name, ok = ok, what = what}
  print(string.format("step %-12s %s  %s", name, ok and "ok  " or "FAIL", what))
  io.stdout:flush()
  return ok
end

local function last_run(kind)
  local runs = gui.runs()
  for i = #runs, 1, -1 do
    if runs[i].kind == kind then return runs[i] end
  end
end

local function run_summary(r)
  local s = string.format("run %d %s %s median %.4f ms %.1f TFLOP/s eff %.0f%% rel_err %.1e", r.id, r.kind,
                          r.passed and "PASS" or ("FAIL " .. r.failure), r.median_ms, r.tflops,
                          100 * r.efficiency, r.rel_error)
  if r.baseline then
    s = s .. string.format("; %s %.4f ms %.1f TFLOP/s %s", r.baseline.name, r.baseline.median_ms, r.baseline.tflops,
                           r.baseline.error)
  end
  if r.timeline_events then
    s = s .. string.format("; timeline %d events, %d tracks", r.timeline_events, r.timeline_tracks)
  end
  if r.timeline_error ~= "" then s = s .. "; timeline error: " .. r.timeline_error end
  return s .. (r.stored_id > 0 and ("; stored as row " .. r.stored_id) or "; NOT stored")
end

step("device", function()
  local d = gui.device()
  assert(d.has_device, "no GPU: " .. d.why_no_device)
  return d.name .. " " .. d.arch
end)

step("ceilings", function()
  gui.measure_ceilings()
  gui.wait(240)
  local c = gui.device().ceilings
  assert(c, "no ceilings after measuring")
  return string.format("HBM %.0f GB/s, L2 %.0f GB/s, bf16 tensor %.0f TFLOP/s, fp32 %.1f TFLOP/s",
                       c.hbm_bytes_per_s / 1e9, c.l2_bytes_per_s / 1e9, c.bf16_tc_flops / 1e12, c.fp32_flops / 1e12)
end)

step("open", function()
  gui.kernel("gemm.wgmma")
  gui.problem{M = 4096, N = 4096, K = 4096}
  gui.compile()
  gui.wait(300)
  local st = gui.state()
  assert(st.valid, st.reason)
  assert(st.compile and st.compile.ok, st.compile and st.compile.error or "no compile")
  return "gemm.wgmma 4096^3 compiled, " .. st.compile.registers .. " registers"
end)

for _, kind in ipairs{"run", "timeline", "bench"} do
  step(kind, function()
    gui.run(kind)
    gui.wait(300)
    local r = last_run(kind)
    assert(r, "no " .. kind .. " run came back")
    local s = run_summary(r)
    assert(r.passed, s)
    if kind == "bench" then assert(r.baseline and r.baseline.median_ms > 0, "no cuBLAS time: " .. s) end
    if kind == "timeline" then assert((r.timeline_events or 0) > 0, "no timeline events: " .. s) end
    return s
  end)
end

step("sweep", function()
  gui.sweep{space = "block_N=128,256;num_stages=2,3", x = "num_stages", y = "block_N", metric = "tflops"}
  gui.wait(400)
  local s = gui.sweep_state()
  assert(not s.running, "still running")
  assert(s.heatmap, "no heat map: " .. tostring(s.heatmap_error))
  local cells = {}
  for _, c in ipairs(s.heatmap.cells) do
    cells[#cells + 1] = string.format("N%s/st%s=%s", c.y, c.x, c.value and string.format("%.0f", c.value) or c.status)
  end
  assert(s.any_ran, "no point ran: " .. s.summary)
  return s.summary .. "; tflops " .. table.concat(cells, " ")
end)

step("results", function()
  gui.results_filter("gemm.wgmma")
  local rows = gui.results_history("gemm.wgmma")
  local stored, passed = 0, 0
  for _, r in ipairs(rows) do
    if r.id > 0 then stored = stored + 1 end
    if r.status == "passed" then passed = passed + 1 end
  end
  assert(stored >= 5, "expected the 3 runs and the sweep's points stored, found " .. stored .. " stored rows")
  return #rows .. " rows of gemm.wgmma, " .. stored .. " stored, " .. passed .. " passed"
end)

step("sass", function()
  gui.sass()
  gui.wait(120)
  local s = gui.state().sass
  assert(s and s.text ~= "", s and s.error or "no SASS")
  return s.lines .. " lines of SASS from " .. s.tool
end)

-- The bench is the selected run: the sidebar shows it, the roofline rings it (its cuBLAS point beside it), the
-- timeline panel keeps the captured timeline.
for _, panel in ipairs{"Device", "Results", "Roofline", "Timeline", "Sweep", "PTX"} do
  gui.screenshot(panel, out .. "/gpu_" .. panel:lower() .. ".png")
end

print("== gui device steps")
local failed = 0
for _, r in ipairs(results) do
  print(string.format("%-10s %s  %s", r.name, r.ok and "ok  " or "FAIL", r.what:sub(1, 200)))
  if not r.ok then failed = failed + 1 end
end
print(string.format("== %d of %d steps ok; screenshots queued into %s", #results - failed, #results, out))
