-- The loop's keyboard shortcuts: listed as the Kernel menu shows them, each doing what its button does (without a GPU,
-- run/bench/capture say why instead).
local keys = {}
for _, k in ipairs(gui.shortcuts()) do keys[k.action] = k.keys end
assert(keys.compile == "Ctrl+B" and keys.run == "Ctrl+R" and keys.bench == "Ctrl+Shift+R" and keys.timeline == "Ctrl+T",
       "shortcuts: " .. tostring(keys.compile) .. " " .. tostring(keys.run))
assert(not pcall(gui.shortcut, "Ctrl+Q"), "Ctrl+Q is no shortcut")
gui.kernel("copy")
gui.config{vec = 4}
assert(gui.shortcut("Ctrl+B"), "Ctrl+B did not compile")
gui.wait()
local c = gui.state().compile
assert(c and c.error == "" and c.registers and c.registers > 0, "Ctrl+B: no compile (" .. tostring(c and c.error) .. ")")
if not gui.device().has_device then
  assert(gui.shortcut("Ctrl+R") == false, "Ctrl+R ran without a GPU")
end
print("shortcuts ok: Ctrl+B compiled copy (" .. c.registers .. " registers)")
