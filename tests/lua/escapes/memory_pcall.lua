-- Escape 4b: a pcall that catches "not enough memory" cannot run on: the script stops at its next instructions.
local ok, err = pcall(function()
  local kept = {}
  for i = 1, 100 do kept[i] = string.rep(string.rep("x", 1 << 20), 16) end
end)
assert(not ok and err:find("not enough memory"), tostring(err))
local n = 0
while true do n = n + 1 end
