-- The tl API on a GPU: device + ceilings, a GEMM against cuBLAS, a recorded timeline, a roofline, a fault and a
-- hang reported as nil + reason with the worker restarted after each; with two GPUs or more, a sweep on all of them.
-- Without a GPU it says so and passes.
-- Run: tilelab run --launch-timeout 5 tests/lua/gpu.lua OUTDIR      (ctest: lua.gpu, label gpu)

local outdir = assert(arg[1], "usage: gpu.lua OUTDIR")
assert(tl.mkdir(outdir))
local dev, why = tl.device()
if not dev then
  print("SKIPPED: " .. why)
  return
end
print(("%s (%s): %d SMs, %.0f GiB, ceilings %s"):format(dev.name, dev.arch, dev.sms, dev.memory / 2^30,
  dev.ceilings and ("HBM %.0f GB/s"):format(dev.ceilings.hbm_bytes_per_s * 1e-9) or tostring(dev.why_no_ceilings)))

local gemm = dev.arch:find("sm_90") and "gemm.wgmma" or "gemm.mma"
local r = assert(tl.kernel(gemm):run{problem = {M = 2048, N = 2048, K = 2048}, baseline = "cublas", rep = 10})
assert(r.passed, "GEMM failed: " .. tostring(r.failure))
assert(r.baseline and r.baseline.median_ms and r.baseline.median_ms > 0, "cuBLAS baseline timed")
print(("%s 2048^3: %.4f ms, %.0f TFLOP/s, efficiency %s; cuBLAS %.4f ms (speedup %.2fx)"):format(gemm, r.median_ms,
  r.tflops, r.efficiency and ("%.0f%%"):format(100 * r.efficiency) or "-", r.baseline.median_ms, r.baseline.speedup))

local t = assert(tl.kernel("gemm.mma"):run{problem = {M = 1024, N = 1024, K = 1024}, timeline = true, rep = 3})
assert(t.timeline and t.timeline.events > 0 and not t.timeline.model, "recorded timeline")
assert(tl.plot.timeline(t, {tracks = 16}):save(outdir .. "/timeline.png"))
print(("timeline: %d events, %.1f us"):format(t.timeline.events, t.timeline.duration_ns * 1e-3))

local roof = tl.plot.roofline{r, t, tl.kernel("copy"):run{problem = {n = 1 << 26}}}
assert(roof:save(outdir .. "/roofline.png"))

local f, ferr = tl.kernel("test.oob"):run{}
assert(f == nil and ferr:find("faulted", 1, true), "a fault is nil + reason: " .. tostring(ferr))
print("fault: " .. ferr:sub(1, 120))
local s, serr = tl.kernel("test.spin"):run{}
assert(s == nil and serr:find("timed out", 1, true), "a hang is nil + reason: " .. tostring(serr))
print("hang: " .. serr:sub(1, 120))
local again = assert(tl.kernel("copy"):run{problem = {n = 1 << 20}})
assert(again.passed, "the worker restarts after a fault")

-- Several GPUs: tl.sweep{gpus = "all"} hands the points to every GPU; on_result sees each point, with its GPU.
local gpus = #tl.info().devices
if gpus >= 2 then
  local seen, on = 0, {}
  local res = tl.sweep{kernel = "copy", problem = {n = 1 << 24, dtype = "f32"}, gpus = "all", progress = false,
                       store = false, space = {vec = {1, 2, 4}, threads = {64, 128, 256, 512}},
                       on_result = function(p) seen = seen + 1; on[p.gpu] = (on[p.gpu] or 0) + 1 end}
  assert(seen == 12 and res.summary.passed == 12, ("%d points seen, %d passed"):format(seen, res.summary.passed))
  assert(#res.summary.gpus == gpus, "the summary names every GPU")
  local counts = {}
  for g = 0, gpus - 1 do
    assert((on[g] or 0) > 0, "GPU " .. g .. " ran none of the points")
    counts[#counts + 1] = ("GPU %d ran %d"):format(g, on[g])
  end
  print("sweep on every GPU: " .. table.concat(counts, ", "))
end
print("gpu lua ok")
