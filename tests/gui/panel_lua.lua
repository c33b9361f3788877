-- GUI screenshot script: the Lua editor after a script that prints, then fails on line 8 (console error, line highlighted).
local here = arg[0]:match("(.*/)") or "./"
gui.open_script(here .. "console_demo.lua")
gui.run_script()
gui.show("Lua")
