-- GUI screenshot script: a sweep of gemm.mma started from the app. Without a GPU every point is compiled and its
-- registers fill the heat map (what CI sees); with one, the points run, are stored, and tflops can be shown.
gui.kernel("gemm.mma")
gui.sweep{space = "block_M=64,128,256;block_N=64,128,256", gpus = "all", x = "block_N", y = "block_M", metric = "registers"}
gui.show("Sweep")
assert(gui.sweep_state().running, "the sweep did not start")
assert(not pcall(gui.sweep, "block_M=64"), "a second sweep while one runs must be refused")
gui.wait(600)
local s = gui.sweep_state()
assert(not s.running, "the sweep is still running")
assert(s.total == 9 and s.done == 9, "expected 9 of 9 points, got " .. s.done .. " of " .. s.total)
assert(#s.points == 9, "expected 9 points handed to the panel, got " .. #s.points)
assert(s.heatmap, "no heat map: " .. tostring(s.heatmap_error))
assert(#s.heatmap.x_values == 3 and #s.heatmap.y_values == 3, "a 3x3 heat map")
local filled = 0
for _, cell in ipairs(s.heatmap.cells) do
  if cell.value then
    assert(cell.value > 0 and cell.value <= 255, "registers out of range: " .. cell.value)
    filled = filled + 1
  end
end
-- Registers grow with the tile: 256x256 needs more than 64x64 where both compiled.
local function reg(x, y)
  for _, cell in ipairs(s.heatmap.cells) do
    if cell.x == x and cell.y == y then return cell.value end
  end
end
if reg("64", "64") and reg("128", "128") then assert(reg("128", "128") > reg("64", "64")) end
assert(filled >= 4, "only " .. filled .. " cells have registers")
print("sweep " .. s.id .. ": " .. s.summary .. "; " .. filled .. " cells with registers")
