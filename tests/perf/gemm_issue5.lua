-- Issue 5 measurements in one process: gemm.wgmma at the issue's shapes (defaults, B row-major, f32 C) and gemm.mma's
-- candidate configs at 8192^3, each beside cuBLAS on the same buffers. Usage: tilelab run tests/perf/gemm_issue5.lua
-- (a GPU); prints one table row per run and writes every record to $OUT/gemm_issue5.json when OUT is set.
-- GEMM_COMPILE_ONLY=1: compile every case (no GPU needed; fills the kernel cache a GPU machine can reuse).
local rep = tonumber(os.getenv("GEMM_REP") or "30")
local cube = {M = 8192, N = 8192, K = 8192}
local function with(base, extra)
  local t = {}
  for k, v in pairs(base) do t[k] = v end
  for k, v in pairs(extra or {}) do t[k] = v end
  return t
end
local cases = {
  {"gemm.wgmma", cube, {}},
  {"gemm.wgmma", {M = 4096, N = 4096, K = 4096}, {}},
  {"gemm.wgmma", {M = 8192, N = 8192, K = 1024}, {}},
  {"gemm.wgmma", {M = 4096, N = 4096, K = 512}, {}},
  {"gemm.wgmma", with(cube, {trans_B = false}), {}},
  {"gemm.wgmma", {M = 4096, N = 4096, K = 4096, trans_B = false}, {}},
  {"gemm.wgmma", with(cube, {out_dtype = "f32"}), {num_stages = 2}},
  {"gemm.wgmma", with(cube, {out_dtype = "f32"}), {tma_store = false}},
  {"gemm.wgmma", with(cube, {out_dtype = "f32"}), {block_N = 128, num_stages = 4}},
  {"gemm.wgmma", with(cube, {out_dtype = "f32"}), {block_N = 128, num_stages = 5}},
  {"gemm.wgmma", with(cube, {out_dtype = "f32", trans_B = false}), {num_stages = 2}},
  {"gemm.wgmma", with(cube, {dtype = "f16"}), {}},
  {"gemm.mma", cube, {}},
  {"gemm.mma", cube, {unroll_k = true}},
  {"gemm.mma", cube, {early_sync = true}},
  {"gemm.mma", cube, {serpentine = true}},
  {"gemm.mma", cube, {unroll_k = true, early_sync = true}},
  {"gemm.mma", cube, {unroll_k = true, early_sync = true, serpentine = true}},
  {"gemm.mma", cube, {frag_buffers = 1}},
  {"gemm.mma", cube, {num_stages = 4, unroll_k = true, early_sync = true}},
  {"gemm.mma", cube, {warps_M = 4, frag_buffers = 1}},
  {"gemm.mma", cube, {warps_M = 4, frag_buffers = 1, unroll_k = true}},
  {"gemm.mma", cube, {warps_M = 4, frag_buffers = 1, num_stages = 4}},
  {"gemm.mma", cube, {block_M = 256, block_N = 128, warps_M = 4, warps_N = 4, frag_buffers = 1}},
  {"gemm.mma", cube, {block_M = 256, block_N = 128, warps_M = 4, warps_N = 4, frag_buffers = 1, num_stages = 4}},
  {"gemm.mma", cube, {block_N = 128, min_blocks = 2, frag_buffers = 1}},
  {"gemm.mma", cube, {block_N = 128, min_blocks = 2, frag_buffers = 1, serpentine = true}},
  {"gemm.mma", cube, {block_N = 128, warps_M = 4, warps_N = 2, min_blocks = 2, frag_buffers = 1}},
  {"gemm.mma", with(cube, {trans_B = false}), {}},
  {"gemm.mma", with(cube, {out_dtype = "f32"}), {}},
}
local function text(t) return tl.json_encode(t) end
if os.getenv("GEMM_COMPILE_ONLY") then
  for _, c in ipairs(cases) do
    local r, err = tl.kernel(c[1]):compile(c[3], c[2])
    print(c[1], text(c[2]), text(c[3]), r and (r.registers .. " registers, " .. r.spills .. " B spills") or err)
  end
  return
end
local records = {}
print(string.format("%-10s %-40s %-66s %5s %8s %7s %7s %5s %8s %8s", "kernel", "problem", "config", "ok", "ms",
                    "TFLOP/s", "cuBLAS", "x", "rel_err", "vs_cublas"))
-- The float64 reference is sampled (65536 positions x K MACs on the CPU) for the first case of each kernel; the rest
-- check one position and are compared with cuBLAS over the whole output (vs_cublas = max|C - C_cublas| / max|C_cublas|).
local verified = {}
for _, c in ipairs(cases) do
  local k = tl.kernel(c[1])
  local verify = not verified[c[1]]
  verified[c[1]] = true
  local r, err = k:run{problem = c[2], config = c[3], rep = rep, warmup = 5, baseline = "cublas", verify = verify}
  if not r then
    print(string.format("%-10s %-40s %-66s ERROR %s", c[1], text(c[2]), text(c[3]), tostring(err)))
  else
    local b = r.baseline or {}
    print(string.format("%-10s %-40s %-66s %5s %8.4f %7.1f %7.1f %5.3f %8.1e %8.1e", c[1], text(c[2]), text(c[3]),
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
if out then tl.write_file(out .. "/gemm_issue5.json", tl.json_encode(records, 1)) end
