-- The tl API's behaviour and error paths, on any machine (runs succeed on a GPU, report why not without one).
-- Run: tilelab run tests/lua/api.lua OUTDIR     (ctest: lua.api)

local outdir = assert(arg[1], "usage: api.lua OUTDIR")
assert(tl.mkdir(outdir))
local checks = 0

local function check(cond, what)
  checks = checks + 1
  if not cond then error("check failed: " .. what, 2) end
end

-- Calls f(...) expecting an error whose message contains `pattern` (plain text).
local function raises(pattern, f, ...)
  local ok, err = pcall(f, ...)
  checks = checks + 1
  if ok then error("expected an error containing '" .. pattern .. "', got success", 2) end
  if not tostring(err):find(pattern, 1, true) then
    error("expected an error containing '" .. pattern .. "', got: " .. tostring(err), 2)
  end
end

-- [kernels] ------------------------------------------------------------------------------------------------
local list = tl.kernels()
local names = {}
for _, k in ipairs(list) do names[k.name] = k end
check(names["gemm.simt"] and names["gemm.simt"].family == "gemm", "tl.kernels lists gemm.simt with its family")
check(names["copy"] and #names["copy"].config > 0, "kernels carry their config schema")
check(names["test.oob"] == nil, "hidden kernels are not listed by default")
local all = {}
for _, k in ipairs(tl.kernels(true)) do all[k.name] = true end
check(all["test.oob"], "tl.kernels(true) lists the hidden ones")

local k = tl.kernel("gemm.simt")
check(k.name == "gemm.simt" and k.family == "gemm", "kernel object fields")
check(tostring(k) == "tl.kernel(gemm.simt)", "kernel tostring")
local schema = k:schema()
check(schema.name == "gemm.simt" and #schema.config > 0 and #schema.problem > 0, "schema has config and problem")

local cfg = k:config{}
local first = schema.config[1]
check(cfg[first.name] ~= nil, "config{} fills defaults (" .. first.name .. ")")
check(math.type(cfg.block_M) == "integer", "integer parameters come back as integers")
local prob = k:problem{M = 100}
check(prob.M == 100 and prob.N ~= nil, "problem{} keeps given values and fills the rest")

raises("config key 'blockM'", k.config, k, {blockM = 64})
raises("must be a table", k.config, k, "block_M=64")
raises("must be a number, string or boolean", k.config, k, {block_M = {}})
raises("whole number", k.config, k, {block_M = 64.5})
-- inf, nan and past 2^63 are no whole numbers (inf was converted, undefined, to -2^63 and refused as out of range)
raises("'M' must be a whole number (got inf)", k.problem, k, {M = math.huge})
raises("'M' must be a whole number (got -inf)", k.problem, k, {M = -math.huge})
raises("'M' must be a whole number (got 1e+300)", k.problem, k, {M = 1e300})
raises("must be a whole number", k.problem, k, {M = 0 / 0})
raises("block_M", k.config, k, {block_M = 3})
raises("no kernel named 'gemm.simtt'", tl.kernel, "gemm.simtt")
raises("did you mean 'gemm.simt'", tl.kernel, "gemm.simtt")
raises("bad argument #1", tl.kernel, {})
raises("tilelab.kernel expected", k.config, {}, {})

local lays = tl.kernel("gemm.mma"):layouts()
check(#lays > 0 and lays[1].name and lays[1].spec, "k:layouts() names the kernel's layouts")
for _, li in ipairs(lays) do check(tl.layout(li.spec):size() > 0, "every kernel layout parses: " .. li.spec) end
check(#tl.kernel("copy"):layouts() >= 0, "k:layouts() on any kernel")

local ok, why = k:can_implement({M = 64, N = 64, K = 64}, {block_M = 64})
check(ok == true and why == nil, "can_implement accepts a valid config")
ok, why = k:can_implement({M = 64, N = 64, K = 64}, {nonsense = 1})
check(ok == false and why:find("nonsense", 1, true), "can_implement returns false and the reason")

local res, err = k:compile({}, {M = 128, N = 128, K = 64})
check(res ~= nil, "compile works without a GPU: " .. tostring(err))
check(res.registers > 0 and res.name_expression:find("gemm_simt", 1, true), "compile reports registers and the name")
check(type(res.cached) == "boolean" and res.compile_ms >= 0, "compile reports cache use and time")
local res2 = k:compile({}, {M = 128, N = 128, K = 64})
check(res2.cached, "a second compile of the same config comes from the cache")
local bad, berr = k:compile({nonsense = 1})
check(bad == nil and berr:find("nonsense", 1, true), "compile of an invalid config: nil, reason")

local dev, dev_why = tl.device{measure = false}
local run, run_err = k:run{problem = {M = 128, N = 128, K = 64}, rep = 3, warmup = 1}
if dev then
  check(run and run.passed and run.median_ms > 0, "run on the GPU passes: " .. tostring(run_err))
  check(run.resources.registers > 0 and run.record.kernel == "gemm.simt", "run result has resources and its record")
else
  check(type(dev_why) == "string" and dev_why:find("no GPU", 1, true), "tl.device says why there is none")
  check(run == nil and run_err:find("no GPU", 1, true), "run without a GPU: nil and the reason: " .. tostring(run_err))
end
local r0, e0 = k:run{problem = {M = 64}, config = {nonsense = 1}}
check(r0 == nil and e0:find("invalid problem/config", 1, true), "run of an invalid config says so, GPU or not")
raises("'rep' must be an integer", k.run, k, {rep = "many"})
raises("'baseline' must be a string", k.run, k, {baseline = true})
-- bench --timer from Lua: the same timers and refusals; the result and its record say which timer.
raises("run: timer: unknown timer 'nvtx' (valid: events, cupti, graph)", k.run, k, {timer = "nvtx"})
raises("run: graph_launches is set, but the timer is events", k.run, k, {graph_launches = 8})
raises("run: graph_launches: 10001 is out of range (expected 1 to 10000", k.run, k, {timer = "graph", graph_launches = 10001})
raises("tl.sweep: timer: unknown timer 'Events'", tl.sweep, {kernel = "copy", space = {vec = {1}}, timer = "Events"})
local g, g_err = k:run{problem = {M = 128, N = 128, K = 64}, rep = 3, warmup = 1, timer = "graph", graph_launches = 4}
if dev then
  check(g and g.passed and g.timer == "graph" and g.graph_launches == 4, "graph timer run: " .. tostring(g_err))
  check(g.record.timer == "graph" and g.record.graph_launches == 4, "the record says the timer and its launches")
else
  check(g == nil and g_err:find("no GPU", 1, true), "graph timer without a GPU: nil and the reason")
end

-- [layouts] ------------------------------------------------------------------------------------------------
local l = tl.layout("(8,4):(4,1)")
check(l:size() == 32 and l:cosize() == 32, "size/cosize")
check(l:shape() == "(8,4)" and l:stride() == "(4,1)" and l:rank() == 2, "shape/stride/rank")
check(l(1) == 4 and l:at(1) == 4 and l:at(0, 1) == 1, "evaluation by index and by (row, col)")
check(tostring(l) == "tl.layout((8,4):(4,1))", "layout tostring")
check(tl.layout("(4,2):(1,4)"):coalesce() == tl.layout("8:1"), "coalesce merges contiguous modes")

local a = tl.layout("(4,2):(2,1)")
local inv = a:inverse()
for i = 0, a:size() - 1 do check(a(inv(i)) == i, "right inverse: a(inv(i)) == i") end
local c = tl.layout("4:2"):complement(16)
check(c:size() * 4 == 16, "complement fills the codomain: " .. tostring(c))
local comp = tl.layout("(4,4):(4,1)"):compose("(2,2):(1,2)")
for i = 0, 3 do check(comp(i) == tl.layout("(4,4):(4,1)")(tl.layout("(2,2):(1,2)")(i)), "compose evaluates as f(g(i))") end
local div = tl.layout("16:1"):divide("4:1")
check(div:shape() == "(4,4)", "logical divide 16:1 by 4:1 -> (4,4): " .. div:shape())
local prod = tl.layout("4:1"):product("2:1")
check(prod:size() == 8, "logical product size")
raises("unknown form", tl.layout("16:1").divide, tl.layout("16:1"), "4:1", "diagonal")
raises("divisibility", tl.layout("(4,3):(3,1)").compose, tl.layout("(4,3):(3,1)"), "2:3")

local sw = tl.layout("swizzle<3,3,3> o (8,64):(64,1)", {dtype = "f16"})
check(sw:kind() == "swizzled" and sw:size() == 512, "swizzled layouts parse")
raises("plain layouts", sw.coalesce, sw)
raises("column", tl.layout, "(8,4):(4,")
raises("unknown dtype", tl.layout, "8:1", {dtype = "f7"})
raises("bad argument #1", tl.layout, {})

local atom = tl.layout("mma.m16n8k16.f16.A")
check(atom:kind() == "atom", "atoms parse")
local row, col = atom:at(0, 0)
local t, v = atom:owner(row, col)
check(t == 0 and v == 0, "atom: (thread, value) -> (row, col) -> back")
raises("out of range", atom.at, atom, 32, 0)
check(#tl.layouts() > 10 and tl.layouts()[1].description ~= nil, "tl.layouts lists the atoms")
-- TileLang's Fragment.repeat / replicate as methods (repeat is a Lua keyword: repeat_)
local warp = atom:repeat_(2, 1, "thread"):replicate(2)
local wr, wc = warp:tile()
local wt, wv, wrep = warp:threads()
check(wr == 32 and wc == 16 and wt == 128 and wv == 8 and wrep == 2, "repeat_ on threads, then replicate")
check(warp == tl.layout("mma.m16n8k16.f16.A.repeat(2,1,thread,rows).replicate(2)"), "the method appends to the SPEC")
local r64, c64 = warp:at(64 + 32 + 5, 3)
local r5, c5 = atom:at(5, 3)
check(r64 == r5 + 16 and c64 == c5, "thread 101 holds what 37 does: thread 5's element, 16 rows down")
local block = warp:repeat_(4, 2, "value", "rows")
check(select(2, block:threads()) == 64 and select(1, block:tile()) == 128, "repeat_ on values")
check(block:json().cells[1].threads[2] == 64, "json lists every holder of a replicated element")
raises("memory layout", l.repeat_, l, 2, 1)
raises("must be 1..16777216", atom.repeat_, atom, 0, 1)
raises("\"thread\" or \"value\"", atom.repeat_, atom, 2, 1, "sideways")
raises("\"rows\" or \"cols\"", atom.repeat_, atom, 2, 1, "thread", "diagonal")
raises("2^24", atom.repeat_, atom, 4096, 4096)

local grid = sw:json()
check(grid.shape[1] == 8 and grid.shape[2] == 64 and #grid.cells == 512, "layout json grid")

local p = l:plot{color = "index"}
local w, h = p:size()
check(w > 0 and h > 0, "layout plot has a size")
check(p:save(outdir .. "/layout.svg") and p:save(outdir .. "/layout.png"), "layout plot saves svg and png")
check(tl.plot.layout("ldmatrix.x4.trans"):save(outdir .. "/ldmatrix.svg"), "tl.plot.layout takes a SPEC")
raises("unknown color", l.plot, l, {color = "rainbow"})
local pbad, perr = p:save(outdir .. "/layout.bmp")
check(pbad == nil and perr ~= nil, "saving to an unknown format: nil, reason")

local banks = tl.banks("(32,32):(32,1)", "col.scalar")
check(banks.wavefronts == 32 and banks.ideal_wavefronts == 1, "column access of a 32x32 f32 tile: 32-way conflict")
check(tl.banks("(32,32):(33,1)", "col.scalar").wavefronts == 1, "padding removes the conflict")
check(tl.layout("smem.swizzle128B.bf16.(8,64)"):banks("col.v128:8").wavefronts == 1, "layout:banks")
check(tl.plot.banks("(8,64):(64,1)", "col.v128:8", {elem_bytes = 2}):save(outdir .. "/banks.svg"), "bank plot")
raises("access pattern must be a string", tl.banks, "(32,32):(32,1)", 5)

-- [timelines and rooflines] ----------------------------------------------------------------------------------
local tm = tl.model_timeline{kernel = "gemm.mma", problem = {M = 256, N = 256, K = 256}}
check(tm.model and tm.events > 0 and tm.kernel == "gemm.mma", "model timeline")
local st = tm:stats()
check(st.model == true and #st.regions > 0, "timeline stats")
check(tm:trace(outdir .. "/trace.json"), "timeline trace")
local back = assert(tl.load_timeline(outdir .. "/trace.json"))
check(back.model and back.events == tm.events, "a saved trace loads back with every event")
check(tl.plot.timeline(outdir .. "/trace.json"):save(outdir .. "/gantt.png"), "plot a trace file")
check(tl.plot.timeline(tm, {view = "stats"}):save(outdir .. "/stats.svg"), "stats view")
check(tm:plot{view = "occupancy"}:save(outdir .. "/occ.svg"), "occupancy view")
raises("unknown view", tl.plot.timeline, tm, {view = "pie"})
raises("no timeline model for gemm.simt", tl.model_timeline, {kernel = "gemm.simt"})
raises("has no timeline", tl.plot.timeline, {})
local nt, nterr = tl.load_timeline(outdir .. "/missing.json")
check(nt == nil and nterr:find("cannot open", 1, true), "load_timeline of a missing file: nil, reason")

local profile = arg[2]
if profile then
  local records = {}
  for line in io.lines(arg[3]) do
    local rec = tl.json_decode(line)
    if rec then records[#records + 1] = rec end
  end
  local roof = tl.plot.roofline{runs = records, device_profile = profile, color_by = "block_M"}
  check(roof:save(outdir .. "/roofline.png"), "roofline from records and a device profile")
  raises("roofline", tl.plot.roofline, {device_profile = outdir .. "/missing.json"})
end

-- [user kernels] ---------------------------------------------------------------------------------------------
local src = [[
template <int THREADS>
__global__ void scale(const float* x, float* y, float a, int n) {
  int i = blockIdx.x * THREADS + threadIdx.x;
  if (i < n) y[i] = a * x[i];
}
]]
local def = {
  name = "user.scale", source = src, entry = "scale<{threads}>",
  problem = {n = {default = 1000, min = 1, max = 1 << 24}},
  params = {threads = {default = 128, values = {64, 128, 256}}},
  can_implement = function(p, c) if p.n % 2 == 1 then return false, "n must be even" end return true end,
  grid = function(p, c) return (p.n + c.threads - 1) // c.threads end,
  block = function(p, c) return c.threads end,
  args = function(p, c)
    return {{name = "x", shape = {p.n}}, {name = "y", shape = {p.n}, role = "out"},
            {name = "a", dtype = "f32", value = 2}, {name = "n", dtype = "i32", value = p.n}}
  end,
  flops = function(p) return p.n end,
  bytes = function(p) return 8 * p.n end,
  reference = function(p, inputs, out, i) return inputs.a * inputs.x[i] end,
}
local uk = tl.define_kernel(def)
check(uk.name == "user.scale" and uk.family == "user", "define_kernel returns a kernel object")
local found = false
for _, kk in ipairs(tl.kernels()) do if kk.name == "user.scale" then found = true end end
check(found, "a user kernel is listed with the library's")
check(uk:config{}.threads == 128, "user params have defaults")
raises("threads", uk.config, uk, {threads = 100})
local ok2, why2 = uk:can_implement({n = 999}, {})
check(ok2 == false and why2:find("n must be even", 1, true), "user can_implement's reason comes through")
local co = coroutine.wrap(function()
  local okc, whyc = uk:can_implement({n = 7}, {})
  coroutine.yield(okc == false and whyc:find("n must be even", 1, true) ~= nil)
end)
check(co(), "user callbacks run on the calling coroutine")
local ures, uerr = uk:compile({threads = 256}, {n = 4096})
check(ures ~= nil and ures.name_expression == "scale<256>", "user kernel compiles without a GPU: " .. tostring(uerr))
local urun, urun_err = uk:run{problem = {n = 4096}, rep = 2, warmup = 1}
if dev then
  check(urun and urun.passed, "user kernel passes against its Lua reference: " .. tostring(urun_err))
else
  check(urun == nil and urun_err:find("no GPU", 1, true), "user kernel run without a GPU says why")
end
-- A user kernel's layouts (per config, for k:layouts, tl.layout and the GUI's Layouts panel) and probe regions.
local ldef = {}
for key, v in pairs(def) do ldef[key] = v end
ldef.name = "user.scale_layouts"
ldef.layouts = function(p, c) return {x_tile = "(" .. c.threads .. "):(1)", frag = "mma.m16n8k16.f16.A"} end
ldef.probes = {"load", "store"}
local lk = tl.define_kernel(ldef)
local ll = lk:layouts({}, {threads = 64})
check(#ll == 2 and ll[1].name == "frag" and ll[2].name == "x_tile" and ll[2].spec == "(64):(1)",
      "user layouts follow the config, in name order")
check(tl.layout(ll[2].spec) ~= nil and tl.layout(ll[1].spec) ~= nil, "user layout SPECs draw as tl.layout takes them")
check(#lk.probes == 2 and lk.probes[1] == "load", "user probe regions are the kernel's")
-- Its probe build (-DTL_TIMELINE=1) compiles without a GPU: what a timeline run (k:run{timeline=true}) launches.
local pdef = {}
for key, v in pairs(def) do pdef[key] = v end
pdef.name = "user.scale_probes"
pdef.source = [[
#include "tile/probe.hpp"
template <int T> __global__ void scale_probed(const float* x, float* y, float a, int n) {
  if (threadIdx.x == 0) TL_PROBE_BLOCK_BEGIN();
  TL_PROBE_WARP_INIT();
  TL_PROBE_BEGIN(0, 0, 0);
  const int i = blockIdx.x * T + threadIdx.x;
  if (i < n) y[i] = a * x[i];
  TL_PROBE_END(0, 0, 0);
  TL_PROBE_FLUSH();
  if (threadIdx.x == 0) TL_PROBE_BLOCK_END();
}
]]
pdef.entry = "scale_probed<{threads}>"
pdef.probes = {"scale"}
local pk = tl.define_kernel(pdef)
local plain = pk:compile({}, {n = 4096})
local probed, perr = pk:compile({}, {n = 4096}, {timeline = true})
check(plain and probed and probed.name_expression == plain.name_expression and probed.registers >= plain.registers,
      "a user kernel's probe build compiles: " .. tostring(perr))
local _, nop = uk:compile({}, {n = 4096}, {timeline = true})
check(nop and nop:find("lists no probes", 1, true), "a kernel without probes has no probe build: " .. tostring(nop))
ldef.layouts = {{name = "bad"}}
raises("each entry is name = ", function() tl.define_kernel(ldef):layouts() end)
ldef.layouts = nil
ldef.probes = {"load", 3}
raises("'probes' must be a list of region names", tl.define_kernel, ldef)
check(tl.define_kernel(def).name == "user.scale", "a script may redefine its own kernel")
check(uk:config{}.threads == 128, "a kernel object taken before the redefinition still works")
raises("library kernel", tl.define_kernel, {name = "gemm.simt", source = src, entry = "x", grid = 1, block = 1, args = {}})
raises("'name' is required", tl.define_kernel, {source = src})
raises("'grid' is required", tl.define_kernel, {name = "user.bad", source = src, entry = "scale<128>", block = 1, args = {}})
raises("{nope} is not a problem or config parameter", tl.define_kernel,
  {name = "user.bad", source = src, entry = "scale<{nope}>", grid = 1, block = 1, args = {}})
raises("source file 'missing.cu' not found", tl.define_kernel,
  {name = "user.bad", source = "missing.cu", entry = "scale<128>", grid = 1, block = 1, args = {}})
raises("user.bad grid", tl.define_kernel,
  {name = "user.bad", source = src, entry = "scale<128>", grid = function() error("boom") end, block = 1, args = {}})
raises("role must be in, out or inout", tl.define_kernel,
  {name = "user.bad", source = src, entry = "scale<128>", grid = 1, block = 1, args = {{name = "x", shape = {4}, role = "up"}}})
local broken = tl.define_kernel{name = "user.broken", source = "__global__ void f( { }", entry = "f", grid = 1,
  block = 32, args = {}}
local bres, berr2 = broken:compile{}
check(bres == nil and berr2:find("error", 1, true), "a user kernel that does not compile: nil and the compiler's message")

print(("lua api ok (%d checks)"):format(checks))
