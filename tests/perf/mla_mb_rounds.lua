-- mla.decode at FlashMLA's memory-bound recipe (b 128 varlen, s_q 1, h_q 64; MB 4096 / 8192 / 16384): per shape its
-- configs alternated in one worker, ROUNDS rounds (odd rounds in the listed order, even rounds reversed: A B .. B A),
-- REP timed runs a point after 5 warm-ups (CUDA events, L2 flushed), every run float64-checked. Prints one ROW line a
-- run (median, min, GB/s, PASS/FAIL) and, for the shapes in TIMES (a Lua pattern, default "16384"), a TIMES line with
-- every run's time in launch order (to see a bimodal or drifting sequence). Usage: tilelab run mla_mb_rounds.lua.
-- Environment: ROUNDS (default 3), REP (default 50), CONFIGS_16K / CONFIGS (';'-separated "k=v,..." or "-": the
-- configs at 16384 / at the other shapes; mlamb's call timed l2_ahead=1 / 2 too, a switch since taken out), ONLY (a
-- Lua pattern of the shape names), SHAPES (';'-separated "name|k=v,...": other problems instead, e.g. the compute-bound
-- CB / L32 anchors, each with CONFIGS). Without a GPU it compiles them.
local rounds = tonumber(os.getenv("ROUNDS") or "3")
local rep = tonumber(os.getenv("REP") or "50")
local times_pat = os.getenv("TIMES") or "16384"
local only = os.getenv("ONLY")
local k = tl.kernel("mla.decode")
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
local function list(text)
  local out = {}
  for c in text:gmatch("[^;]+") do out[#out + 1] = {text = c, config = kv(c)} end
  return out
end
local c16 = list(os.getenv("CONFIGS_16K") or "-;evict_first=off;sms=264")
local cother = list(os.getenv("CONFIGS") or "-;evict_first=off")
local shapes = {}
if os.getenv("SHAPES") then  -- ';'-separated "name|k=v,...": any mla.decode problems, each with CONFIGS
  for s in os.getenv("SHAPES"):gmatch("[^;]+") do
    local name, problem = s:match("([^|]+)|(.*)")
    if not only or name:match(only) then shapes[#shapes + 1] = {name = name, problem = kv(problem), configs = cother} end
  end
else
  for _, s in ipairs({{"MB 16384", 16384, c16}, {"MB 8192", 8192, cother}, {"MB 4096", 4096, cother}}) do
    if not only or s[1]:match(only) then
      shapes[#shapes + 1] = {name = s[1], problem = {batch = 128, seq_q = 1, heads = 64, seq_k = s[2], varlen = true},
                             configs = s[3]}
    end
  end
end
local dev = tl.device{}
if not dev then
  for _, sh in ipairs(shapes) do
    for _, c in ipairs(sh.configs) do
      local r, err = k:compile(c.config, sh.problem)
      print((r and "compiled " or "FAILED ") .. sh.name .. " " .. c.text ..
            (r and string.format(" (%d registers, %d B spills)", r.registers, r.spills) or (": " .. tostring(err))))
    end
  end
  return
end
print(dev.name)
local bad = 0
for round = 1, rounds do
  for _, sh in ipairs(shapes) do
    local n = #sh.configs
    for i = 1, n do
      local c = sh.configs[round % 2 == 1 and i or n + 1 - i]
      local r, err = k:run{problem = sh.problem, config = c.config, rep = rep, warmup = 5, verify = true}
      if not r or not r.passed then bad = bad + 1 end
      if r then
        print(string.format("ROW r%d|%s|%s|%s|%.5f|%.5f|%.1f|%.4f|%.3g", round, sh.name, c.text,
                            r.passed and "PASS" or "FAIL", r.median_ms, r.min_ms or 0, r.gbps or 0,
                            r.efficiency or 0, r.rel_err or 0))
        local ts = r.record and r.record.times_ms
        if ts and sh.name:match(times_pat) then
          local parts = {}
          for j = 1, #ts do parts[#parts + 1] = string.format("%.4f", ts[j]) end
          print(string.format("TIMES r%d|%s|%s|%s", round, sh.name, c.text, table.concat(parts, ",")))
        end
      else
        print(string.format("ROW r%d|%s|%s|ERROR %s", round, sh.name, c.text, tostring(err)))
      end
    end
  end
end
print("failures: " .. bad)
