-- Issue 21's bf16 targets: gemm.wgmma configs at the eight shapes (and any others), each run beside cuBLAS on the same
-- buffers in this one worker, configs alternated (reversed on every second pass); checks of configs on odd shapes
-- against the float64 reference; a summary per shape and config (mean ms, mean x) and each config's geometric mean x.
-- Usage: tilelab run tests/perf/gemm_bf16.lua (a GPU). GEMM_COMPILE_ONLY=1: compile every case (no GPU needed; fills
-- the kernel cache a GPU machine reuses).
-- Knobs: GEMM_CONFIGS  configs, ';'-separated, each 'k=v,k=v' ('' = the defaults), default '' and block_N=192;
--        GEMM_SHAPES   'M,N,K' ';'-separated (default the eight issue-21 shapes);
--        GEMM_EXTRA    'M,N,K:config' ';'-separated: more configs timed at one shape only (after the others, same passes);
--        GEMM_CHECKS   'M,N,K[,trans_B=false][,out_dtype=f32]:config' ';'-separated, verified (default none);
--        GEMM_PASSES (2), GEMM_REP (20); GEMM_VERIFY=first: the first timed run of each (shape, config) checked
--        against the float64 reference (the others at one sampled position, as by default).
--        Every record goes to $OUT/gemm_bf16.json when OUT is set; GEMM_JSONL=1 also prints each row's record
--        (times, cuBLAS's, the pass) as a line 'JSON {...}' as it is timed (what a killed run leaves).
local rep = tonumber(os.getenv("GEMM_REP") or "20")
local passes = tonumber(os.getenv("GEMM_PASSES") or "2")

local function split(s, sep)
  local out = {}
  for part in (s .. sep):gmatch("(.-)" .. sep) do out[#out + 1] = part end
  return out
end
local function kv(s)  -- 'k=v,k=v' -> table
  local t = {}
  for _, item in ipairs(split(s, ",")) do
    local k, v = item:match("^%s*([%w_]+)=(.-)%s*$")
    if k then t[k] = tonumber(v) or v end
  end
  return t
end
local function shape(s)  -- 'M,N,K[,k=v...]' -> problem
  local f = split(s, ",")
  local p = {M = tonumber(f[1]), N = tonumber(f[2]), K = tonumber(f[3])}
  for i = 4, #f do for k, v in pairs(kv(f[i])) do p[k] = v end end
  return p
end
local function text(t) return tl.json_encode(t) end

local configs = split(os.getenv("GEMM_CONFIGS") or ";block_N=192", ";")
local shapes = split(os.getenv("GEMM_SHAPES") or
                     "3000,5000,4096;4096,4096,512;8192,8192,8192;4096,4096,4096;8192,8192,1024;6144,6144,6144;" ..
                     "2048,8192,8192;16384,16384,4096", ";")
local cases = {}
for _, c in ipairs(split(os.getenv("GEMM_CHECKS") or "", ";")) do
  if c ~= "" then
    local p, cfg = c:match("^([^:]*):?(.*)$")
    cases[#cases + 1] = {problem = shape(p), config = kv(cfg), verify = true}
  end
end
local extra = {}
for _, e in ipairs(split(os.getenv("GEMM_EXTRA") or "", ";")) do
  if e ~= "" then
    local p, cfg = e:match("^([^:]*):(.*)$")
    extra[#extra + 1] = {p, cfg}
  end
end
local verify_first = os.getenv("GEMM_VERIFY") == "first"
local jsonl = os.getenv("GEMM_JSONL") == "1"
local first_seen = {}
for pass = 1, passes do
  for _, s in ipairs(shapes) do
    local list = {}
    for _, c in ipairs(configs) do list[#list + 1] = c end
    for _, e in ipairs(extra) do if e[1] == s then list[#list + 1] = e[2] end end
    for i = 1, #list do
      local c = list[pass % 2 == 1 and i or #list + 1 - i]
      local key = s .. " | " .. text(kv(c))
      local check = verify_first and not first_seen[key]
      first_seen[key] = true
      cases[#cases + 1] = {problem = shape(s), config = kv(c), verify = false, check = check, shape = s,
                           label = text(kv(c)), pass = pass}
    end
  end
end

if os.getenv("GEMM_COMPILE_ONLY") then
  local seen = {}
  for _, c in ipairs(cases) do
    local key = text(c.problem) .. " " .. text(c.config)
    if not seen[key] then
      seen[key] = true
      local r, err = tl.kernel("gemm.wgmma"):compile(c.config, c.problem)
      print(key, r and (r.registers .. " registers, " .. r.spills .. " B spills") or err)
    end
  end
  return
end

local records, sums, order = {}, {}, {}
print(string.format("%-40s %-36s %5s %8s %8s %7s %7s %5s %8s", "problem", "config", "ok", "ms", "min", "TFLOP/s",
                    "cuBLAS", "x", "rel_err"))
for _, c in ipairs(cases) do
  local r, err = tl.kernel("gemm.wgmma"):run{problem = c.problem, config = c.config, rep = c.verify and 3 or rep,
                                             warmup = c.verify and 1 or 5, baseline = "cublas",
                                             verify = c.verify or c.check or false}
  if not r then
    print(string.format("%-40s %-36s ERROR %s", text(c.problem), text(c.config), tostring(err)))
  else
    local b = r.baseline or {}
    local x = (b.tflops and b.tflops > 0) and r.tflops / b.tflops or 0
    print(string.format("%-40s %-36s %5s %8.4f %8.4f %7.1f %7.1f %5.3f %8.1e", text(c.problem), text(c.config),
                        r.passed and "PASS" or "FAIL", r.median_ms, r.min_ms or -1, r.tflops, b.tflops or 0, x,
                        r.rel_err or -1))
    if not r.passed then print("  failure: " .. tostring(r.failure)) end
    if b.error then print("  baseline: " .. tostring(b.error)) end
    if c.shape then
      local key = c.shape .. " | " .. c.label
      if not sums[key] then
        sums[key] = {ms = 0, x = 0, n = 0, shape = c.shape, label = c.label}
        order[#order + 1] = key
      end
      local s = sums[key]
      s.ms, s.x, s.n = s.ms + r.median_ms, s.x + x, s.n + 1
    end
    records[#records + 1] = {problem = c.problem, config = c.config, median_ms = r.median_ms, min_ms = r.min_ms,
                             times_ms = r.times_ms, tflops = r.tflops,
                             passed = r.passed, rel_err = r.rel_err, resources = r.resources, baseline = b,
                             checked = (c.verify or c.check) and true or false}
    if jsonl then
      local rec = records[#records]
      print("JSON " .. text({problem = rec.problem, config = rec.config, median_ms = rec.median_ms,
                             min_ms = rec.min_ms, passed = rec.passed, rel_err = rec.rel_err, checked = rec.checked,
                             pass = c.pass, cublas_median_ms = b.median_ms, cublas_min_ms = b.min_ms}))
    end
  end
end

print("\nmeans over the passes (ms, x = kernel / cuBLAS TFLOP/s of the same row)")
local geo = {}
for _, key in ipairs(order) do
  local s = sums[key]
  print(string.format("%-20s %-36s %8.4f %6.3f  (%d runs)", s.shape, s.label, s.ms / s.n, s.x / s.n, s.n))
  geo[s.label] = geo[s.label] or {log = 0, n = 0}
  geo[s.label].log, geo[s.label].n = geo[s.label].log + math.log(s.x / s.n), geo[s.label].n + 1
end
for label, g in pairs(geo) do
  print(string.format("geometric mean x %-36s %6.3f over %d shapes", label, math.exp(g.log / g.n), g.n))
end

local out = os.getenv("OUT")
if out then tl.write_file(out .. "/gemm_bf16.json", tl.json_encode(records, 1)) end
