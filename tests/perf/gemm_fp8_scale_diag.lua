-- Where block scales cost (tests/perf/gemm_fp8_scale_diag.sh runs it once per kernels dir): block scales at three
-- anchors at the defaults (scale_tma auto: on, A from shared memory), and with ROW=1 row scales on the same 128x256
-- tiles; timed without the float64 check (the DIAG kernels' sums are wrong on purpose). TAG names the kernels dir;
-- GEMM_COMPILE_ONLY=1 compiles every case (fills the NVRTC cache without a GPU). DIAG_SHAPES=i,j: those of the shapes
-- (1-4; default 1-3); MN=1: block scales with scale_A M-major (scale_a_layout=mn) too, after the K-major row.
local k = tl.kernel("gemm.fp8")
local tag = os.getenv("TAG") or "?"
local shapes = {{M = 8192, N = 8192, K = 8192}, {M = 4096, N = 4096, K = 4096}, {M = 4096, N = 7168, K = 2048},
                {M = 16384, N = 16384, K = 4096}}
local picked = {}
for i in (os.getenv("DIAG_SHAPES") or "1,2,3"):gmatch("%d+") do picked[#picked + 1] = assert(shapes[tonumber(i)]) end
shapes = picked
local configs = {{"block", {}}}
if os.getenv("MN") then configs[#configs + 1] = {"block/mn", {}} end
if os.getenv("ROW") then configs[#configs + 1] = {"row", {block_N = 256}} end
-- "block/mn": block scales with scale_A [K/128, M].
local function problem(s, scaling)
  if scaling == "block/mn" then return {M = s.M, N = s.N, K = s.K, scaling = "block", scale_a_layout = "mn"} end
  return {M = s.M, N = s.N, K = s.K, scaling = scaling}
end
if os.getenv("GEMM_COMPILE_ONLY") then
  for _, s in ipairs(shapes) do for _, c in ipairs(configs) do
    local r, err = k:compile(c[2], problem(s, c[1]))
    print(tag, c[1], tl.json_encode(c[2]), r and (r.registers .. " regs " .. r.spills .. " B spills") or err)
  end end
  return
end
for _, s in ipairs(shapes) do
  for _, c in ipairs(configs) do
    local p = problem(s, c[1])
    local r, err = k:run{problem = p, config = c[2], rep = 30, warmup = 3, verify = false}
    if r then
      print(string.format("%-4s %-16s %-8s %-20s median %.4f ms min %.4f ms %7.1f TFLOP/s", tag,
                          s.M .. "x" .. s.N .. "x" .. s.K, c[1], tl.json_encode(c[2]), r.median_ms, r.min_ms, r.tflops))
    else
      print(tag, c[1], tl.json_encode(c[2]), "ERROR", tostring(err))
    end
  end
end
