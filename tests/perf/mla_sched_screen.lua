-- mla.decode's split-KV schedule knobs (sms, overhead_blocks, tie_gap; and tile_order, evict_first, vec_store) in
-- one worker: a screen (one pass per shape, the default first and last), finalists picked from it, then ROUNDS
-- alternated rounds of the default and the finalists at every shape (odd rounds in the listed order, even rounds
-- reversed: A B, B A = A B B A). Every run float64-checked (VERIFY=0: not). Without a GPU it compiles every point.
-- Usage: tilelab run tests/perf/mla_sched_screen.lua. Prints "sN ..." (screen), "FINALIST cfg", "rN ..." (rounds)
-- lines in mla_rounds.lua's format; mla_sched_table.py reads them.
-- Environment: REP (timed runs a point, default 20), ROUNDS (most rounds, default 4; at least MIN_ROUNDS, default 3,
-- are run), MAXF (finalists, default 3), SCREEN_END / DEADLINE (seconds since the start after which the screen
-- skips its configs but the closing default / no further round is started when it would end past DEADLINE),
-- SCREEN ("#"-separated "shape|cfg;cfg;...", "-" the default), FINAL_SHAPES (";"-separated shape names),
-- FINALISTS (";"-separated configs: no screen, these finalists).
local rep = tonumber(os.getenv("REP") or "20")
local max_rounds = tonumber(os.getenv("ROUNDS") or "4")
local min_rounds = tonumber(os.getenv("MIN_ROUNDS") or "3")
local maxf = tonumber(os.getenv("MAXF") or "3")
local screen_end = tonumber(os.getenv("SCREEN_END") or "1e9")
local deadline = tonumber(os.getenv("DEADLINE") or "1e9")
local verify = os.getenv("VERIFY") ~= "0"
local k = tl.kernel("mla.decode")
local t0 = os.time()
local function elapsed() return os.time() - t0 end

