-- A sweep recorded in the results store (the fixture's gemm.wgmma block_N x num_stages) shown again in the Sweep
-- panel: its rows become the heat map's points, tflops per cell, the skipped point grey.
local list = gui.sweeps()
assert(#list == 1 and list[1].kernel == "gemm.wgmma" and list[1].runs == 6, "recorded sweeps: " .. #list)
gui.show_sweep(list[1].id)
gui.show("Sweep")
gui.wait()
local s = gui.sweep_state()
assert(s.from_store and #s.points == 6, "the recorded sweep's 6 rows were not loaded")
assert(gui.state().kernel == "gemm.wgmma", "showing a recorded sweep opens its kernel")
assert(s.metric == "tflops", "a sweep that ran defaults to tflops, got " .. s.metric)
gui.sweep_axes("block_N", "num_stages")
s = gui.sweep_state()
assert(s.metric == "tflops" and s.heatmap, "no tflops heat map: " .. tostring(s.heatmap_error))
local best, skipped = nil, 0
for _, c in ipairs(s.heatmap.cells) do
  if c.value and (not best or c.value > best.value) then best = c end
  if c.status == "skipped" then skipped = skipped + 1 end
end
-- The fixture's fastest point is block_N=256, num_stages=4 (0.25 ms).
assert(best.x == "256" and best.y == "4", "best cell " .. best.x .. "," .. best.y)
assert(skipped == 1, "skipped cells: " .. skipped)
print("recorded sweep " .. s.id .. ": best tflops " .. string.format("%.1f", best.value) .. " at block_N=256, num_stages=4")
