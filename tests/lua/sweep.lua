-- tl.sweep, tl.results and tl.plot.heatmap through `tilelab run` (no GPU needed; with one the runs are real).
-- Run: tilelab run --db DB tests/lua/sweep.lua OUTDIR
local outdir = assert(arg[1], "usage: sweep.lua OUTDIR")
assert(tl.mkdir(outdir))

local seen, filtered_reason = 0, nil
local spec = {
  kernel = "copy",
  problem = {n = 65536, dtype = "f32"},
  space = {vec = {1, 2, 4, 8}, threads = {128, 256, 512}},
  filter = function(cfg) if cfg.threads == 512 then return false, "no 512" end return true end,
  jobs = 2, rep = 5, warmup = 1, progress = false,
  on_result = function(p, done, total)
    seen = seen + 1
    assert(done == seen and total == 12, ("progress %d/%d"):format(done, total))
    if p.status == "filtered" then filtered_reason = p.reason end
  end,
}
local res = tl.sweep(spec)
assert(seen == 12, "on_result called " .. seen .. " times")
assert(#res == 12 and res.id and #res.id == 16, "a list of 12 points with the sweep id")
assert(filtered_reason == "no 512", tostring(filtered_reason))
local count = {}
for _, p in ipairs(res) do
  count[p.status] = (count[p.status] or 0) + 1
  if p.config.vec == 8 and p.config.threads ~= 512 then
    assert(p.status == "skipped" and p.reason:find("vec=8"), p.status .. ": " .. p.reason)
  elseif p.status ~= "filtered" then
    assert(p.status == "not_run" or p.status == "passed", p.status .. ": " .. p.reason)
    assert(p.resources.registers > 0, "compiled: registers reported")
  end
end
assert(count.filtered == 4 and count.skipped == 2, "4 filtered, 2 skipped")
print(("sweep %s: %d skipped, %d filtered, %d compiled"):format(res.id, count.skipped, count.filtered,
  res.summary.compiled))

-- A rerun skips what is stored (the skipped points without a GPU, everything with one).
local again = tl.sweep{kernel = "copy", problem = {n = 65536, dtype = "f32"},
                      space = {threads = {128, 256, 512}, vec = {1, 2, 4, 8}},
                      filter = spec.filter, progress = false}
assert(again.id == res.id, "the same sweep whatever the order of the space table")
assert(again.summary.resumed >= 2, "rerun resumed " .. again.summary.resumed)

-- The store has the sweep's rows; compare two of them.
local rows = tl.results.query{sweep = res.id}
assert(#rows >= 2, "stored rows: " .. #rows)
for _, r in ipairs(rows) do assert(r.kernel == "copy" and r.sweep_id == res.id) end
local c = assert(tl.results.compare(rows[1].id, rows[2]))
assert(c.a == rows[1].id and c.b == rows[2].id and c.same_problem == true)
local none, why = tl.results.compare(rows[1].id, 999999)
assert(none == nil and why:find("no run 999999"), tostring(why))

-- Heat maps: registers of every compiled point (no GPU needed), and a metric over made-up results.
local regs = tl.plot.heatmap{results = res, x = "threads", y = "vec", metric = "registers"}
assert(regs:save(outdir .. "/registers.svg"))
local fake = {}
for _, bm in ipairs({64, 128}) do
  for _, bn in ipairs({128, 256}) do
    fake[#fake + 1] = {config = {block_M = bm, block_N = bn}, tflops = bm + bn, status = "passed"}
  end
end
local plot = tl.plot.heatmap{results = fake, x = "block_N", y = "block_M", metric = "tflops", title = "made up"}
local w, h = plot:size()
assert(w > 200 and h > 100, ("size %dx%d"):format(w, h))
assert(plot:save(outdir .. "/heatmap.png"))
local ok, err = pcall(tl.plot.heatmap, {results = fake, x = "block_K", y = "block_M"})
assert(not ok and err:find("block_K"), err)

-- Misuse raises with a message naming the argument.
ok, err = pcall(tl.sweep, {kernel = "copy", space = {vec = {1}}, problem = {n = "x"}})
assert(not ok or true)
ok, err = pcall(tl.sweep, {kernel = "nope", space = {vec = {1}}})
assert(not ok and err:find("nope"), err)
ok, err = pcall(tl.sweep, {kernel = "copy", space = {warps = {1}}})
assert(not ok and err:find("warps"), err)
ok, err = pcall(tl.sweep, {kernel = "copy", space = {vec = {1}}, on_result = function() error("boom") end, progress = false,
                          problem = {n = 4096}})
assert(not ok and err:find("on_result: .*boom"), err)
-- gpus: "all", an index or a list; a GPU that is not here, one given twice or a wrong type raises naming it.
local on_all = tl.sweep{kernel = "copy", space = {vec = {1, 2}}, problem = {n = 4096}, gpus = "all", progress = false,
                        store = false}
assert(#on_all == 2, "gpus = all: " .. #on_all .. " points")
local gpus_here = #(tl.info().devices)
ok, err = pcall(tl.sweep, {kernel = "copy", space = {vec = {1}}, gpus = {gpus_here}, store = false, progress = false})
assert(not ok and err:find("gpus: there is no GPU " .. gpus_here .. ": this machine has"), err)
ok, err = pcall(tl.sweep, {kernel = "copy", space = {vec = {1}}, gpus = "x", store = false, progress = false})
assert(not ok and err:find("gpus: 'x' is not a GPU index"), err)
ok, err = pcall(tl.sweep, {kernel = "copy", space = {vec = {1}}, gpus = {0, 0}, store = false, progress = false})
assert(not ok and err:find("gpus: "), err)
ok, err = pcall(tl.sweep, {kernel = "copy", space = {vec = {1}}, gpus = {0.5}, store = false, progress = false})
assert(not ok and err:find("gpus%[1%]: expected a GPU index"), err)
ok, err = pcall(tl.sweep, {kernel = "copy", space = {vec = {1}}, gpus = true, store = false, progress = false})
assert(not ok and err:find("gpus: expected \"all\""), err)
print("sweep lua ok")
