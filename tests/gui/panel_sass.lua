-- GUI screenshot script: the SASS of `copy` (nvdisasm or cuobjdump from the CUDA toolkit; compiling needs no GPU).
gui.kernel("copy")
gui.config{vec = 4}
gui.compile()
gui.wait()
gui.sass()
gui.show("PTX")
gui.wait()
local s = gui.state().sass
assert(s and not s.pending, "no SASS state")
if s.error ~= "" then
  -- No toolkit: the view must say so plainly, naming the tools.
  assert(s.error:find("nvdisasm") and s.error:find("cuobjdump"), s.error)
  print("SASS: " .. s.error)
else
  assert(s.lines > 20, "a listing of " .. s.lines .. " lines")
  -- copy loads and stores global memory: its SASS has LDG and STG instructions.
  assert(s.text:find("LDG") and s.text:find("STG"), "no LDG/STG in the SASS listing")
  print("SASS: " .. s.lines .. " lines from " .. s.tool)
end
