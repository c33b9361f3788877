-- gemm.dequant at prefill shapes (M 4096, N 8192, K 8192: issue 21's; and M 8192, N 8192, K 4096) beside bf16
-- gemm.wgmma in the same process: int4 and fp4 weights, scale groups 32 and 128, every run checked against the
-- float64 reference. The target is 0.9x gemm.wgmma's rate; `x` divides by the mean of gemm.wgmma's runs at that shape
-- before and after its dequant rows.
-- Usage: tilelab run tests/perf/gemm_dequant_prefill.lua (a GPU; without one it compiles every case). Environment:
-- DEQUANT_REP (timed runs, default 30), DEQUANT_PASSES (the dequant rows again, default 1), DEQUANT_SHAPES (other
-- shapes instead, as MxNxK separated by spaces), DEQUANT_FORMATS (the weight formats, "wtype/group" separated by
-- spaces; default int4/128 int4/32 fp4/128 fp4/32), OUT (a folder: every row also to OUT/dequant_prefill.json).
local rep = tonumber(os.getenv("DEQUANT_REP") or "30")
local passes = tonumber(os.getenv("DEQUANT_PASSES") or "1")
local dequant, wgmma = tl.kernel("gemm.dequant"), tl.kernel("gemm.wgmma")
local shapes = {}
for m, n, k in (os.getenv("DEQUANT_SHAPES") or "4096x8192x8192 8192x8192x4096"):gmatch("(%d+)x(%d+)x(%d+)") do
  shapes[#shapes + 1] = {M = tonumber(m), N = tonumber(n), K = tonumber(k)}
end
local nshapes = #shapes
local formats = {}
for w, g in (os.getenv("DEQUANT_FORMATS") or "int4/128 int4/32 fp4/128 fp4/32"):gmatch("(%w+)/(%d+)") do
  formats[#formats + 1] = {w, tonumber(g)}
end
-- Per shape: gemm.wgmma, the dequant rows, gemm.wgmma again; base[si] = {first, last} indexes its two gemm.wgmma runs.
local cases, base = {}, {}
for si = 1, nshapes do
  local shape = shapes[si]
  local first = #cases + 1
  cases[first] = {k = wgmma, problem = shape, shape = si}
  for _ = 1, passes do
    for _, w in ipairs(formats) do
      cases[#cases + 1] = {k = dequant, shape = si,
                           problem = {M = shape.M, N = shape.N, K = shape.K, wtype = w[1], group = w[2]}}
    end
  end
  cases[#cases + 1] = {k = wgmma, problem = shape, shape = si}
  base[si] = {first, #cases}
end
-- Checked only (float64 reference, rep 1): a partial last stage and group, N past the last tile, fp4 with bf16 scales.
for _, p in ipairs({{M = 1000, N = 1000, K = 4128, wtype = "fp4", group = 32},
                    {M = 257, N = 4100, K = 1056, wtype = "fp4", group = 64},
                    {M = 1024, N = 520, K = 4160, wtype = "int4", group = 32}}) do
  cases[#cases + 1] = {k = dequant, problem = p, check = true}
end

if not tl.device() then
  for _, c in ipairs(cases) do
    local r, err = c.k:compile({}, c.problem)
    print(c.k.name, tl.json_encode(c.problem), r and (r.registers .. " registers, " .. r.spills .. " B spills") or err)
  end
  print("no GPU: compiled only")
  return
end
local results = {}
for i, c in ipairs(cases) do
  local r, err = c.k:run{problem = c.problem, rep = c.check and 1 or rep, warmup = c.check and 0 or 5}
  results[i] = r or {error = err}
end
local function tflops(i) return results[i].tflops or 0 end
for si = 1, nshapes do
  local s, b = shapes[si], base[si]
  base[si] = (tflops(b[1]) + tflops(b[2])) / 2
  print(string.format("gemm.wgmma bf16 %dx%dx%d: %.1f / %.1f TFLOP/s (before / after)", s.M, s.N, s.K, tflops(b[1]),
                      tflops(b[2])))
end
print(string.format("%-13s %-16s %-6s %5s %4s %9s %9s %8s %6s", "kernel", "MxNxK", "wtype", "group", "ok", "us",
                    "min us", "TFLOP/s", "x"))
local rows = {}
for i, c in ipairs(cases) do
  local r, p = results[i], c.problem
  if r.error then
    print(c.k.name, tl.json_encode(p), "ERROR " .. tostring(r.error))
  else
    local x = c.shape and string.format("%6.3f", r.tflops / base[c.shape]) or "     -"
    print(string.format("%-13s %-16s %-6s %5s %4s %9.1f %9.1f %8.1f %s%s", c.k.name, p.M .. "x" .. p.N .. "x" .. p.K,
                        p.wtype or "bf16", tostring(p.group or "-"), r.passed and "PASS" or "FAIL", r.median_ms * 1e3,
                        (r.min_ms or 0) * 1e3, r.tflops, x,
                        c.check and string.format("  (check, rel_err %.1e)", r.rel_err or -1) or ""))
    rows[#rows + 1] = {kernel = c.k.name, problem = p, check = c.check or false, median_ms = r.median_ms,
                       min_ms = r.min_ms, tflops = r.tflops, passed = r.passed, rel_err = r.rel_err, order = i}
    if not r.passed then print("  failure: " .. tostring(r.failure)) end
  end
end
local out = os.getenv("OUT")
if out then tl.write_file(out .. "/dequant_prefill.json", tl.json_encode(rows, 1)) end
