-- Attention: attn.fwd.mma (FlashAttention-2-style forward: cp.async K/V pipeline, mma.sync, online softmax) in two
-- tile configs and attn.fwd.wgmma (FlashAttention-3-style on Hopper: TMA, wgmma, two ping-ponging consumer
-- warpgroups) at 32k tokens, 16 heads, head dim 128, over sequence lengths and causal masking; each run is checked
-- against the float64 reference (whole softmax rows) and timed; then attn.fwd.wgmma's variants (MLA-prefill head dims,
-- sliding window, sinks); the runs go on the roofline.
-- Run: tilelab run samples/attention.lua [OUTDIR]          (results under out/attention/ by default)
-- Without a GPU it compiles each config (registers, shared memory, spills) and says why the runs are skipped.
-- The same shapes beside PyTorch SDPA (cuDNN and flash backends): tests/perf/attn_sdpa.py on the GPU machine.

local outdir = arg[1] or "out/attention"
assert(tl.mkdir(outdir))

local mma, wgmma = tl.kernel("attn.fwd.mma"), tl.kernel("attn.fwd.wgmma")
local variants = {
  {kernel = mma, config = {block_M = 64, block_N = 64, warps = 4, num_stages = 2}},    -- the default: fits smaller GPUs too
  {kernel = mma, config = {block_M = 128, block_N = 128, warps = 8, num_stages = 2}},  -- its fastest on the H100
  {kernel = wgmma, config = {}},                                                        -- defaults (sm_90a)
}

local function label(v)
  local cfg = v.kernel:config(v.config)
  if v.kernel == wgmma then
    -- block_M and block_N 0: auto, the head dim's tile (192 x 128 at dim 64, 128 x 128 to dim 128, 128 x 112 at 192)
    local function auto(n) return n == 0 and "auto" or tostring(n) end
    return ("wgmma %sx%s, %d stages"):format(auto(cfg.block_M), auto(cfg.block_N), cfg.num_stages)
  end
  return ("%dx%d, %d warps, %d stages"):format(cfg.block_M, cfg.block_N, cfg.warps, cfg.num_stages)
end

print("compile (NVRTC, no GPU needed):")
for _, v in ipairs(variants) do
  local r, why = v.kernel:compile(v.config)
  if r then
    print(("  %-28s %3d registers, %6d B shared, %d B spills, %.0f ms%s"):format(label(v), r.registers, r.smem,
      r.spills, r.compile_ms, r.cached and " (cached)" or ""))
  else
    print(("  %-28s compile failed: %s"):format(label(v), why))
  end
end

local tokens, runs, skipped = 32768, {}, nil
print("\nruns (bf16, 16 heads, head dim 128, batch x seq = 32k tokens):")
for _, seq in ipairs({2048, 4096, 8192}) do
  for _, causal in ipairs({false, true}) do
    local problem = {batch = tokens // seq, seq_q = seq, seq_k = seq, heads = 16, heads_kv = 16, dim = 128,
                     causal = causal, dtype = "bf16"}
    for _, v in ipairs(variants) do
      local run, why = v.kernel:run{problem = problem, config = v.config, rep = 10, warmup = 2}
      if not run then
        skipped = why
        break
      end
      runs[#runs + 1] = run
      print(("  seq %5d %-9s %-28s %8.3f ms %6.1f TFLOP/s  rel err %.1e  %s"):format(seq,
        causal and "causal" or "", label(v), run.median_ms, run.tflops, run.rel_err, run.passed and "PASS" or "FAIL"))
    end
    if skipped then break end
  end
  if skipped then break end
end
if skipped then print("  skipped: " .. skipped) end

-- attn.fwd.wgmma's variants at their auto configs: DeepSeek's MLA prefill as MHA (d_qk 192, d_v 128), a causal
-- sliding window of 4096 keys, and per-head attention sinks (TileLang's attention_sink examples).
if not skipped then
  print("\nattn.fwd.wgmma variants (bf16, causal):")
  for _, v in ipairs({
    {name = "MLA prefill 192/128, h 128", problem = {batch = 4, seq_q = 4096, heads = 128, dim = 192, dim_v = 128}},
    {name = "window 4096", problem = {batch = 2, seq_q = 16384, heads = 16, dim = 128, window = 4096}},
    {name = "window 4096 + sinks", problem = {batch = 2, seq_q = 16384, heads = 16, dim = 128, window = 4096, sinks = true}},
  }) do
    v.problem.causal, v.problem.dtype = true, "bf16"
    local run, why = wgmma:run{problem = v.problem, rep = 10, warmup = 2}
    if run then
      runs[#runs + 1] = run
      print(("  %-28s %8.3f ms %6.1f TFLOP/s  rel err %.1e  %s"):format(v.name, run.median_ms, run.tflops, run.rel_err,
        run.passed and "PASS" or "FAIL"))
    else
      print(("  %-28s skipped: %s"):format(v.name, why))
    end
  end
end

if #runs > 0 then
  local roof = tl.plot.roofline{runs = runs, title = "attn.fwd.mma and attn.fwd.wgmma"}
  assert(roof:save(outdir .. "/roofline.png"))
  print("wrote " .. outdir .. "/roofline.png")
  local records = {}
  for i, run in ipairs(runs) do records[i] = run.record end
  assert(tl.write_file(outdir .. "/runs.json", tl.json_encode(records, 2)))
  print("wrote " .. outdir .. "/runs.json")
end
