-- gemm_sweep.lua: a two-axis sweep of gemm.wgmma (num_stages x block_N) over four GEMM shapes, a heat map per shape
-- and the best config of each. Every run is stored in the results store, so a rerun (or one after Ctrl-C) continues
-- where it stopped. Without a GPU it still compiles every point and draws the registers each config needs.
-- Run: tilelab run samples/gemm_sweep.lua [OUTDIR]          (tilelab run --db FILE ... to use another store)

local outdir = arg[1] or "out/gemm_sweep"
assert(tl.mkdir(outdir))

local shapes = {
  {M = 8192, N = 8192, K = 8192},
  {M = 4096, N = 4096, K = 4096},
  {M = 8192, N = 8192, K = 1024},
  {M = 4096, N = 4096, K = 512},
}
for _, s in ipairs(shapes) do s.dtype = "bf16" end

local info = tl.info()
local gpu = #info.devices > 0
if not gpu then
  print("no GPU (" .. info.why_no_device .. "): compiling the space and reporting resources; runs are skipped")
end

local res = tl.sweep{
  kernel = "gemm.wgmma",
  problems = shapes,
  space = {num_stages = {2, 3, 4, 5, 6}, block_N = {128, 256}},
  config = {block_M = 128},  -- stage counts whose shared memory does not fit come back "skipped", with the reason
}
local s = res.summary
print(("sweep %s: %d points, %d ran, %d skipped (invalid), %d already stored, %d compiled (%d from cache)"):format(
  res.id, s.total, s.ran, s.skipped, s.resumed, s.compiled, s.compile_cache_hits))

-- Runs already stored by an earlier call of this sweep come back as "already_stored"; take every result from the store.
local rows = gpu and tl.results.query{sweep = res.id} or res
local function key(p) return ("%dx%dx%d"):format(p.M, p.N, p.K) end
for i, shape in ipairs(shapes) do
  local mine = {}
  for _, r in ipairs(rows) do
    if r.problem.M == shape.M and r.problem.N == shape.N and r.problem.K == shape.K then mine[#mine + 1] = r end
  end
  local metric = gpu and "tflops" or "registers"
  local plot = tl.plot.heatmap{results = mine, x = "num_stages", y = "block_N", metric = metric,
                               title = ("gemm.wgmma %s bf16: %s"):format(key(shape), metric)}
  local file = ("%s/heatmap_%d_%s.png"):format(outdir, i, key(shape))
  assert(plot:save(file))
  local best
  for _, r in ipairs(mine) do
    if r.status == "passed" and (not best or r.tflops > best.tflops) then best = r end
  end
  if best then
    print(("%-16s best %.1f TFLOP/s  block_N=%s num_stages=%s  (%.4f ms)  -> %s"):format(
      key(shape), best.tflops, best.config.block_N, best.config.num_stages, best.median_ms, file))
  else
    print(("%-16s no run (%s) -> %s"):format(key(shape), gpu and "none passed" or "no GPU", file))
  end
end
