-- TileLab quickstart: what this machine offers, a layout plot, a modelled pipeline timeline, a GEMM checked and
-- timed against cuBLAS, and its roofline — written under out/quickstart/ (or the directory given).
-- Run: tilelab run samples/quickstart.lua [OUTDIR]      (what `make run` does on a machine with no display)
-- Without a GPU the GPU steps (run, cuBLAS, roofline) say why they are skipped; the rest works everywhere.

local outdir = arg[1] or "out/quickstart"
assert(tl.mkdir(outdir))

local info = tl.info()
print(("TileLab %s quickstart -> %s/"):format(tl.version, outdir))
print(("host:  %s, %s (%d cores)"):format(info.host.hostname, info.host.cpu, info.host.cpu_cores))
print(("CUDA:  built with %s, runtime %s, driver %s, NVRTC %s"):format(
  info.toolkit.built_with, info.toolkit.cuda_runtime, info.toolkit.cuda_driver, info.toolkit.nvrtc))

if #info.devices == 0 then
  print("GPU:   none (" .. info.why_no_device .. ")")
  print("       GPU steps skipped: kernel runs, timings and measured ceilings need a GPU.")
else
  for _, d in ipairs(info.devices) do
    print(("GPU %d: %s, %s, %d SMs, %.1f GiB"):format(d.index, d.name, d.arch, d.sm_count,
      d.memory_bytes / 2^30))
  end
end

assert(tl.write_file(outdir .. "/device.json", tl.json_encode(info, 2)))
print("wrote " .. outdir .. "/device.json")

-- A layout: the A operand of mma.m16n8k16 (f16), thread by thread.
assert(tl.layout("mma.m16n8k16.f16.A"):plot{color = "thread"}:save(outdir .. "/mma_A.png"))
print("wrote " .. outdir .. "/mma_A.png (the mma.m16n8k16 A fragment, coloured by thread)")

-- A pipeline timeline computed from the config (no GPU needed; labelled MODEL).
local hopper = #info.devices > 0 and info.devices[1].arch:find("sm_9") ~= nil
local gemm = (hopper or #info.devices == 0) and "gemm.wgmma" or "gemm.mma"
local problem = {M = 4096, N = 4096, K = 4096}
local model = tl.model_timeline{kernel = gemm, problem = {M = 1024, N = 1024, K = 1024}}
assert(model:plot{tracks = 24}:save(outdir .. "/timeline_model.png"))
print(("wrote %s/timeline_model.png (%s, MODEL: %d events)"):format(outdir, gemm, model.events))

-- The GPU's measured ceilings (measured once, a few seconds, then cached): what efficiencies are relative to.
local dev = tl.device()
if dev and dev.ceilings then
  print(("ceilings: HBM %.2f TB/s, bf16 tensor %.0f TFLOP/s, FP32 %.1f TFLOP/s (measured)"):format(
    dev.ceilings.hbm_bytes_per_s * 1e-12, dev.ceilings.bf16_tc_flops * 1e-12, dev.ceilings.fp32_flops * 1e-12))
elseif dev then
  print("ceilings: not measured: " .. tostring(dev.why_no_ceilings))
end

-- A GEMM checked against the float64 reference and timed against cuBLAS in the same worker.
local run, why = tl.kernel(gemm):run{problem = problem, rep = 20, warmup = 3, baseline = "cublas"}
if not run then
  print("GEMM:  skipped: " .. why)
  print("roofline: skipped (it places runs on the measured ceilings; there is no run)")
else
  print(("GEMM:  %s %dx%dx%d: %.3f ms, %.0f TFLOP/s%s, rel err %.1e, %s"):format(gemm, problem.M, problem.N,
    problem.K, run.median_ms, run.tflops,
    run.efficiency and (" (%.0f%% of the %s roof)"):format(100 * run.efficiency, run.bound) or "",
    run.rel_err, run.passed and "PASS" or "FAIL"))
  if run.baseline and run.baseline.median_ms then
    print(("cuBLAS: %.3f ms, %.0f TFLOP/s (ours / cuBLAS throughput %.2fx)"):format(run.baseline.median_ms,
      run.baseline.tflops, run.baseline.speedup))
  elseif run.baseline then
    print("cuBLAS: not run: " .. tostring(run.baseline.error))
  end
  assert(tl.write_file(outdir .. "/gemm_run.json", tl.json_encode(run.record, 2)))
  local ok, roof = pcall(tl.plot.roofline, {run})
  if ok then
    assert(roof:save(outdir .. "/roofline.png"))
    print("wrote " .. outdir .. "/roofline.png")
  else
    print("roofline: skipped: " .. tostring(roof))
  end
end
