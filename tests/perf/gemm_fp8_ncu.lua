-- gemm.fp8 and cuBLASLt's FP8 matmul once each per case, for Nsight Compute (tests/perf/gemm_fp8_ncu.sh): every
-- case one k:run{rep = 1, warmup = 0, baseline = "cublas", verify = false} (the kernel, then cuBLASLt's matmul in the
-- same scaling mode on the same buffers). Cases: FP8_NCU_SHAPES (MxNxK, comma-separated; default issue 21's five
-- anchors) x FP8_NCU_SCALINGS (default tensor,row), each at the defaults and at FP8_NCU_CONFIG (k=v;k=v, optional).
-- GEMM_COMPILE_ONLY=1: compile every case (fills the kernel cache a GPU machine reuses).
local k = tl.kernel("gemm.fp8")
local shapes = os.getenv("FP8_NCU_SHAPES") or "8192x8192x8192,4096x4096x4096,4096x7168x2048,128x7168x2048,16384x16384x4096"
local configs = {{}}
local extra = os.getenv("FP8_NCU_CONFIG") or ""
if extra ~= "" then
  local c = {}
  for key, v in extra:gmatch("([%w_]+)=([%w_]+)") do c[key] = tonumber(v) or v end
  configs[#configs + 1] = c
end
for s in shapes:gmatch("[^,]+") do
  local M, N, K = s:match("(%d+)x(%d+)x(%d+)")
  for scaling in (os.getenv("FP8_NCU_SCALINGS") or "tensor,row"):gmatch("%a+") do
    for _, c in ipairs(configs) do
      local p = {M = tonumber(M), N = tonumber(N), K = tonumber(K), scaling = scaling}
      if os.getenv("GEMM_COMPILE_ONLY") then
        local r, err = k:compile(c, p)
        print(tl.json_encode(p), tl.json_encode(c), r and (r.registers .. " registers, " .. r.spills .. " B spills") or err)
      elseif k:can_implement(p, c) then
        local r, err = k:run{problem = p, config = c, rep = 1, warmup = 0, baseline = "cublas", verify = false}
        print(string.format("%s %s %s: %s", s, scaling, tl.json_encode(c),
                            r and string.format("%.4f ms, cuBLASLt %.4f ms", r.median_ms, (r.baseline or {}).median_ms or 0)
                              or tostring(err)))
      end
    end
  end
end
