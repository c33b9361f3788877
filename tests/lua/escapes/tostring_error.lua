-- Escape 7b: an error object with __tostring lost its file:line and traceback in the printed error.
local Failure = {__tostring = function(self) return "custom failure: " .. self.what end}
local function fail() error(setmetatable({what = "the widget broke"}, Failure)) end
fail()
