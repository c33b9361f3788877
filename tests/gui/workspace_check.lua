-- Workspace test, second start (no changes made): what the first start left open must be restored.
local s = gui.state()
local function expect(what, got, want)
  if got ~= want then error(what .. ": got " .. tostring(got) .. ", want " .. tostring(want), 2) end
end
expect("kernel", s.kernel, "gemm.simt")
expect("config block_M", s.config.block_M, "64")
expect("config thread_M", s.config.thread_M, "4")
expect("problem M", s.problem.M, "1000")
expect("layout", s.layout, "(16,8):(1,16)")
expect("tab", s.tab, "Source")
-- An invalid config is reported with can_implement's reason, and does not replace the valid one.
local ok, err = pcall(gui.config, {block_M = 3})
assert(not ok and err:find("block_M"), "an out-of-range block_M must be refused, naming it: " .. tostring(err))
print("workspace restored")
