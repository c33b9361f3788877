-- Escape 4c: tl.json_decode of 100 000 nested '[' overflowed the C stack (SIGSEGV); tl.json_encode of a cyclic table
-- crashed after its error. Both refuse with a message.
local check = dofile(arg[0]:gsub("[^/]+$", "") .. "check.lua")

local deep = string.rep("[", 100000) .. string.rep("]", 100000)
local value, err = tl.json_decode(deep)
assert(value == nil and err:find("deeper than 512 levels", 1, true), tostring(err))
value, err = tl.json_decode('{"a": "[[[[ brackets in a string do not count"}')
assert(value and value.a, tostring(err))
assert(#tl.json_decode(string.rep("[", 500) .. string.rep("]", 500)) == 1, "500 levels decode")

local cyclic = {name = "loop"}
cyclic.self = cyclic
check.refused("a table that contains itself (a cycle) cannot become JSON", tl.json_encode, cyclic)
local nested = {}
local t = nested
for _ = 1, 100000 do t[1] = {}; t = t[1] end
check.refused("tables nested deeper than 512 levels cannot become JSON", tl.json_encode, nested)
local shared = {1, 2}
assert(tl.json_encode({a = shared, b = shared}):find('"b":%[1,2%]'), "a table used twice is no cycle")
collectgarbage()
print("json depth refused")
