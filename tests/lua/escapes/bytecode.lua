-- Escape 1: crafted bytecode. A binary chunk whose LOADK index points past the constants crashed the process
-- (SIGSEGV): only text chunks load, and string.dump is gone.
local check = dofile(arg[0]:gsub("[^/]+$", "") .. "check.lua")

local function f() local s = "hello"; return s end
check.refused("string.dump is disabled in the sandbox", string.dump, f)
check.refused("string.dump is disabled in the sandbox", function() return ("").dump(f) end)

-- A Lua 5.4 chunk header is enough to tell: every loader refuses it before reading further.
local binary = "\27LuaT\0\25\147\r\n\26\n\4\8\8xV\0\0\0\0\0\0\0\0\0\0\0(w@"
local refusal = "attempt to load a binary chunk (mode is 't')"
local fn, err = load(binary, "=crafted", "b")
assert(fn == nil and err:find(refusal, 1, true), "load: " .. tostring(err))
fn, err = load(binary)
assert(fn == nil and err:find(refusal, 1, true), "load without a mode: " .. tostring(err))
local parts = {binary}
fn, err = load(function() return table.remove(parts) end, "=reader", "bt")
assert(fn == nil and err:find(refusal, 1, true), "load from a reader: " .. tostring(err))

assert(tl.mkdir("escape_bytecode"))
local file = io.open("escape_bytecode/crafted.lua", "wb")
file:write(binary)
file:close()
fn, err = loadfile("escape_bytecode/crafted.lua", "b")
assert(fn == nil and err:find(refusal, 1, true), "loadfile: " .. tostring(err))
check.refused(refusal, dofile, "escape_bytecode/crafted.lua")
package.path = "escape_bytecode/?.lua"
check.refused(refusal, require, "crafted")

-- Text chunks still load, with an environment, and return their values.
assert(load("return 1 + ...", "=text", "t")(41) == 42)
assert(load("return x", "=env", "t", {x = 7})() == 7)
print("bytecode refused")
