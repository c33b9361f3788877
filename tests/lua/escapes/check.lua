-- Helpers of the sandbox escape suite: each escape must be refused with a message, never crash or succeed.
local check = {}

-- Calls f(...) and expects a Lua error whose message contains `text` (plain text, not a pattern).
function check.refused(text, f, ...)
  local ok, err = pcall(f, ...)
  if ok then error("not refused (expected an error with '" .. text .. "')", 2) end
  if not tostring(err):find(text, 1, true) then error("refused, but with '" .. tostring(err) .. "'", 2) end
end

-- Whether a file exists (reading stays allowed in the sandbox).
function check.exists(path)
  local f = io.open(path, "r")
  if f then f:close() end
  return f ~= nil
end

return check
