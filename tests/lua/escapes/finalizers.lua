-- Escape 3b (run with --unsafe, where the debug library reaches the real metatables): every finalizer runs once; a
-- second __gc, a method or tostring after it raises "... was already freed" instead of using freed memory.
local check = dofile(arg[0]:gsub("[^/]+$", "") .. "check.lua")

local function fresh()
  return {
    ["tilelab.layout"] = {tl.layout("(8,4):(4,1)"), function(o) return o:size() end},
    ["tilelab.plot"] = {tl.plot.layout("(8,4):(4,1)"), function(o) return o:save("escape_finalizers.svg") end},
    ["tilelab.timeline"] = {tl.model_timeline{kernel = "gemm.mma", problem = {M = 256, N = 256, K = 256}},
                            function(o) return o:stats() end},
    ["tilelab.kernel"] = {tl.kernel("copy"), function(o) return o:schema() end},
  }
end
for type_name, entry in pairs(fresh()) do
  local object, use = entry[1], entry[2]
  local gc = debug.getmetatable(object).__gc
  gc(object)
  local freed = "this " .. type_name .. " was already freed"
  check.refused(freed, gc, object)
  check.refused(freed, use, object)
  check.refused(freed, tostring, object)
end
-- A finalizer given another type's object refuses it.
local objects = fresh()
local layout_gc = debug.getmetatable(objects["tilelab.layout"][1]).__gc
check.refused("tilelab.layout expected, got tilelab.plot", layout_gc, objects["tilelab.plot"][1])
collectgarbage()
print("finalizers idempotent")
