-- gemm.dequant's gemv path on a GPU in one run (issue 21 item 4): gemv configs checked on every decode test problem,
-- then the decode shapes timed with the default gemv config, variations of it and the wgmma path side by side.
-- Usage: tilelab run tests/perf/gemv_device.lua [check] [time] [kscan] [mscan] [auto]. Without a GPU it compiles
-- every case. check: CHECK_CONFIGS on the decode test problems; time: M (MS) x four projection shapes int4 group 128
-- and fp4 group 32 at the first two, the default gemv config, REGS_CONFIGS (int4) / FP4_CONFIGS (fp4) and the wgmma
-- path (at the M of WGMMA_MS); kscan: M 1, N 28672 at K of KSCAN (one grid, growing steps per CTA: the intercept is a
-- CTA's fixed cost) with KSCAN_CONFIGS; mscan: M 5-15, gemv and wgmma; auto: M 5-15 at the four shapes with the
-- default config. Environment: DEQUANT_REP (timed runs, default 20), OUT (every timed row also to OUT/gemv.json),
-- REGS_CONFIGS / FP4_CONFIGS (';'-separated k=v,... gemv configs to time beside the default, none by default),
-- CHECK_CONFIGS (';'-separated gemv configs the check runs; default a fixed list), CHECK_PROBLEMS (how many of the check
-- problems, default all), AUTO_SHAPES (how many shapes auto times, default 4), FP4=0 (no fp4 rows), MS (M values the
-- timings take, default "1,4,16"), WGMMA_MS (default: all of MS), KSCAN (default "1024,2048,4096,6144"), KSCAN_CONFIGS
-- (default "splits=2;schedule=stream").
local want = {}
for _, a in ipairs(arg) do want[a] = true end
if next(want) == nil then want = {check = true, time = true, mscan = true, auto = true} end
local rep = tonumber(os.getenv("DEQUANT_REP") or "20")
local k = tl.kernel("gemm.dequant")

local function parse(text)
  local c = {}
  for kv in text:gmatch("[^,]+") do
    local key, v = kv:match("([^=]+)=(.*)")
    c[key] = tonumber(v) or v
  end
  return c
end
local function with(base, extra)
  local c = {}
  for key, v in pairs(base) do c[key] = v end
  for key, v in pairs(extra or {}) do c[key] = v end
  return c
end

local cases = {}
local function add(kind, problem, config, r) cases[#cases + 1] = {kind = kind, problem = problem, config = config, rep = r} end

-- Correctness: odd N, K a multiple of 32 but not of the group, int4/fp4, bf16/f32 scales, groups 32/64/128, M 1..16.
if want.check then
  local p = {}
  local function pr(m, n, kk, w, g, sd) p[#p + 1] = {M = m, N = n, K = kk, wtype = w, group = g, scale_dtype = sd} end
  pr(1, 256, 512, "int4", 128, "bf16"); pr(5, 200, 224, "fp4", 32, "f32"); pr(16, 1000, 4128, "fp4", 64, "bf16")
  pr(7, 333, 160, "int4", 128, "f32"); pr(12, 517, 2080, "fp4", 128, "bf16"); pr(3, 77, 640, "int4", 64, "f32")
  pr(9, 250, 1184, "int4", 32, "bf16"); pr(15, 129, 416, "fp4", 128, "f32"); pr(1, 4096, 4096, "int4", 128, "bf16")
  pr(11, 8192, 8192, "fp4", 32, "f32"); pr(1, 100, 32, "int4", 32, "bf16")
  for _, w in ipairs({"int4", "fp4"}) do
    for _, g in ipairs({32, 64, 128}) do
      for _, sd in ipairs({"bf16", "f32"}) do pr(13, 190, 608, w, g, sd) end
    end
  end
  for _, m in ipairs({2, 4, 6, 8, 10, 14}) do pr(m, 71, 96, "int4", 32, "bf16") end
  local configs = {}
  for text in (os.getenv("CHECK_CONFIGS") or "batch=on;batch=off;batch=on,splits=3;warp_rows=32,prefetch=1"):gmatch("[^;]+") do
    configs[#configs + 1] = parse(text)
  end
  for pi, prob in ipairs(p) do
    if pi <= tonumber(os.getenv("CHECK_PROBLEMS") or "1000") then
      for _, c in ipairs(configs) do add("check", prob, with({path = "gemv"}, c), 1) end
    end
  end
end

-- Timings: M (MS) x the four projection shapes, int4 g128 (fp4 at two shapes): the default gemv config, REGS_CONFIGS,
-- the wgmma path.
local shapes = {{N = 8192, K = 8192}, {N = 28672, K = 8192}, {N = 8192, K = 28672}, {N = 4096, K = 14336}}
local ms = {}
for m in (os.getenv("MS") or "1,4,16"):gmatch("[^,]+") do ms[#ms + 1] = tonumber(m) end
if want.time then
  local wgmma_ms = {}
  for m in (os.getenv("WGMMA_MS") or os.getenv("MS") or "1,4,16"):gmatch("[^,]+") do wgmma_ms[tonumber(m)] = true end
  for _, m in ipairs(ms) do
    for i, s in ipairs(shapes) do
      local formats = {"int4"}
      if i <= 2 and os.getenv("FP4") ~= "0" then formats[2] = "fp4" end
      for _, w in ipairs(formats) do
        local prob = {M = m, N = s.N, K = s.K, wtype = w, group = w == "fp4" and 32 or 128}
        add("time", prob, {path = "gemv"}, rep)
        for text in (os.getenv(w == "int4" and "REGS_CONFIGS" or "FP4_CONFIGS") or ""):gmatch("[^;]+") do
          add("time", prob, with({path = "gemv"}, parse(text)), rep)
        end
        if wgmma_ms[m] then add("time", prob, {path = "wgmma"}, rep) end
      end
    end
  end
end
if want.kscan then
  for kk in (os.getenv("KSCAN") or "1024,2048,4096,6144"):gmatch("[^,]+") do
    for text in (os.getenv("KSCAN_CONFIGS") or "splits=2;schedule=stream"):gmatch("[^;]+") do
      add("kscan", {M = 1, N = 28672, K = tonumber(kk), wtype = "int4", group = 128}, with({path = "gemv"}, parse(text)), rep)
    end
  end
end
-- M 5..15 (where auto's threshold goes): gemv and wgmma at two shapes.
if want.mscan then
  for m = 5, 15 do
    for _, s in ipairs({shapes[1], shapes[3]}) do
      local prob = {M = m, N = s.N, K = s.K, wtype = "int4", group = 128}
      add("mscan", prob, {path = "gemv"}, rep)
      add("mscan", prob, {path = "wgmma"}, rep)
    end
  end
end

if want.auto then
  for m = 5, 15 do
    for si, s in ipairs(shapes) do
      if si <= tonumber(os.getenv("AUTO_SHAPES") or "4") then
        add("auto", {M = m, N = s.N, K = s.K, wtype = "int4", group = 128}, {}, rep)
      end
    end
  end
end

local dev = tl.device{measure = true}
if not dev then
  local failed = 0
  for _, c in ipairs(cases) do
    local r, err = k:compile(c.config, c.problem)
    if not r then
      failed = failed + 1
      print("compile failed: " .. tl.json_encode(c.problem) .. " " .. tl.json_encode(c.config) .. ": " .. tostring(err))
    end
  end
  print(string.format("no GPU: compiled %d cases, %d failed", #cases, failed))
  return
end
local hbm = dev.ceilings and dev.ceilings.hbm_bytes_per_s or 0
print(string.format("%s, measured HBM copy %.0f GB/s", dev.name, hbm * 1e-9))
local checks, bad, rows = 0, 0, {}
for _, c in ipairs(cases) do
  local r, err = k:run{problem = c.problem, config = c.config, rep = c.rep, warmup = c.kind == "check" and 0 or 5,
                       timer = c.kind == "check" and "events" or "cupti"}
  local p = tl.json_encode(c.problem):gsub('"', "")
  local cfg = tl.json_encode(c.config):gsub('"', "")
  if not r or not r.passed then
    bad = bad + 1
    print(string.format("%s FAIL %s %s: %s", c.kind, p, cfg, r and tostring(r.failure) or tostring(err)))
  end
  if c.kind == "check" then
    checks = checks + 1
  elseif r then
    local pct = hbm > 0 and 100 * r.gbps * 1e9 / hbm or 0
    print(string.format("%-5s M %2d %5dx%-5d %-4s %-44s %4s %8.1f us %6.0f GB/s %5.1f%%", c.kind, c.problem.M, c.problem.N,
                        c.problem.K, c.problem.wtype, cfg, r.passed and "PASS" or "FAIL", r.median_ms * 1e3, r.gbps, pct))
    rows[#rows + 1] = {kind = c.kind, problem = c.problem, config = c.config, us = r.median_ms * 1e3, gbps = r.gbps,
                       hbm_pct = pct, passed = r.passed, resources = r.resources}
  end
end
print(string.format("checks: %d runs, failures (all kinds): %d", checks, bad))
local out = os.getenv("OUT")
if out then tl.write_file(out .. "/gemv.json", tl.json_encode(rows, 1)) end
