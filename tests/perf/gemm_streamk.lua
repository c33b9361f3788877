-- Issue 21 item 3 and gemm.fp8's comparator in one process: gemm.wgmma's schedules (data_parallel, stream_k, auto)
-- at the issue's eight bf16 shapes, each run beside cuBLAS on the same buffers; stream-K's correctness on odd shapes
-- (float64 reference and the whole output against cuBLAS); gemm.fp8 beside cuBLASLt's FP8 matmul in each scaling.
-- Usage: tilelab run tests/perf/gemm_streamk.lua (a GPU); one table row per run, every record in
-- $OUT/gemm_streamk.json when OUT is set. GEMM_COMPILE_ONLY=1: compile every case (no GPU needed; fills the kernel
-- cache a GPU machine can reuse). GEMM_PARTS=check,time,alt,fp8 picks parts (default check,time,fp8).
local rep = tonumber(os.getenv("GEMM_REP") or "30")
local parts = os.getenv("GEMM_PARTS") or "check,time,fp8"
local function has(part) return parts:find(part, 1, true) ~= nil end
local cases = {}
-- GEMM_SCHEDULES=data_parallel,stream_k: the schedules timed (default all three).
local schedules = {}
for s in (os.getenv("GEMM_SCHEDULES") or "data_parallel,stream_k,auto"):gmatch("[^,]+") do schedules[#schedules + 1] = s end
-- GEMM_CHECKS=N: only the first N stream-K checks.
local checks = tonumber(os.getenv("GEMM_CHECKS") or "100")
local function add(kernel, problem, config, verify) cases[#cases + 1] = {kernel, problem, config, verify} end
if has("check") then
  -- Split tiles of every kind: fewer tiles than SMs, partial tiles in M and N, a K that is no multiple of 64, both B
  -- layouts, an f32 C, direct stores, 64 x 128 tiles with raster n.
  for _, c in ipairs({
    {{M = 257, N = 130, K = 72}, {}},
    {{M = 2113, N = 2312, K = 136}, {}},
    {{M = 3000, N = 5000, K = 4096}, {}},
    {{M = 1000, N = 1000, K = 1000, out_dtype = "f32"}, {}},
    {{M = 513, N = 520, K = 1000, trans_B = false}, {}},
    {{M = 2113, N = 2312, K = 1000}, {tma_store = false}},
    {{M = 3000, N = 5000, K = 520}, {block_M = 64, block_N = 128, raster = "n", panel = 4}},
  }) do
    if #cases >= checks then break end
    local config = {schedule = "stream_k"}
    for k, v in pairs(c[2]) do config[k] = v end
    add("gemm.wgmma", c[1], config, true)
  end
end
-- GEMM_PASSES=N: the timed shapes N times, the schedules in reverse order on every second pass (so that neither
-- schedule always runs first on a warm or a cool chip).
local passes = tonumber(os.getenv("GEMM_PASSES") or "1")
if has("time") then
  for pass = 1, passes do
    for _, p in ipairs({
      {M = 3000, N = 5000, K = 4096}, {M = 4096, N = 4096, K = 512}, {M = 8192, N = 8192, K = 8192},
      {M = 4096, N = 4096, K = 4096}, {M = 8192, N = 8192, K = 1024}, {M = 6144, N = 6144, K = 6144},
      {M = 2048, N = 8192, K = 8192}, {M = 16384, N = 16384, K = 4096},
      -- 66 x 32 tiles: 16 full waves on 132 SMs, nothing to split (stream-K's kernel as data-parallel).
      {M = 8448, N = 8192, K = 4096},
    }) do
      for i = 1, #schedules do
        local s = schedules[pass % 2 == 1 and i or #schedules + 1 - i]
        add("gemm.wgmma", p, {schedule = s}, false)
      end
    end
  end
end
-- Other tiles and orders at the shapes that lose most to cuBLAS (issue 21: 3000x5000x4096, 4096^3, 4096x4096x512).
if has("alt") then
  for _, p in ipairs({{M = 3000, N = 5000, K = 4096}, {M = 4096, N = 4096, K = 4096}, {M = 4096, N = 4096, K = 512}}) do
    for _, c in ipairs({
      {schedule = "data_parallel", block_N = 128, num_stages = 4},
      {schedule = "stream_k", block_N = 128, num_stages = 4},
      {schedule = "data_parallel", raster = "n"},
      {schedule = "data_parallel", panel = 8},
      {schedule = "stream_k", panel = 8},
    }) do
      add("gemm.wgmma", p, c, false)
    end
  end
end
if has("fp8") then
  for _, p in ipairs({
    {M = 8192, N = 8192, K = 8192}, {M = 4096, N = 7168, K = 2048}, {M = 4096, N = 4096, K = 4096},
  }) do
    for _, s in ipairs({"tensor", "row", "block"}) do
      add("gemm.fp8", {M = p.M, N = p.N, K = p.K, scaling = s}, {}, false)
    end
  end
  add("gemm.fp8", {M = 128, N = 7168, K = 2048}, {block_M = 64, block_N = 128, num_stages = 5}, false)
  -- Odd shapes: what cuBLASLt takes (the whole output compared with the kernel's) and what it refuses.
  for _, s in ipairs({"tensor", "row", "block"}) do
    add("gemm.fp8", {M = 1000, N = 1000, K = 1024, scaling = s, out_dtype = "f32"}, {}, true)
    add("gemm.fp8", {M = 257, N = 136, K = 384, scaling = s}, {}, false)
  end
end

local function text(t) return tl.json_encode(t) end
if os.getenv("GEMM_COMPILE_ONLY") then
  for _, c in ipairs(cases) do
    local r, err = tl.kernel(c[1]):compile(c[3], c[2])
    print(c[1], text(c[2]), text(c[3]), r and (r.registers .. " registers, " .. r.spills .. " B spills") or err)
  end
  return
end
local records = {}
print(string.format("%-10s %-44s %-50s %5s %8s %7s %7s %5s %8s %8s", "kernel", "problem", "config", "ok", "ms",
                    "TFLOP/s", "cuBLAS", "x", "rel_err", "vs_cublas"))
for _, c in ipairs(cases) do
  local r, err = tl.kernel(c[1]):run{problem = c[2], config = c[3], rep = c[4] and 3 or rep, warmup = c[4] and 1 or 5,
                                     baseline = "cublas", verify = c[4]}
  if not r then
    print(string.format("%-10s %-44s %-50s ERROR %s", c[1], text(c[2]), text(c[3]), tostring(err)))
  else
    local b = r.baseline or {}
    print(string.format("%-10s %-44s %-50s %5s %8.4f %7.1f %7.1f %5.3f %8.1e %8.1e", c[1], text(c[2]), text(c[3]),
                        r.passed and "PASS" or "FAIL", r.median_ms, r.tflops, b.tflops or 0,
                        (b.tflops and b.tflops > 0) and r.tflops / b.tflops or 0, r.rel_err or -1,
                        b.rel_vs_kernel or -1))
    if not r.passed then print("  failure: " .. tostring(r.failure)) end
    if b.error then print("  baseline: " .. tostring(b.error)) end
    records[#records + 1] = {kernel = c[1], problem = c[2], config = c[3], median_ms = r.median_ms,
                             min_ms = r.min_ms, max_ms = r.max_ms, tflops = r.tflops, passed = r.passed,
                             rel_err = r.rel_err, resources = r.resources, baseline = b}
  end
end
local out = os.getenv("OUT")
if out then tl.write_file(out .. "/gemm_streamk.json", tl.json_encode(records, 1)) end
