-- Escape 2b: `debug.sethook()` then an endless loop never stopped under --timeout / --max-instructions.
pcall(debug.sethook)
local n = 0
while true do n = n + 1 end
