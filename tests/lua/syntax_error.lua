-- Fails to parse on line 3.
local ok = 1
local x = = 2
