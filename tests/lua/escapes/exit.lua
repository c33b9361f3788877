-- os.exit ends the script, not the process that runs it (the desktop app must stay up): a pcall around it cannot go
-- on, and the status it asked for is the script's. Prints "after" only if the exit was swallowed.
local ok = pcall(os.exit, 3)
print("after exit: pcall returned " .. tostring(ok))