local PROBLEMS = {
  ["CB 8192"] = "batch=128,seq_q=2,heads=128,seq_k=8192,varlen=true,causal=true",
  ["CB 4096"] = "batch=128,seq_q=2,heads=128,seq_k=4096,varlen=true,causal=true",
  ["L32"] = "batch=32,seq_q=1,heads=128,seq_k=32768,varlen=true",
  ["MB 4096"] = "batch=128,seq_q=1,heads=64,seq_k=4096,varlen=true",
}
-- The screen: at CB only sms and overhead_blocks change the schedule (tie_gap and merge_blocks <= 8 give the default's
-- schedule there: no part holds a middle split, no request is cut finer than the bound); at L32 overhead_blocks x
-- tie_gap (merge_blocks as at CB). Every listed config's schedule differs from the default's and from the others'.
local L32 = {"-"}
for _, ov in ipairs({0, 1, 2, 3, 5, 8}) do
  for _, tg in ipairs({0, 3, 6}) do
    if not (ov == 2 and tg == 3) then L32[#L32 + 1] = "overhead_blocks=" .. ov .. ",tie_gap=" .. tg end
  end
end
for _, c in ipairs({"sms=264", "sms=128", "evict_first=on", "tile_order=cluster", "vec_store=false", "-"}) do L32[#L32 + 1] = c end
local SCREEN = os.getenv("SCREEN") or table.concat({
  "L32|" .. table.concat(L32, ";"),
  "CB 8192|-;overhead_blocks=0;overhead_blocks=1;overhead_blocks=3;overhead_blocks=5;overhead_blocks=8;sms=264;evict_first=on;tile_order=cluster;vec_store=false;-",
  "CB 4096|-;overhead_blocks=0;overhead_blocks=1;overhead_blocks=3;overhead_blocks=5;overhead_blocks=8;sms=264;evict_first=on;tile_order=cluster;-",
}, "#")
local FINAL_SHAPES = os.getenv("FINAL_SHAPES") or "CB 8192;CB 4096;L32;MB 4096"

local function kv(text)
  local t = {}
  if text == "-" then return t end
  for item in text:gmatch("[^,]+") do
    local key, v = item:match("([^=]+)=(.*)")
    if v == "true" then v = true elseif v == "false" then v = false end
    t[key] = tonumber(v) or v
  end
  return t
end
local function split(s, sep)
  local out = {}
  for x in s:gmatch("[^" .. sep .. "]+") do out[#out + 1] = x end
  return out
end

local screen = {}
for _, block in ipairs(split(SCREEN, "#")) do
  local name, cfgs = block:match("([^|]+)|(.*)")
  screen[#screen + 1] = {name = name, configs = split(cfgs, ";")}
end
local finals = split(FINAL_SHAPES, ";")

local dev = tl.device{measure = false}
if not dev then
  local seen = {}
  local function compile(name, c)
    if seen[name .. "|" .. c] then return end
    seen[name .. "|" .. c] = true
    local r, err = k:compile(kv(c), kv(PROBLEMS[name]))
    print((r and "compiled " or "FAILED ") .. name .. " " .. c .. (r and "" or (": " .. tostring(err))))
  end
  for _, sh in ipairs(screen) do for _, c in ipairs(sh.configs) do compile(sh.name, c) end end
  for _, name in ipairs(finals) do
    for _, sh in ipairs(screen) do for _, c in ipairs(sh.configs) do compile(name, c) end end
  end
  return
end
print(dev.name)

local bad = 0
local function run(tag, name, c)
  local r, err = k:run{problem = kv(PROBLEMS[name]), config = kv(c), rep = rep, warmup = 5, verify = verify}
  if not r or not r.passed then bad = bad + 1 end
  if r then
    print(string.format("%s %-8s %-40s %s %.4f ms (min %.4f) %.1f TFLOP/s err %.3g t=%d", tag, name, c,
                        r.passed and "PASS" or "FAIL", r.median_ms, r.min_ms or 0, r.tflops or 0, r.rel_err or 0, elapsed()))
    return r.passed and r.median_ms or nil
  end
  print(string.format("%s %-8s %-40s ERROR %s t=%d", tag, name, c, tostring(err), elapsed()))
  return nil
end

-- 1. The screen, and each shape's cost a point (seconds: the float64 reference of these caches dominates).
local cost = {}
local finalists = {}
local fixed = os.getenv("FINALISTS")
if fixed then
  finalists = split(fixed, ";")
else
  local scores = {}  -- shape -> list of {cfg, x = the default's mean median / cfg's}
  for _, sh in ipairs(screen) do
    local start, n, meds, a = elapsed(), 0, {}, {}
    for i, c in ipairs(sh.configs) do
      local last = i == #sh.configs
      if last or elapsed() < screen_end then
        local m = run("s1", sh.name, c)
        n = n + 1
        if m then
          if c == "-" then a[#a + 1] = m else meds[#meds + 1] = {cfg = c, med = m} end
        end
      end
    end
    cost[sh.name] = n > 0 and (elapsed() - start) / n or 2
    local ref = 0
    for _, m in ipairs(a) do ref = ref + m / #a end
    local list = {}
    for _, m in ipairs(meds) do list[#list + 1] = {cfg = m.cfg, x = ref / m.med} end
    table.sort(list, function(p, q) return p.x > q.x end)
    scores[sh.name] = list
    for i, s in ipairs(list) do
      if i <= 5 then print(string.format("RANK %-8s %d %-40s x %.4f", sh.name, i, s.cfg, s.x)) end
    end
  end
  -- Finalists: each screened shape's best, then the next best (the screen's shapes in order) up to MAXF.
  local have = {}
  local function take(c)
    if c and not have[c] and #finalists < maxf then
      have[c] = true
      finalists[#finalists + 1] = c
    end
  end
  for _, sh in ipairs(screen) do take(scores[sh.name][1] and scores[sh.name][1].cfg) end
  for depth = 2, 4 do
    for _, sh in ipairs(screen) do take(scores[sh.name][depth] and scores[sh.name][depth].cfg) end
  end
end
-- As many finalists as leave MIN_ROUNDS rounds before DEADLINE (a shape not screened costs the mean of those that were).
local mean_cost, nc = 0, 0
for _, v in pairs(cost) do mean_cost, nc = mean_cost + v, nc + 1 end
mean_cost = nc > 0 and mean_cost / nc or 2
local function round_cost(nf)
  local s = 0
  for _, name in ipairs(finals) do s = s + (cost[name] or mean_cost) * (nf + 1) end
  return s
end
while #finalists > 1 and elapsed() + min_rounds * round_cost(#finalists) > deadline do table.remove(finalists) end
for _, c in ipairs(finalists) do print("FINALIST " .. c) end

-- 2. The rounds: the default and the finalists at every shape, alternated.
local configs = {"-"}
for _, c in ipairs(finalists) do configs[#configs + 1] = c end
for round = 1, max_rounds do
  if round > min_rounds and elapsed() + round_cost(#finalists) > deadline then
    print(string.format("stopped before round %d at %d s (a round ~%.0f s)", round, elapsed(), round_cost(#finalists)))
    break
  end
  for _, name in ipairs(finals) do
    local n = #configs
    for i = 1, n do run("r" .. round, name, configs[round % 2 == 1 and i or n + 1 - i]) end
  end
end
print("failures: " .. bad .. " at " .. elapsed() .. " s")
