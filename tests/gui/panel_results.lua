-- GUI screenshot script: the Results table with history from the results store ($TILELAB_DB: the made-up rows of
-- tests/gui/gui_history_fixture, as CI has no GPU), filtered to one kernel, two runs compared.
gui.kernel("gemm.mma")
gui.show("Results")
gui.wait()
local st = gui.state().results
assert(st.error == "", "results store: " .. st.error)
local all = gui.results_history()
assert(#all == 12, "expected the fixture's 12 rows (TILELAB_DB=<gui_history_fixture FILE>), got " .. #all)
-- Newest first by default (the # column sorted descending).
assert(all[1].id == 12 and all[12].id == 1, "history is not newest first")
gui.results_filter("gemm.mma")
local mma = gui.results_history()
assert(#mma == 3, "the kernel filter kept " .. #mma .. " rows, expected 3")
for _, r in ipairs(mma) do assert(r.kernel == "gemm.mma") end
-- The comparison is compare_runs' (as `tilelab results --compare 1 2`): the differing config and every metric's ratio.
local c = gui.compare(1, 2)
assert(c.config.block_N[1] == 128 and c.config.block_N[2] == 256, "config difference block_N 128 -> 256")
assert(c.config.block_M == nil, "block_M is the same in both")
assert(math.abs(c.metrics.median_ms.ratio - 0.8) < 1e-9, "median_ms ratio " .. c.metrics.median_ms.ratio)
assert(math.abs(c.metrics.tflops.ratio - 1.25) < 1e-9, "tflops ratio " .. c.metrics.tflops.ratio)
assert(not pcall(gui.compare, 1, 99), "comparing a row that is not there must fail")
print("results history: " .. #all .. " rows, " .. #mma .. " of gemm.mma, run 2 takes " .. c.metrics.median_ms.ratio ..
      "x the time of run 1")
