-- Split-KV decoding for GQA (TileLang's flash_decoding): attn.decode over a KV cache [batch, seq_k, heads_kv, 128],
-- the query group of each kv head as one tile, the cache split over CTAs and merged in the same launch. Each run is
-- checked against the float64 reference (whole softmax rows) and timed beside cuDNN's SDPA graph (`baseline =
-- "cudnn"`, when libcudnn is found); decoding is memory-bound, so the runs read in GB/s, and go on the roofline.
-- Run: tilelab run samples/flash_decoding.lua [OUTDIR]          (results under out/flash_decoding/ by default)
-- Without a GPU it compiles the kernel for each query-group shape (registers, shared memory, launch grid: the split
-- count) and says why the runs are skipped.

local outdir = arg[1] or "out/flash_decoding"
assert(tl.mkdir(outdir))

local dec = tl.kernel("attn.decode")
-- TileLang's example: 64 query heads over 8 kv heads; its GQA and MHA neighbours; s_q 1 and 4 (speculative tokens,
-- causal from the cache's end).
local shapes = {
  {batch = 1, heads = 32, heads_kv = 8, seq_k = 65536, seq_q = 1},
  {batch = 1, heads = 64, heads_kv = 8, seq_k = 16384, seq_q = 4},
  {batch = 8, heads = 64, heads_kv = 8, seq_k = 16384, seq_q = 1},
  {batch = 8, heads = 32, heads_kv = 32, seq_k = 16384, seq_q = 4},
  {batch = 32, heads = 32, heads_kv = 8, seq_k = 4096, seq_q = 1},
}

print("compile (NVRTC, no GPU needed):")
for _, s in ipairs(shapes) do
  local problem = dec:problem(s)
  local r, why = dec:compile({}, problem)
  local label = ("b %2d  h_q %2d / h_kv %2d  s_k %5d  s_q %d"):format(s.batch, s.heads, s.heads_kv, s.seq_k, s.seq_q)
  if r then
    print(("  %s  %3d registers, %6d B shared, %d B spills%s"):format(label, r.registers, r.smem, r.spills,
      r.cached and " (cached)" or ""))
  else
    print(("  %s  compile failed: %s"):format(label, why))
  end
end

local runs, skipped = {}, nil
print("\nruns (bf16, d 128, causal):")
for _, s in ipairs(shapes) do
  local run, why = dec:run{problem = s, rep = 20, warmup = 3, baseline = "cudnn"}
  if not run then
    skipped = why
    break
  end
  runs[#runs + 1] = run
  local base = run.baseline and run.baseline.median_ms and
      ("  cuDNN %8.1f us (%.2fx)"):format(run.baseline.median_ms * 1e3, run.baseline.speedup) or ""
  print(("  b %2d  h_q %2d / h_kv %2d  s_k %5d  s_q %d  %8.1f us  %6.0f GB/s  rel err %.1e  %s%s"):format(s.batch,
    s.heads, s.heads_kv, s.seq_k, s.seq_q, run.median_ms * 1e3, run.gbps, run.rel_err, run.passed and "PASS" or "FAIL",
    base))
end
if skipped then print("  skipped: " .. skipped) end

if #runs > 0 then
  local roof = tl.plot.roofline{runs = runs, color_by = "heads_kv", title = "attn.decode (flash_decoding)"}
  assert(roof:save(outdir .. "/roofline.png"))
  print("wrote " .. outdir .. "/roofline.png")
  local records = {}
  for i, run in ipairs(runs) do records[i] = run.record end
  assert(tl.write_file(outdir .. "/runs.json", tl.json_encode(records, 2)))
  print("wrote " .. outdir .. "/runs.json")
end
