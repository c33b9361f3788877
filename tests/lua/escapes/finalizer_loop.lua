-- Escape: Lua runs finalizers with its debug hooks off (during a collection, and when the state closes after the
-- script), so a __gc that never returns hung tilelab past --timeout and --max-instructions. The sandbox refuses a
-- metatable with a __gc field; a __gc added to the metatable afterwards marks nothing (Lua's rule), so never runs.
local check = dofile(arg[0]:gsub("[^/]+$", "") .. "check.lua")

local forever = function() while true do end end
check.refused("a __gc finalizer is disabled in the sandbox", setmetatable, {}, {__gc = forever})
check.refused("a __gc finalizer is disabled in the sandbox", setmetatable, {}, {__gc = false})
-- Lua's own argument checks still name setmetatable.
check.refused("bad argument #1 to 'setmetatable' (table expected", setmetatable, 1, {})
check.refused("bad argument #2 to 'setmetatable' (nil or table expected", setmetatable, {}, 1)
-- Other metatables work as before, __metatable protection included.
local t = setmetatable({}, {__index = function(_, k) return k .. "!" end})
assert(t.x == "x!")
local locked = setmetatable({}, {__metatable = "locked"})
check.refused("cannot change a protected metatable", setmetatable, locked, {})
assert(getmetatable(setmetatable(t, nil)) == nil)
-- A __gc added after setmetatable: the table was not marked for finalization, so the loop never runs.
local mt = {}
local late = setmetatable({}, mt)
mt.__gc = forever
late = nil
collectgarbage()
collectgarbage()
print("finalizers refused")
