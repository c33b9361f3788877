-- Never ends (arg[1] == "pcall": inside pcall, which must not swallow the stop): the budget or timeout stops it.
if arg[1] == "pcall" then
  while true do pcall(function() while true do end end) end
end
local n = 0
while true do n = n + 1 end
