-- Escape 5: a script wrote, renamed and removed any file the user could (~/.bashrc). Writes now stay under the
-- current directory and --allow-write folders, with `..` and symbolic links resolved; reads stay free.
-- Run from a directory holding escape_link -> OUTSIDE, with OUTSIDE/keep.txt:
--   tilelab run writes.lua OUTSIDE refused      (every write outside is refused, nothing changes there)
--   tilelab run --allow-write OUTSIDE writes.lua OUTSIDE allowed
local check = dofile(arg[0]:gsub("[^/]+$", "") .. "check.lua")
local outside, mode = assert(arg[1], "usage: writes.lua OUTSIDE refused|allowed"), arg[2]

-- Inside the current directory everything works as before.
assert(tl.mkdir("escape_writes/sub"))
assert(tl.write_file("escape_writes/sub/a.txt", "a"))
local f = assert(io.open("escape_writes/b.txt", "w"))
f:write("b")
f:close()
assert(os.rename("escape_writes/b.txt", "escape_writes/c.txt"))
assert(os.remove("escape_writes/c.txt"))
assert(tl.plot.layout("(8,4):(4,1)"):save("escape_writes/p.svg"))
local timeline = tl.model_timeline{kernel = "gemm.mma", problem = {M = 256, N = 256, K = 256}}
assert(timeline:trace("escape_writes/t.json"))

-- Reading outside is allowed.
local keep = assert(io.open(outside .. "/keep.txt", "r"))
assert(keep:read("a") == "keep")
keep:close()

local function attempts(target)
  return {
    {"io.open", function() return io.open(target, "w") end},
    {"io.open", function() return io.open(target, "a") end},
    {"io.open", function() return io.open(outside .. "/keep.txt", "r+") end},
    {"io.output", function() return io.output(target) end},
    {"os.remove", function() return os.remove(outside .. "/keep.txt") end},
    {"os.rename", function() return os.rename(outside .. "/keep.txt", "escape_writes/stolen.txt") end},
    {"os.rename", function() return os.rename("escape_writes/sub/a.txt", target) end},
    {"tl.write_file", function() return tl.write_file(target, "x") end},
    {"tl.mkdir", function() return tl.mkdir(target .. "_dir") end},
    {"plot:save", function() return tl.plot.layout("(8,4):(4,1)"):save(target .. ".svg") end},
    {"timeline:trace", function() return timeline:trace(target .. ".json") end},
  }
end
-- The same folder reached directly, through `..`, and through a symbolic link in the current directory.
local targets = {outside .. "/escape.txt", "escape_writes/../" .. outside:gsub("^/", string.rep("../", 40)) .. "/escape.txt",
                 "escape_link/escape.txt", "escape_writes/sub/../../escape_link/escape.txt"}
if mode == "refused" then
  for _, target in ipairs(targets) do
    for _, attempt in ipairs(attempts(target)) do
      check.refused(attempt[1] .. ": writing ", attempt[2])
      check.refused("is outside the allowed folders", attempt[2])
      check.refused("pass --allow-write DIR or --unsafe", attempt[2])
    end
  end
  check.refused("os.tmpname: writing", os.tmpname)
  assert(not check.exists(outside .. "/escape.txt") and not check.exists(outside .. "/escape.txt_dir"))
  assert(check.exists(outside .. "/keep.txt") and not check.exists("escape_writes/stolen.txt"))
  print("writes outside refused")
elseif mode == "allowed" then
  for _, target in ipairs(targets) do
    assert(tl.write_file(target, "x"))
    local g = assert(io.open(target, "a"))
    g:close()
    assert(os.remove(target))
  end
  check.refused("os.tmpname: writing", os.tmpname)  -- /tmp is not among the allowed folders
  print("writes under --allow-write allowed")
else
  error("usage: writes.lua OUTSIDE refused|allowed")
end
