-- Escape 3: TileLab's userdata metatables. getmetatable(p).__gc(p) twice was a double free (SIGABRT); one __gc then
-- a method read freed memory. The metatables are now protected: getmetatable answers a placeholder.
local check = dofile(arg[0]:gsub("[^/]+$", "") .. "check.lua")

local objects = {
  layout = tl.layout("(8,4):(4,1)"),
  plot = tl.plot.layout("(8,4):(4,1)"),
  timeline = tl.model_timeline{kernel = "gemm.mma", problem = {M = 256, N = 256, K = 256}},
  kernel = tl.kernel("copy"),
}
for name, object in pairs(objects) do
  local mt = getmetatable(object)
  assert(type(mt) == "string" and mt:find("protected", 1, true),
         name .. ": getmetatable gave the real metatable (" .. tostring(mt) .. ")")
  check.refused("attempt to call a nil value", function() return getmetatable(object).__gc(object) end)
  check.refused("bad argument #1 to 'setmetatable' (table expected", setmetatable, object, {})
end
-- The objects still work.
assert(objects.layout:size() == 32 and objects.plot:size() > 0 and objects.timeline.events > 0)
assert(objects.kernel.name == "copy")
print("metatables protected")
