-- gemm.grouped at issue 21's anchor shapes (G groups of M rows, N 4096, K 7168), both schedules, both layouts, bf16
-- and e4m3, in one process (one worker). Usage: tilelab run tests/perf/gemm_grouped.lua (a GPU); one table row per
-- run; every record to $OUT/gemm_grouped.json when OUT is set. The first run of each (problem kind, config) is checked
-- against the float64 reference (sampled), the rest are timed only. GEMM_SET=ab: per anchor, the two schedules and
-- the tile orders beside each other, e4m3 with row and block scales; GEMM_ROUNDS=n runs the list n times (A/B/A/B
-- order, so that a drift of the clocks shows); GEMM_VERIFY=problem: the first run of each kind at each anchor checked
-- (by default only each kind's first, whatever its anchor). GEMM_COMPILE_ONLY=1: compile every case (no GPU needed; fills the
-- kernel cache a GPU machine can reuse). GEMM_CASES=i,j,...: only those entries of `cases`.
local rep = tonumber(os.getenv("GEMM_REP") or "30")
local rounds = tonumber(os.getenv("GEMM_ROUNDS") or "1")
local anchors = {{G = 8, M = 2048}, {G = 32, M = 512}, {G = 64, M = 128}}
local base = {N = 4096, K = 7168}
local cases = {}
local function add(problem, config)
  local p = {N = base.N, K = base.K}
  for k, v in pairs(problem) do p[k] = v end
  cases[#cases + 1] = {p, config or {}}
end
for _, a in ipairs(anchors) do
  if os.getenv("GEMM_SET") == "ab" then
    add({G = a.G, M = a.M}, {})
    add({G = a.G, M = a.M}, {schedule = "host"})
    add({G = a.G, M = a.M}, {panel = 8})
    add({G = a.G, M = a.M}, {raster = "n"})
    add({G = a.G, M = a.M}, {num_stages = 4, tma_store = "false"})
    add({G = a.G, M = a.M, dtype = "e4m3", scaling = "row"}, {})
    add({G = a.G, M = a.M, dtype = "e4m3"}, {})
  else
    -- bf16 contiguous: the device schedule (default) and the host's list.
    add({G = a.G, M = a.M}, {})
    add({G = a.G, M = a.M}, {schedule = "host"})
    -- Uneven groups (M_g in [0, 2M], mean M) and the masked layout (masked_m[g] = M of a slot of M).
    add({G = a.G, M = a.M, uneven = true}, {})
    add({G = a.G, M = a.M, layout = "masked"}, {})
    -- e4m3 with row scales (torch._scaled_grouped_mm's) and DeepSeek-V3's block scales (DeepGEMM's grouped GEMM).
    add({G = a.G, M = a.M, dtype = "e4m3", scaling = "row"}, {})
    add({G = a.G, M = a.M, dtype = "e4m3"}, {})
  end
end
local function pick(list, env)
  local only = os.getenv(env)
  if not only then return list end
  local out = {}
  for i in only:gmatch("%d+") do out[#out + 1] = list[tonumber(i)] end
  return out
end
cases = pick(cases, "GEMM_CASES")
local function text(t) return tl.json_encode(t) end
local k = tl.kernel("gemm.grouped")
local records = {}
local compile_only = os.getenv("GEMM_COMPILE_ONLY")
if not compile_only then
  print(string.format("%-44s %-30s %5s %8s %7s %8s", "problem", "config", "ok", "ms", "TFLOP/s", "rel_err"))
end
local verified = {}
local list = {}
for _ = 1, rounds do
  for _, c in ipairs(cases) do list[#list + 1] = c end
end
for _, c in ipairs(list) do
  local p = c[1]
  local kind = (p.dtype or "bf16") .. " " .. (p.layout or "contiguous") .. (p.uneven and " uneven " or " ") ..
               (p.scaling or "") .. text(c[2])
  if os.getenv("GEMM_VERIFY") == "problem" then kind = kind .. " G" .. p.G .. " M" .. p.M end
  local verify = not verified[kind]
  verified[kind] = true
  local shape = string.format("G=%d M=%d %s %s%s%s", p.G, p.M, p.dtype or "bf16", p.layout or "contiguous",
                              p.uneven and " uneven" or "", p.scaling and (" " .. p.scaling) or "")
  if compile_only then
    if verify then
      local r, err = k:compile(c[2], p)
      print(kind, r and (r.registers .. " registers, " .. r.spills .. " B spills") or err)
    end
  else
    local r, err = k:run{problem = p, config = c[2], rep = rep, warmup = 5, verify = verify}
    if not r then
      print(string.format("%-44s %-30s ERROR %s", shape, text(c[2]), tostring(err)))
    else
      print(string.format("%-44s %-30s %5s %8.4f %7.1f %8.1e", shape, text(c[2]), r.passed and "PASS" or "FAIL",
                          r.median_ms, r.tflops, r.rel_err or -1))
      if not r.passed then print("  failure: " .. tostring(r.failure)) end
      records[#records + 1] = {problem = p, config = c[2], median_ms = r.median_ms, min_ms = r.min_ms,
                               max_ms = r.max_ms, tflops = r.tflops, passed = r.passed, rel_err = r.rel_err,
                               checked = verify}
    end
  end
end
local out = os.getenv("OUT")
if out then tl.write_file(out .. "/gemm_grouped.json", tl.json_encode(records, 1)) end
