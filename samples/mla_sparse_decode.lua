-- DeepSeek Sparse Attention decoding: mla.sparse_decode (FlashMLA's sparse decode on Hopper: per query token, topk
-- index entries naming tokens of a paged FP8 KV cache in DeepSeek-V3.2's 656-byte format, gathered and dequantized
-- in the kernel, bf16 wgmma, split-KV scheduled over the SMs and combined in the same launch) on FlashMLA's V3.2
-- recipe: h_q 128, s_q 2, caches of mean 32768 tokens (varlen), topk 2048, batch 64 and 128; then its peak cases
-- (batch 148, topk 16384, h_q 128 and 64). Each run is checked against the float64 reference (whole softmax rows of
-- the dequantized cache) and timed; TFLOP/s count as FlashMLA's benchmark does (2 s_q h_q topk (576 + 512) per
-- request); the runs go on the roofline.
-- Run: tilelab run samples/mla_sparse_decode.lua [OUTDIR]    (results under out/mla_sparse_decode/ by default)
-- Without a GPU it compiles the kernel (registers, shared memory, spills) and says why the runs are skipped.

local outdir = arg[1] or "out/mla_sparse_decode"
assert(tl.mkdir(outdir))

local k = tl.kernel("mla.sparse_decode")
local v32 = {batch = 64, seq_q = 2, heads = 128, seq_k = 32768, topk = 2048, varlen = true}
print("compile (NVRTC, no GPU needed):")
for _, cfg in ipairs({{gather = "copies"}, {gather = "regs"}}) do
  local r, why = k:compile(cfg, v32)
  if r then
    print(("  gather=%-6s  %3d registers, %6d B shared, %d B spills, %.0f ms%s"):format(cfg.gather,
      r.registers, r.smem, r.spills, r.compile_ms, r.cached and " (cached)" or ""))
  else
    print(("  gather=%-6s  compile failed: %s"):format(cfg.gather, why))
  end
end

local runs, skipped = {}, nil
print("\nruns (bf16 q and out, FP8 cache; the cache is filled on the host too, for the reference):")
for _, shape in ipairs({{batch = 64, topk = 2048, heads = 128}, {batch = 128, topk = 2048, heads = 128},
                        {batch = 148, topk = 16384, heads = 128}, {batch = 148, topk = 16384, heads = 64}}) do
  local problem = {batch = shape.batch, seq_q = 2, heads = shape.heads, seq_k = 32768, topk = shape.topk, varlen = true}
  local run, why = k:run{problem = problem, rep = 10, warmup = 2}
  if not run then
    skipped = why
    break
  end
  runs[#runs + 1] = run
  print(("  b %3d  h_q %3d  topk %5d  %8.3f ms  %5.1f TFLOP/s  %6.0f GB/s  rel err %.1e  %s"):format(shape.batch,
    shape.heads, shape.topk, run.median_ms, run.tflops, run.gbps, run.rel_err, run.passed and "PASS" or "FAIL"))
end
if skipped then print("  skipped: " .. skipped) end

if #runs > 0 then
  local roof = tl.plot.roofline{runs = runs, color_by = "heads", title = "mla.sparse_decode"}
  assert(roof:save(outdir .. "/roofline.png"))
  print("wrote " .. outdir .. "/roofline.png")
  local records = {}
  for i, run in ipairs(runs) do records[i] = run.record end
  assert(tl.write_file(outdir .. "/runs.json", tl.json_encode(records, 2)))
  print("wrote " .. outdir .. "/runs.json")
end
