-- bf16 activations x 4-bit weights (TileLang's dequantize_gemm / gemv examples) with gemm.dequant: decode shapes
-- (M 1, 4 and 16, bound by the weight bytes: GB/s against the measured HBM copy rate, both paths) and a prefill shape (M 4096,
-- bound by the tensor cores: TFLOP/s against bf16 gemm.wgmma at the same M, N, K in the same process).
-- Usage: tilelab run samples/dequant_gemm.lua [configs]. Without a GPU it compiles every case and says so.
-- `configs` also times the gemv config variations below at two decode shapes (what a sweep would pick from).
-- Environment: DEQUANT_REP (timed runs, default 30), OUT (a folder: every row also to OUT/dequant_gemm.json).
local rep = tonumber(os.getenv("DEQUANT_REP") or "30")
local variations = arg[1] == "configs"
local dequant, wgmma = tl.kernel("gemm.dequant"), tl.kernel("gemm.wgmma")

-- Decode: gemm.dequant's two paths side by side (auto picks gemv for M <= 8, where it measured faster), at the shapes
-- of a 7B-70B model's projections (N x K), int4 and fp4 with group 128 and, for 8192 x 8192, group 32.
local decode = {{N = 8192, K = 8192}, {N = 28672, K = 8192}, {N = 8192, K = 28672}, {N = 4096, K = 14336}}
local cases = {}
local function add(k, problem, config, timer) cases[#cases + 1] = {k = k, problem = problem, config = config or {}, timer = timer} end
for _, m in ipairs({1, 4, 16}) do
  for i, s in ipairs(decode) do
    local formats = {{wtype = "int4", group = 128}, {wtype = "fp4", group = 128}}
    if i == 1 then formats[3], formats[4] = {wtype = "int4", group = 32}, {wtype = "fp4", group = 32} end
    for _, w in ipairs(formats) do
      local p = {M = m, N = s.N, K = s.K, wtype = w.wtype, group = w.group}
      add(dequant, p, {path = "gemv"}, "cupti")
      add(dequant, p, {path = "wgmma"}, "cupti")
    end
  end
end
-- gemv config variations at two shapes (int4, group 128), M 1 and 16.
if variations then
  for _, m in ipairs({1, 16}) do
    for _, s in ipairs({decode[1], decode[2]}) do
      for _, c in ipairs({{warp_rows = 32}, {prefetch = 4, ctas_per_sm = 3}, {l2_prefetch = true}, {batch = "off"}}) do
        c.path = "gemv"
        add(dequant, {M = m, N = s.N, K = s.K, wtype = "int4", group = 128}, c, "cupti")
      end
    end
  end
end
local prefill = {M = 4096, N = 8192, K = 8192}
add(wgmma, prefill, {}, "events")
for _, w in ipairs({{wtype = "int4", group = 128}, {wtype = "fp4", group = 32}}) do
  local p = {M = prefill.M, N = prefill.N, K = prefill.K, wtype = w.wtype, group = w.group}
  add(dequant, p, {}, "events")
end
add(wgmma, prefill, {}, "events")  -- again: the baseline before and after, to see drift

local dev = tl.device()
if not dev then
  for _, c in ipairs(cases) do
    local r, err = c.k:compile(c.config, c.problem)
    print(string.format("%-13s %-40s %-34s %s", c.k.name, tl.json_encode(c.problem), tl.json_encode(c.config),
                        r and (r.registers .. " registers, " .. r.spills .. " B spills") or err))
  end
  print("no GPU: compiled only")
  return
end
local hbm = dev.ceilings and dev.ceilings.hbm_bytes_per_s or 0
print(string.format("%s, measured HBM copy %.0f GB/s", dev.name, hbm * 1e-9))
print(string.format("%-13s %-44s %-34s %4s %9s %8s %7s %5s", "kernel", "problem", "config", "ok", "us", "TFLOP/s",
                    "GB/s", "%HBM"))
local rows = {}
for _, c in ipairs(cases) do
  local r, err = c.k:run{problem = c.problem, config = c.config, rep = rep, warmup = 5, timer = c.timer}
  local p = tl.json_encode(c.problem):gsub('"', "")
  local cfg = tl.json_encode(c.config):gsub('"', "")
  if not r then
    print(string.format("%-13s %-44s %-34s ERROR %s", c.k.name, p, cfg, tostring(err)))
  else
    local pct = hbm > 0 and 100 * r.gbps * 1e9 / hbm or 0
    print(string.format("%-13s %-44s %-34s %4s %9.1f %8.1f %7.0f %5.1f", c.k.name, p, cfg, r.passed and "PASS" or "FAIL",
                        r.median_ms * 1e3, r.tflops, r.gbps, pct))
    if not r.passed then print("  failure: " .. tostring(r.failure)) end
    rows[#rows + 1] = {kernel = c.k.name, problem = c.problem, config = c.config, timer = r.timer, us = r.median_ms * 1e3,
                       tflops = r.tflops, gbps = r.gbps, hbm_pct = pct, passed = r.passed, resources = r.resources}
  end
end
local out = os.getenv("OUT")
if out then tl.write_file(out .. "/dequant_gemm.json", tl.json_encode(rows, 1)) end
