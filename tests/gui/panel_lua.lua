-- GUI screenshot script: the Lua editor after a script that fails on line 4 (console error, line highlighted).
local here = arg[0]:match("(.*/)") or "./"
gui.open_script(here .. "../lua/runtime_error.lua")
gui.run_script()
gui.show("Lua")
