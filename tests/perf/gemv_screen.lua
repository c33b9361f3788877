-- gemv22: screen every candidate once (median of DEQUANT_REP, shuffled order, M by M), pick the TOP best per shape,
-- check each pick's float64 reference once, then ROUNDS alternated rounds (default, picks; reversed every other round).
-- A shape's "force" list (cands.json) joins its picks whatever the screen says (session 49: the configs an auto would
-- take, timed in the rounds whether or not the screen ranked them first).
-- Usage: tilelab run --allow-write $OUT tests/perf/gemv_screen.lua cands.json (from gemv_screen_cands.py). Environment:
-- VERIFY_DEFAULT=1 (the default float64-checked too), ORDER (the screen's shapes in order, e.g. A16_M16,B_M16,...), SCREEN_S (no new shape screened after that many
-- seconds), TOP (picks a shape, default 2), ROUNDS (default 4), DEQUANT_REP (default 20), OUT (rows.json). Without a
-- GPU it compiles everything.
local f = assert(io.open(arg[1])); local cj = tl.json_decode(f:read("a")); f:close()
local rounds = tonumber(os.getenv("ROUNDS") or "4")
local rep = tonumber(os.getenv("DEQUANT_REP") or "20")
local top = tonumber(os.getenv("TOP") or "2")
local k = tl.kernel("gemm.dequant")
local function parse(text)  -- "k=v,..." / "-" -> config table
  local c = {path = "gemv"}
  if text ~= "-" then
    for kv in text:gmatch("[^,]+") do local key, v = kv:match("([^=]+)=(.*)"); c[key] = tonumber(v) or v end
  end
  return c
end
local function prob(text)
  local p = {}
  for kv in text:gmatch("[^,]+") do local key, v = kv:match("([^=]+)=(.*)"); p[key] = tonumber(v) or v end
  return p
end
local names = {}
for name in (os.getenv("ORDER") or ""):gmatch("[^,]+") do if cj[name] then names[#names + 1] = name end end
if #names == 0 then for name in pairs(cj) do names[#names + 1] = name end; table.sort(names) end
local screen_s = tonumber(os.getenv("SCREEN_S") or "1e9")
local dev = tl.device{measure = true}
if not dev then
  local n, bad = 0, 0
  for _, name in ipairs(names) do
    local all = {"-", table.unpack(cj[name].cands)}
    for _, c in ipairs(cj[name].force or {}) do all[#all + 1] = c end
    for _, c in ipairs(all) do
      n = n + 1
      if not k:compile(parse(c), prob(cj[name].problem)) then bad = bad + 1; print("compile failed", name, c) end
    end
  end
  print(string.format("no GPU: compiled %d, %d failed", n, bad))
  return
end
local hbm = dev.ceilings and dev.ceilings.hbm_bytes_per_s or 0
print(string.format("%s, measured HBM copy %.0f GB/s", dev.name, hbm * 1e-9))
local t0 = os.time()
local seed = 12345
local function rnd(n) seed = (seed * 1103515245 + 12345) % 2147483648; return seed % n + 1 end
local function run(name, ctext, verify, tag)
  local p = prob(cj[name].problem)
  local r, err = k:run{problem = p, config = parse(ctext), rep = rep, warmup = 5, timer = "cupti", verify = verify}
  if not r then print(string.format("%s ERROR %s %s: %s", tag, name, ctext, tostring(err))); return nil end
  local pct = hbm > 0 and 100 * r.gbps * 1e9 / hbm or 0
  print(string.format("%s %-7s %-4s %8.2f (%6.2f) %5.1f%% %s", tag, name, r.passed and "PASS" or "FAIL",
                      r.median_ms * 1e3, (r.min_ms or 0) * 1e3, pct, ctext))
  return {tag = tag, name = name, config = ctext, us = r.median_ms * 1e3, min_us = (r.min_ms or 0) * 1e3, pct = pct,
          passed = r.passed, verify = verify}
end
-- 1. screen
local screen, rows = {}, {}
for _, name in ipairs(names) do
  local list = {"-", table.unpack(cj[name].cands)}
  for i = #list, 2, -1 do local j = rnd(i); list[i], list[j] = list[j], list[i] end
  screen[name] = {}
  if os.time() - t0 > screen_s then print("SKIP screen of " .. name .. " (time)"); list = {} end
  for _, c in ipairs(list) do
    local r = run(name, c, false, "S")
    if r then screen[name][#screen[name] + 1] = r; rows[#rows + 1] = r end
  end
end
print(string.format("screen done at %d s", os.time() - t0))
-- 2. picks: the TOP fastest by median other than the default (whatever the default's place), and the default's rank
local picks = {}
for _, name in ipairs(names) do
  local s = screen[name]
  if #s == 0 then picks[name] = {}; goto next end
  table.sort(s, function(a, b) return a.us < b.us end)
  local d
  for i, r in ipairs(s) do if r.config == "-" then d = i end end
  local out, taken = {}, {}
  for _, c in ipairs(cj[name].force or {}) do out[#out + 1] = c; taken[c] = true end
  local n = 0
  for _, r in ipairs(s) do
    if r.config ~= "-" and r.passed and not taken[r.config] and n < top then out[#out + 1] = r.config; n = n + 1 end
  end
  picks[name] = out
  print(string.format("PICK %-7s default rank %d of %d (%.2f); %s", name, d or -1, #s, d and s[d].us or 0,
                      table.concat(out, " | ")))
  ::next::
end
-- 3. float64 check of each pick once (and of the default with VERIFY_DEFAULT=1)
local verify_default = os.getenv("VERIFY_DEFAULT") == "1"
for _, name in ipairs(names) do
  local list = verify_default and {"-", table.unpack(picks[name])} or picks[name]
  for _, c in ipairs(list) do local r = run(name, c, true, "V"); if r then rows[#rows + 1] = r end end
end
print(string.format("verify done at %d s", os.time() - t0))
-- 4. rounds
for round = 1, rounds do
  for _, name in ipairs(names) do
    local list = {"-", table.unpack(picks[name])}
    local n = #list
    for i = 1, n do
      local c = list[round % 2 == 1 and i or n + 1 - i]
      local r = run(name, c, false, "R" .. round)
      if r then rows[#rows + 1] = r end
    end
  end
end
print(string.format("rounds done at %d s", os.time() - t0))
local out = os.getenv("OUT")
if out then tl.write_file(out .. "/rows.json", tl.json_encode(rows, 1)) end
