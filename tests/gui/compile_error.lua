-- Compile-error test: run with TILELAB_KERNELS_DIR pointing at a copy of kernels/ whose memory/copy.cuh uses an
-- undefined name. The error must land on that file and line (what the Source panel marks inline).
gui.kernel("copy")
gui.compile()
gui.wait()
local s = gui.state()
assert(s.compile and not s.compile.ok, "the compile should have failed")
local want = 0
local n = 0
for line in io.lines(os.getenv("TILELAB_KERNELS_DIR") .. "/memory/copy.cuh") do
  n = n + 1
  if line:find("undefined_name") then want = n end
end
assert(want > 0, "the injected error is missing from the copied source")
local found = false
for _, e in ipairs(s.compile.errors) do
  if e.file == "memory/copy.cuh" and e.line == want and e.message:find("undefined_name") then found = true end
end
assert(found, "no inline error at memory/copy.cuh:" .. want .. "; got " .. tl.json_encode(s.compile.errors))
gui.show("Source")
print("compile error at memory/copy.cuh:" .. want)
