-- gemm.dequant's gemv path: a fixed list of decode cases, each timed with the default config and variants of it in
-- turn, ROUNDS rounds (the order within a case reversed every other round), plus the HBM copy of the same process.
-- Usage: tilelab run tests/perf/gemv_rounds.lua. Without a GPU it compiles every case (fills the NVRTC cache).
-- Environment: ROUNDS (default 2), DEQUANT_REP (timed runs a case, default 20), VERIFY=0 (each run checked at one
-- sampled position instead of the float64 reference's full sample: for timings whose configs were checked apart),
-- VERIFY=first (the first run of each case and config checked against the float64 reference, the others at one
-- sampled position), OUT (rows also to OUT/rounds.json),
-- CASES: ';'-separated cases "M,N,K,wtype[,group]|config|config|..." (group default 128, fp4 32; a config "k=v,...";
-- "-" = the default gemv config;
-- "wgmma" = path=wgmma; "auto" = the kernel's defaults, path auto), default the tile_rounds list below.
local rounds = tonumber(os.getenv("ROUNDS") or "2")
local rep = tonumber(os.getenv("DEQUANT_REP") or "20")
local verify = os.getenv("VERIFY") ~= "0"
local verify_first = os.getenv("VERIFY") == "first"
local checked = {}
local k = tl.kernel("gemm.dequant")
local default_cases = table.concat({
  "16,28672,8192,int4|-|tile_rounds=2|tile_rounds=3|tile_rounds=4|tile_rounds=3,ctas_per_sm=3",
  "16,8192,28672,int4|-|tile_rounds=2|tile_rounds=4|wgmma",
  "16,28672,8192,fp4|-|tile_rounds=3",
  "16,8192,8192,int4|-|tile_rounds=2|wgmma",
  "16,4096,14336,int4|-|tile_rounds=2",
  "8,28672,8192,int4|-|tile_rounds=2|tile_rounds=3",
  "8,8192,28672,int4|-|tile_rounds=2",
  "8,28672,8192,fp4|-|tile_rounds=3",
  "8,8192,8192,int4|-|tile_rounds=2",
  "4,28672,8192,int4|-|tile_rounds=2|tile_rounds=3",
  "4,8192,28672,int4|-|tile_rounds=2"}, ";")

local cases = {}
for text in (os.getenv("CASES") or default_cases):gmatch("[^;]+") do
  local parts = {}
  for piece in text:gmatch("[^|]+") do parts[#parts + 1] = piece end
  local m, n, kk, w, g = parts[1]:match("(%d+),(%d+),(%d+),(%w+),?(%d*)")
  local prob = {M = tonumber(m), N = tonumber(n), K = tonumber(kk), wtype = w,
                group = g ~= "" and tonumber(g) or (w == "fp4" and 32 or 128)}
  local configs = {}
  for i = 2, #parts do
    local c = {path = "gemv"}
    if parts[i] == "wgmma" then
      c.path = "wgmma"
    elseif parts[i] == "auto" then
      c.path = nil
    elseif parts[i] ~= "-" then
      for kv in parts[i]:gmatch("[^,]+") do
        local key, v = kv:match("([^=]+)=(.*)")
        c[key] = tonumber(v) or v
      end
    end
    configs[#configs + 1] = c
  end
  cases[#cases + 1] = {problem = prob, configs = configs}
end

local dev = tl.device{measure = true}
if not dev then
  local n, failed = 0, 0
  for _, c in ipairs(cases) do
    for _, cfg in ipairs(c.configs) do
      n = n + 1
      local r, err = k:compile(cfg, c.problem)
      if not r then
        failed = failed + 1
        print("compile failed: " .. tl.json_encode(c.problem) .. " " .. tl.json_encode(cfg) .. ": " .. tostring(err))
      end
    end
  end
  print(string.format("no GPU: compiled %d cases, %d failed", n, failed))
  return
end
local hbm = dev.ceilings and dev.ceilings.hbm_bytes_per_s or 0
print(string.format("%s, measured HBM copy %.0f GB/s", dev.name, hbm * 1e-9))
local rows, bad = {}, 0
for round = 1, rounds do
  for _, c in ipairs(cases) do
    local n = #c.configs
    for i = 1, n do
      local cfg = c.configs[round % 2 == 1 and i or n + 1 - i]
      local key = tl.json_encode(c.problem) .. " " .. tl.json_encode(cfg)
      local check = verify and not (verify_first and checked[key])
      checked[key] = true
      local r, err = k:run{problem = c.problem, config = cfg, rep = rep, warmup = 5, timer = "cupti", verify = check}
      local p = string.format("M %2d %5dx%-5d %-4s", c.problem.M, c.problem.N, c.problem.K, c.problem.wtype)
      local ctext = tl.json_encode(cfg):gsub('"', ""):gsub("path:gemv,?", ""):gsub("[{}]", "")
      if ctext == "" then ctext = "default" end
      if cfg.path == nil then ctext = "auto" .. (next(cfg) and "," .. ctext or "") end
      if not r or not r.passed then
        bad = bad + 1
        print(string.format("FAIL r%d %s %s: %s", round, p, ctext, r and tostring(r.failure) or tostring(err)))
      end
      if r then
        local pct = hbm > 0 and 100 * r.gbps * 1e9 / hbm or 0
        print(string.format("r%d %s %-28s %4s %8.1f us (min %6.1f) %6.0f GB/s %5.1f%%", round, p, ctext,
                            r.passed and "PASS" or "FAIL", r.median_ms * 1e3, (r.min_ms or 0) * 1e3, r.gbps, pct))
        rows[#rows + 1] = {round = round, problem = c.problem, config = cfg, us = r.median_ms * 1e3,
                           min_us = (r.min_ms or 0) * 1e3, gbps = r.gbps, hbm_pct = pct, passed = r.passed,
                           checked = check, hbm_gbps = hbm * 1e-9}
      end
    end
  end
end
print(string.format("timed %d runs, failures: %d", #rows, bad))
local out = os.getenv("OUT")
if out then tl.write_file(out .. "/rounds.json", tl.json_encode(rows, 1)) end
