-- mla.sparse_prefill schedule=static (A) vs schedule=dynamic (B), A B B A per problem, in one worker (sprefill9: s_q
-- 64-2048 at h_q 128 and 64, the quick matrix's s_q 300 topk_length problem, the three anchors). Usage: tilelab run
-- tests/perf/mla_sprefill_sched.lua (a GPU). SCHED_COMPILE_ONLY=1: compile every case (fills the NVRTC cache without one).
local k = tl.kernel("mla.sparse_prefill")
local function P(sq, h, skv, extra)
  local p = {seq_q = sq, heads = h, seq_kv = skv, topk = 2048, sink = true}
  for a, b in pairs(extra or {}) do p[a] = b end
  return p
end
local cases = {}
for _, h in ipairs({128, 64}) do
  for _, sq in ipairs({64, 300, 1024, 2048}) do
    cases[#cases + 1] = {("sq%d_h%d"):format(sq, h), P(sq, h, 8192), 30}
  end
end
cases[#cases + 1] = {"quick300", {seq_q = 300, heads = 128, seq_kv = 4096, topk = 2048, topk_length = true}, 30}
cases[#cases + 1] = {"A_h128_8k", P(4096, 128, 8192), 10}
cases[#cases + 1] = {"A_h128_32k", P(4096, 128, 32768), 10}
cases[#cases + 1] = {"A_h64_8k", P(4096, 64, 8192), 10}
local cfgs = {{schedule = "static"}, {schedule = "dynamic"}}
if os.getenv("SCHED_COMPILE_ONLY") then
  for _, c in ipairs(cases) do
    for _, cfg in ipairs(cfgs) do
      local r, err = k:compile(cfg, c[2])
      print(c[1], cfg.schedule, r and (r.registers .. " regs " .. r.spills .. " B spills") or err)
    end
  end
  return
end
print(("%-11s %-7s %9s %9s %s"):format("problem", "sched", "median", "min", "times"))
for _, c in ipairs(cases) do
  for _, i in ipairs({1, 2, 2, 1}) do
    local r, why = k:run{problem = c[2], config = cfgs[i], rep = c[3], warmup = 3}
    if not r then
      print(("%-11s %-7s ERROR %s"):format(c[1], cfgs[i].schedule, tostring(why)))
    else
      local t = {}
      for j, x in ipairs(r.record.times_ms or {}) do t[j] = ("%.4f"):format(x) end
      print(("%-11s %-7s %9.4f %9.4f %s %s"):format(c[1], cfgs[i].schedule, r.median_ms, r.min_ms,
        r.passed and "PASS" or "FAIL", table.concat(t, " ")))
    end
    io.stdout:flush()
  end
end
