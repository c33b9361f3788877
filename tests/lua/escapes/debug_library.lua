-- Escape 2: the debug library. debug.sethook removed the time and instruction limits, debug.getregistry and
-- debug.setmetatable forged TileLab's objects and crashed: only debug.traceback is left.
local check = dofile(arg[0]:gsub("[^/]+$", "") .. "check.lua")

for _, name in ipairs{"sethook", "gethook", "getregistry", "getmetatable", "setmetatable", "getupvalue", "setupvalue",
                      "upvalueid", "upvaluejoin", "getlocal", "setlocal", "getinfo", "getuservalue",
                      "setuservalue", "setcstacklimit", "debug"} do
  if debug[name] ~= nil then check.refused("debug." .. name .. " is disabled in the sandbox", debug[name]) end
end
check.refused("debug.sethook is disabled in the sandbox", debug.sethook)
check.refused("debug.getregistry is disabled in the sandbox", debug.getregistry)
check.refused("debug.setmetatable is disabled in the sandbox", debug.setmetatable, io.stdout, {})
assert(require("debug") == debug, "require('debug') is the same restricted table")

-- The message handler's companion still works: file:line and a traceback.
local trace = debug.traceback("here", 1)
assert(trace:find("^here\nstack traceback:") and trace:find("debug_library.lua:%d+"), trace)
print("debug library refused")
