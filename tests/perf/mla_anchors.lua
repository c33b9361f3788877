-- Issue 19's anchor table at the defaults: mla.sparse_decode (FlashMLA's V3.2 recipe at b 64 / 128, h_q 128 and 64,
-- and its peak cases b 148, topk 16384, h_q 128 / 64), mla.sparse_prefill (V3.2 s_kv 8192 / 32768, h_q 128; h_q 64
-- at 8192) and mla.decode (FlashMLA's dense recipe, b 128 varlen: MB s_q 1, h_q 64, s_k 4k-16k; CB s_q 2, h_q 128,
-- causal, s_k 4k / 8k; L32 b 32, s_q 1, h_q 128, s_k 32768), every point float64-checked and timed (CUDA events, L2
-- flushed, REP runs after 5 warm-ups) in one worker, ROUNDS rounds (even rounds in reverse order). FLOPs as FlashMLA
-- counts them. flashmla_anchors.py times FlashMLA on the same shapes (tests/perf/mla_anchors_device.sh runs both).
-- Usage: tilelab run tests/perf/mla_anchors.lua. Environment: ROUNDS (default 1), ROUND0 (the first round's number,
-- default 1), REP (default 20), ONLY (a Lua pattern of the row names). Without a GPU it compiles every point.
local rounds = tonumber(os.getenv("ROUNDS") or "1")
local round0 = tonumber(os.getenv("ROUND0") or "1")
local rep = tonumber(os.getenv("REP") or "20")
local only = os.getenv("ONLY")
local V32 = {seq_q = 2, seq_k = 32768, topk = 2048, varlen = true}
local function with(base, extra)
  local t = {}
  for key, v in pairs(base) do t[key] = v end
  for key, v in pairs(extra) do t[key] = v end
  return t
end
local rows = {
  {"mla.sparse_decode", "V3.2 b64 h128", with(V32, {batch = 64, heads = 128})},
  {"mla.sparse_decode", "V3.2 b128 h128", with(V32, {batch = 128, heads = 128})},
  {"mla.sparse_decode", "V3.2 b64 h64", with(V32, {batch = 64, heads = 64})},
  {"mla.sparse_decode", "V3.2 b128 h64", with(V32, {batch = 128, heads = 64})},
  {"mla.sparse_decode", "peak h128", with(V32, {batch = 148, heads = 128, topk = 16384})},
  {"mla.sparse_decode", "peak h64", with(V32, {batch = 148, heads = 64, topk = 16384})},
  {"mla.sparse_prefill", "V3.2 8k", {seq_q = 4096, heads = 128, seq_kv = 8192, topk = 2048, sink = true}},
  {"mla.sparse_prefill", "V3.2 32k", {seq_q = 4096, heads = 128, seq_kv = 32768, topk = 2048, sink = true}},
  {"mla.sparse_prefill", "h64 8k", {seq_q = 4096, heads = 64, seq_kv = 8192, topk = 2048, sink = true}},
  {"mla.decode", "MB 4096", {batch = 128, seq_q = 1, heads = 64, seq_k = 4096, varlen = true}},
  {"mla.decode", "MB 8192", {batch = 128, seq_q = 1, heads = 64, seq_k = 8192, varlen = true}},
  {"mla.decode", "MB 16384", {batch = 128, seq_q = 1, heads = 64, seq_k = 16384, varlen = true}},
  {"mla.decode", "CB 4096", {batch = 128, seq_q = 2, heads = 128, seq_k = 4096, varlen = true, causal = true}},
  {"mla.decode", "CB 8192", {batch = 128, seq_q = 2, heads = 128, seq_k = 8192, varlen = true, causal = true}},
  {"mla.decode", "L32 32768", {batch = 32, seq_q = 1, heads = 128, seq_k = 32768, varlen = true}},
}
local list = {}
for _, r in ipairs(rows) do
  if not only or r[2]:match(only) then list[#list + 1] = {kernel = r[1], name = r[2], problem = r[3]} end
end
local kernels = {}
local function kern(name)
  kernels[name] = kernels[name] or tl.kernel(name)
  return kernels[name]
end

local dev = tl.device{}
if not dev then
  local failed = 0
  for _, r in ipairs(list) do
    local c, err = kern(r.kernel):compile({}, r.problem)
    if not c then failed = failed + 1 end
    print(string.format("%-18s %-15s %s", r.kernel, r.name, c and string.format("compiled: %d registers, %d B smem, %d B spills%s",
      c.registers, c.smem, c.spills, c.cached and " (cached)" or "") or ("FAILED: " .. tostring(err))))
  end
  print("no GPU: compiled " .. #list .. " points, " .. failed .. " failed")
  return
end
print(dev.name)
local bad = 0
for round = round0, round0 + rounds - 1 do
  local n = #list
  for i = 1, n do
    local r = list[round % 2 == 1 and i or n + 1 - i]
    local res, err = kern(r.kernel):run{problem = r.problem, rep = rep, warmup = 5, verify = true}
    if not res or not res.passed then bad = bad + 1 end
    if res then
      print(string.format("ROW r%d|%s|%s|%s|%.5f|%.5f|%.2f|%.3g", round, r.kernel, r.name, res.passed and "PASS" or "FAIL",
        res.median_ms, res.min_ms or 0, res.tflops or 0, res.rel_err or 0))
    else
      print(string.format("ROW r%d|%s|%s|ERROR %s", round, r.kernel, r.name, tostring(err)))
    end
  end
end
print("failures: " .. bad)
