-- DeepSeek Sparse Attention prefill: mla.sparse_prefill (FlashMLA's sparse prefill on Hopper: per query token, topk
-- index entries naming rows of a bf16 KV [s_kv, 1, 576], gathered by cp.async in the kernel, bf16 wgmma, out, the
-- per-row max_logits and LSE) on FlashMLA's V3.2 recipe: s_q 4096, h_q 128, topk 2048, attn_sink on, s_kv 8192 to
-- 131072; then a 64-head case. Each run is checked against the float64 reference (whole softmax rows) and timed;
-- TFLOP/s count as FlashMLA's benchmark does (2 s_q h_q topk (576 + 512)); the runs go on the roofline.
-- Run: tilelab run samples/mla_sparse_prefill.lua [OUTDIR]    (results under out/mla_sparse_prefill/ by default)
-- Without a GPU it compiles the kernel (registers, shared memory, spills) and says why the runs are skipped.

local outdir = arg[1] or "out/mla_sparse_prefill"
assert(tl.mkdir(outdir))

local k = tl.kernel("mla.sparse_prefill")
local v32 = {seq_q = 4096, heads = 128, seq_kv = 8192, topk = 2048, sink = true}
print("compile (NVRTC, no GPU needed):")
for _, cfg in ipairs({{l2_prefetch = false}, {l2_prefetch = true}}) do
  local name = "l2_prefetch=" .. tostring(cfg.l2_prefetch)
  local r, why = k:compile(cfg, v32)
  if r then
    print(("  %-18s %3d registers, %6d B shared, %d B spills, %.0f ms%s"):format(name, r.registers, r.smem, r.spills,
      r.compile_ms, r.cached and " (cached)" or ""))
  else
    print(("  %-18s compile failed: %s"):format(name, why))
  end
end

local runs, skipped = {}, nil
print("\nruns (bf16 q, kv and out; FlashMLA's V3.2 prefill recipe):")
for _, shape in ipairs({{heads = 128, seq_kv = 8192}, {heads = 128, seq_kv = 32768}, {heads = 128, seq_kv = 65536},
                        {heads = 128, seq_kv = 131072}, {heads = 64, seq_kv = 8192}}) do
  local problem = {seq_q = 4096, heads = shape.heads, seq_kv = shape.seq_kv, topk = 2048, sink = true}
  local run, why = k:run{problem = problem, rep = 10, warmup = 2}
  if not run then
    skipped = why
    break
  end
  runs[#runs + 1] = run
  print(("  h_q %3d  s_kv %6d  %8.3f ms  %5.1f TFLOP/s  %6.0f GB/s  rel err %.1e  %s"):format(shape.heads,
    shape.seq_kv, run.median_ms, run.tflops, run.gbps, run.rel_err, run.passed and "PASS" or "FAIL"))
end
if skipped then print("  skipped: " .. skipped) end

if #runs > 0 then
  local roof = tl.plot.roofline{runs = runs, color_by = "seq_kv", title = "mla.sparse_prefill"}
  assert(roof:save(outdir .. "/roofline.png"))
  print("wrote " .. outdir .. "/roofline.png")
  local records = {}
  for i, run in ipairs(runs) do records[i] = run.record end
  assert(tl.write_file(outdir .. "/runs.json", tl.json_encode(records, 2)))
  print("wrote " .. outdir .. "/runs.json")
end
