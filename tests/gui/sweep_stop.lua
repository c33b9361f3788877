-- Stop ends a sweep after the current point: fewer points than the space has, the summary says it stopped, and the
-- app can start another one at once.
gui.kernel("gemm.mma")
gui.sweep("block_M=32,64,128,256;block_N=32,64,128,256;num_stages=2,3")
assert(gui.sweep_state().total == 32, "the point count is known at the start")
gui.wait_sweep(2)
assert(gui.sweep_state().running, "the sweep ended before Stop could be tested")
gui.stop_sweep()
assert(gui.sweep_state().stopping, "Stop did not register")
gui.wait(600)
local s = gui.sweep_state()
assert(not s.running, "still running after Stop")
assert(s.done >= 2 and s.done < 32, "Stop did not stop the sweep: " .. s.done .. " of 32 points")
assert(s.summary:find("stopped"), "the summary does not say it stopped: " .. s.summary)
gui.sweep("block_M=64;block_N=64")
gui.wait(600)
assert(gui.sweep_state().done == 1, "a new sweep after a stopped one")
print("sweep stopped after " .. s.done .. " of " .. s.total .. " points")

-- Each result is stored as it arrives and joins the Results table: without a GPU only an invalid point has an
-- outcome of its own (skipped, with can_implement's reason), as with `tilelab sweep`. The same sweep again skips it.
gui.sweep("block_M=256;block_N=256")
gui.wait(600)
local first = gui.sweep_state()
assert(first.stored == 1, "the skipped point was not stored: " .. first.summary)
local found
for _, r in ipairs(gui.results_history()) do
  if r.sweep_id == first.id then found = r end
end
assert(found and found.status == "skipped" and found.failure_message ~= "",
       "the stored point is not in the Results table")
gui.sweep("block_M=256;block_N=256")
gui.wait(600)
assert(gui.sweep_state().summary:find("1 already stored"), "resume: " .. gui.sweep_state().summary)
print("stored point in Results: " .. found.failure_message)

-- The GPUs field takes what `tilelab sweep --gpus` takes; a GPU that is not here is refused before anything runs.
local ok, err = pcall(gui.sweep, {space = "block_M=64;block_N=64", gpus = "0,99"})
assert(not ok and err:find("sweep GPUs: there is no GPU"), tostring(err))
gui.sweep{space = "block_M=64;block_N=128", gpus = "all"}
gui.wait(600)
assert(gui.sweep_state().done == 1, "a sweep on every GPU: " .. gui.sweep_state().summary)
print("GPUs field: " .. err)
