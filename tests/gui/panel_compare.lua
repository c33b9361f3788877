-- GUI screenshot script: two layouts side by side (the mma.m16n8k16 A and B fragments) in the light theme, cells
-- sized so every T/V label shows.
assert(gui.theme("light") == "light")
gui.layout("mma.m16n8k16.f16.A")
gui.layout_compare("mma.m16n8k16.f16.B")
gui.show("Layouts")
local g = gui.layout_grid()
assert(g.error == "" and g.rows == 16 and g.cols == 16, g.error)
