-- gemm.fp8 at issue 21's anchor shapes, every scaling, a few configs, in one process (one worker). Usage:
-- tilelab run tests/perf/gemm_fp8.lua (a GPU); one table row per run; every record to $OUT/gemm_fp8.json when OUT is
-- set. The first run of each (scaling, config) is checked against the float64 reference (sampled), the rest are timed
-- only. GEMM_COMPILE_ONLY=1: compile every case (no GPU needed; fills the kernel cache a GPU machine can reuse).
-- GEMM_CONFIGS=i,j,...: only those entries of `configs`; GEMM_SHAPES and GEMM_SMALL likewise for `shapes` and
-- `small_configs`.
local rep = tonumber(os.getenv("GEMM_REP") or "30")
local shapes = {{M = 8192, N = 8192, K = 8192}, {M = 4096, N = 4096, K = 4096}, {M = 4096, N = 7168, K = 2048},
                {M = 128, N = 7168, K = 2048, small = true}, {M = 16384, N = 16384, K = 4096}}
-- Large shapes: the defaults (128 x 256 tiles, 128-column chains, TMA-store epilogue, 3 stages) and fast accumulation
-- (no promotion; tensor and row scales only). M = 128: smaller tiles (more CTAs) and deeper pipelines.
local configs = {{}, {fast_accum = true, wgmma_N = 256}}
local small_configs = {{}, {block_M = 64, block_N = 128, num_stages = 8}, {block_M = 64, block_N = 128, num_stages = 5}}
local function pick(list, env)
  local only = os.getenv(env)
  if not only then return list end
  local out = {}
  for i in only:gmatch("%d+") do out[#out + 1] = list[tonumber(i)] end
  return out
end
shapes, configs, small_configs = pick(shapes, "GEMM_SHAPES"), pick(configs, "GEMM_CONFIGS"), pick(small_configs, "GEMM_SMALL")
-- A config as sorted JSON (the key of "checked once" and the table's column).
local function text(t) return tl.json_encode(t) end
local k = tl.kernel("gemm.fp8")
local cases = {}
for _, s in ipairs(shapes) do
  for _, scaling in ipairs({"tensor", "row", "block"}) do
    for _, c in ipairs(s.small and small_configs or configs) do
      local p = {M = s.M, N = s.N, K = s.K, scaling = scaling}
      if k:can_implement(p, c) then cases[#cases + 1] = {p, c} end
    end
  end
end
local records = {}
local compile_only = os.getenv("GEMM_COMPILE_ONLY")
if not compile_only then
  print(string.format("%-20s %-7s %-46s %5s %8s %7s %8s", "problem", "scaling", "config", "ok", "ms", "TFLOP/s", "rel_err"))
end
local verified = {}
for _, c in ipairs(cases) do
  local key = c[1].scaling .. " " .. text(c[2])
  local verify = not verified[key]
  verified[key] = true
  if compile_only then
    -- Each (scaling, config) once: the kernel is specialised on the scaling, not on the sizes.
    if verify then
      local r, err = k:compile(c[2], c[1])
      print(key, r and (r.registers .. " registers, " .. r.spills .. " B spills") or err)
    end
    goto next
  end
  local r, err = k:run{problem = c[1], config = c[2], rep = rep, warmup = 5, verify = verify}
  local shape = c[1].M .. "x" .. c[1].N .. "x" .. c[1].K
  if not r then
    print(string.format("%-20s %-7s %-46s ERROR %s", shape, c[1].scaling, text(c[2]), tostring(err)))
  else
    print(string.format("%-20s %-7s %-46s %5s %8.4f %7.1f %8.1e", shape, c[1].scaling, text(c[2]),
                        r.passed and "PASS" or "FAIL", r.median_ms, r.tflops, r.rel_err or -1))
    if not r.passed then print("  failure: " .. tostring(r.failure)) end
    records[#records + 1] = {problem = c[1], config = c[2], median_ms = r.median_ms, min_ms = r.min_ms,
                             max_ms = r.max_ms, tflops = r.tflops, passed = r.passed, rel_err = r.rel_err,
                             resources = r.resources}
  end
  ::next::
end
local out = os.getenv("OUT")
if out then tl.write_file(out .. "/gemm_fp8.json", tl.json_encode(records, 1)) end
