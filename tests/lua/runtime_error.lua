-- Fails at run time on line 4, inside a function, to check file:line and the traceback.
local function index_nil()
  local t = nil
  return t.field
end
index_nil()
