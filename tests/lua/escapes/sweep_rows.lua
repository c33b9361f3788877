-- Checks that the store of sweep_interrupt.lua holds exactly the rows it reported stored (arg[1]).
local rows = tl.results.query{}
assert(#rows == tonumber(arg[1]), ("the store has %d rows, the sweep reported %s"):format(#rows, arg[1]))
print(("store holds the %d reported rows"):format(#rows))
