-- MLA decoding: mla.decode (FlashMLA-style dense decode on Hopper: paged KV cache of 64-token blocks, 576-wide keys
-- whose first 512 are the values, split-KV scheduled over the SMs and combined in the same launch) on FlashMLA's
-- benchmark recipe: 128 requests, per-request cache lengths drawn around the mean, shuffled block table. Each run is
-- checked against the float64 reference (whole softmax rows) and timed; the memory-bound shapes (s_q = 1, h_q = 64)
-- are read in GB/s, the compute-bound ones (s_q = 2, h_q = 128) in TFLOP/s; the runs go on the roofline.
-- Run: tilelab run samples/mla_decode.lua [OUTDIR]          (results under out/mla_decode/ by default)
-- Without a GPU it compiles the kernel (registers, shared memory, spills) and says why the runs are skipped.

local outdir = arg[1] or "out/mla_decode"
assert(tl.mkdir(outdir))

local mla = tl.kernel("mla.decode")
print("compile (NVRTC, no GPU needed):")
for _, cfg in ipairs({{qk_warpgroups = 2}, {qk_warpgroups = 1}}) do
  local r, why = mla:compile(cfg)
  if r then
    print(("  qk_warpgroups=%d  %3d registers, %6d B shared, %d B spills, %.0f ms%s"):format(cfg.qk_warpgroups,
      r.registers, r.smem, r.spills, r.compile_ms, r.cached and " (cached)" or ""))
  else
    print(("  qk_warpgroups=%d  compile failed: %s"):format(cfg.qk_warpgroups, why))
  end
end

local runs, skipped = {}, nil
print("\nruns (bf16, batch 128, varlen lengths around the mean seq_k):")
for _, shape in ipairs({{seq_q = 1, heads = 64}, {seq_q = 2, heads = 128}}) do
  -- Issue 6's four mean lengths; at 32768 the cache is ~5 GB, filled on the host on every core for the reference.
  for _, seq_k in ipairs({4096, 8192, 16384, 32768}) do
    local problem = {batch = 128, seq_q = shape.seq_q, heads = shape.heads, seq_k = seq_k, varlen = true,
                     causal = shape.seq_q > 1, dtype = "bf16"}
    local run, why = mla:run{problem = problem, rep = 10, warmup = 2}
    if not run then
      skipped = why
      break
    end
    runs[#runs + 1] = run
    print(("  s_q %d  h_q %3d  mean s_k %5d  %8.3f ms  %6.0f GB/s  %5.1f TFLOP/s  rel err %.1e  %s"):format(
      shape.seq_q, shape.heads, seq_k, run.median_ms, run.gbps, run.tflops, run.rel_err, run.passed and "PASS" or "FAIL"))
  end
  if skipped then break end
end
if skipped then print("  skipped: " .. skipped) end

if #runs > 0 then
  local roof = tl.plot.roofline{runs = runs, color_by = "heads", title = "mla.decode"}
  assert(roof:save(outdir .. "/roofline.png"))
  print("wrote " .. outdir .. "/roofline.png")
  local records = {}
  for i, run in ipairs(runs) do records[i] = run.record end
  assert(tl.write_file(outdir .. "/runs.json", tl.json_encode(records, 2)))
  print("wrote " .. outdir .. "/runs.json")
end
