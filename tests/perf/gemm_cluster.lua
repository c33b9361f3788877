-- gemm.wgmma 2-CTA clusters against no cluster at the issue-5 shapes, each run beside cuBLAS on the same buffers, in
-- one process. Usage: tilelab run tests/perf/gemm_cluster.lua (a GPU); one table row per run; every record to
-- $OUT/gemm_cluster.json when OUT is set. The shapes are walked twice, the cluster shapes in opposite orders, so a
-- drift of the clock shows as a difference between the two passes rather than as a cluster effect.
-- GEMM_COMPILE_ONLY=1: compile every case (no GPU needed; fills the kernel cache a GPU machine can reuse).
local rep = tonumber(os.getenv("GEMM_REP") or "30")
local shapes = {{M = 8192, N = 8192, K = 8192}, {M = 4096, N = 4096, K = 4096}, {M = 8192, N = 8192, K = 1024},
                {M = 4096, N = 4096, K = 512}}
local clusters = {{}, {cluster_M = 2}, {cluster_N = 2}}
local cases = {}
for pass = 1, 2 do
  for _, s in ipairs(shapes) do
    for i = 1, #clusters do
      cases[#cases + 1] = {s, clusters[pass == 1 and i or #clusters + 1 - i], pass}
    end
  end
end
-- 128 x 128 tiles load twice the operand bytes per FLOP of 128 x 256: where sharing a tile should help most.
for _, s in ipairs({shapes[2], shapes[4]}) do
  for _, c in ipairs(clusters) do
    local cfg = {block_N = 128, num_stages = 4}
    for k, v in pairs(c) do cfg[k] = v end
    cases[#cases + 1] = {s, cfg, 3}
  end
end
local function text(t) return tl.json_encode(t) end
local k = tl.kernel("gemm.wgmma")
if os.getenv("GEMM_COMPILE_ONLY") then
  local done = {}
  for _, c in ipairs(cases) do
    local key = text(c[2])
    if not done[key] then
      done[key] = true
      local r, err = k:compile(c[2], c[1])
      print(key, r and (r.registers .. " registers, " .. r.spills .. " B spills") or err)
    end
  end
  return
end
local records = {}
print(string.format("%-4s %-22s %-44s %5s %8s %7s %7s %5s %8s %8s", "pass", "problem", "config", "ok", "ms", "TFLOP/s",
                    "cuBLAS", "x", "rel_err", "vs_cublas"))
-- The float64 reference is sampled for the first run of each config; every run is compared with cuBLAS over the
-- whole output (vs_cublas = max|C - C_cublas| / max|C_cublas|).
local verified = {}
for _, c in ipairs(cases) do
  local key = text(c[2])
  local verify = not verified[key]
  verified[key] = true
  local r, err = k:run{problem = c[1], config = c[2], rep = rep, warmup = 5, baseline = "cublas", verify = verify}
  local shape = c[1].M .. "x" .. c[1].N .. "x" .. c[1].K
  if not r then
    print(string.format("%-4d %-22s %-44s ERROR %s", c[3], shape, key, tostring(err)))
  else
    local b = r.baseline or {}
    print(string.format("%-4d %-22s %-44s %5s %8.4f %7.1f %7.1f %5.3f %8.1e %8.1e", c[3], shape, key,
                        r.passed and "PASS" or "FAIL", r.median_ms, r.tflops, b.tflops or 0,
                        (b.tflops and b.tflops > 0) and r.tflops / b.tflops or 0, r.rel_err or -1, b.rel_vs_kernel or -1))
    if not r.passed then print("  failure: " .. tostring(r.failure)) end
    if b.error then print("  baseline: " .. tostring(b.error)) end
    records[#records + 1] = {pass = c[3], problem = c[1], config = c[2], median_ms = r.median_ms, min_ms = r.min_ms,
                             max_ms = r.max_ms, tflops = r.tflops, passed = r.passed, rel_err = r.rel_err,
                             resources = r.resources, baseline = b}
  end
end
local out = os.getenv("OUT")
if out then tl.write_file(out .. "/gemm_cluster.json", tl.json_encode(records, 1)) end
