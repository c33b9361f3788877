-- gemm.fp8's per-CTA timeline at small M (issue 21 item 1, fp8m128t): for each case, CAPTURES runs of
-- k:run{timeline = true} (the probe build timed alternately with the kernel, cupti, then one clean capture after an L2
-- flush), each capture's Chrome trace written to $OUT/tl_<case>_<i>.json for tests/perf/gemm_fp8_m128_timeline.py.
-- TL_CASES: comma-separated case names of `cases` (default all); TL_CAPTURES (default 3), TL_REP (default 20).
-- TL_COMPILE_ONLY=1: compile every case's probe build and kernel (fills the kernel cache without a GPU).
local k = tl.kernel("gemm.fp8")
local function p(M, scaling) return {M = M, N = 7168, K = 2048, scaling = scaling or "tensor"} end
local cases = {
  -- (fp8m128t's call also had xr128 / pb128 / all128: exit_read and prefetch_b, taken out since; branch fp8m128t)
  {"d128", p(128), {}}, {"el128", p(128), {early_loads = true}}, {"s4_128", p(128), {num_stages = 4}},
  {"d128r", p(128, "row"), {}}, {"d64", p(64), {}}, {"d256", p(256), {}},
}
local want = {}
for name in (os.getenv("TL_CASES") or ""):gmatch("[%w_]+") do want[name] = true end
local captures = tonumber(os.getenv("TL_CAPTURES") or "3")
local rep = tonumber(os.getenv("TL_REP") or "20")
local out = os.getenv("OUT") or "."
for _, c in ipairs(cases) do
  local name, prob, cfg = c[1], c[2], c[3]
  if next(want) == nil or want[name] then
    if os.getenv("TL_COMPILE_ONLY") then
      local r1, e1 = k:compile(cfg, prob, {timeline = true})
      local r2, e2 = k:compile(cfg, prob)
      print(name, r1 and (r1.registers .. " regs probe, " .. r1.spills .. " B spills") or e1,
            r2 and (r2.registers .. " regs, " .. r2.spills .. " B spills") or e2)
    else
      for i = 1, captures do
        local r, err = k:run{problem = prob, config = cfg, rep = rep, warmup = 3, timeline = true, verify = (i == 1),
                             timer = "cupti"}
        if not r then
          print(name, i, "ERROR", tostring(err))
        else
          local path = string.format("%s/tl_%s_%d.json", out, name, i)
          if r.timeline then r.timeline:trace(path) end
          print(string.format("%-8s %d %s median %.4f ms min %.4f ms (cupti, probes off) span %.3f us %s", name, i,
                              r.passed and "PASS" or "FAIL", r.median_ms, r.min_ms,
                              r.timeline and r.timeline.duration_ns / 1000 or -1,
                              r.timeline and "" or tostring(r.timeline_error)))
        end
      end
    end
  end
end
