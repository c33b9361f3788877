-- The Layouts panel's fragment controls (Repeat, Replicate, Undo) build TileLang's plot_layout example there:
-- the mma.m16n8k16 A fragment, the warp's 32x16 and the block's 128x32 layout.
local function expect(rows, cols, threads, values, replication)
  local g = gui.layout_grid()
  assert(g.error == "", g.error)
  assert(g.rows == rows and g.cols == cols and g.threads == threads and g.values == values and g.replication == replication,
         ("%s: %dx%d, %d threads x %d values, replication %d"):format(g.spec, g.rows, g.cols, g.threads, g.values,
                                                                     g.replication))
  return g
end
gui.show("Layouts")
gui.layout("mma.m16n8k16.f16.A")
expect(16, 16, 32, 8, 1)
gui.layout_repeat(2, 1, "thread")
gui.layout_replicate(2)
expect(32, 16, 128, 8, 2)
gui.layout_repeat(4, 2, "value", "rows")
local g = expect(128, 32, 128, 64, 2)
assert(g.spec == "mma.m16n8k16.f16.A.repeat(2,1,thread,rows).replicate(2).repeat(4,2,value,rows)", g.spec)
gui.layout_undo()
expect(32, 16, 128, 8, 2)
gui.layout_repeat(4, 2, "value", "rows")
-- refusals leave the SPEC as it was
local ok, err = pcall(gui.layout_replicate, 0)
assert(not ok and err:find("at least 1"), tostring(err))
ok, err = pcall(gui.layout_repeat, 2, 1, "sideways")
assert(not ok and err:find("\"thread\" or \"value\""), tostring(err))
expect(128, 32, 128, 64, 2)
gui.layout("smem.swizzle128B.bf16.(64,64)")
ok, err = pcall(gui.layout_repeat, 2, 1)
assert(not ok and err:find("memory layout"), tostring(err))
ok, err = pcall(gui.layout_undo)
assert(not ok and err:find("to undo", 1, true), tostring(err))
gui.layout(g.spec)
print("layout repeat ok: " .. gui.layout_grid().spec)
