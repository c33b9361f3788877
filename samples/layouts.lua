-- Every named layout atom (mma/ldmatrix/wgmma fragments, TMA shared-memory tiles) plotted, plus a little of the
-- layout algebra on a plain CuTe layout. No GPU needed.
-- Run: tilelab run samples/layouts.lua [OUTDIR]        (default out/layouts; SVG by default, `png` as arg[2])

local outdir = arg[1] or "out/layouts"
local ext = arg[2] or "svg"
assert(tl.mkdir(outdir))

local count = 0
for _, atom in ipairs(tl.layouts()) do
  local l = tl.layout(atom.name)
  -- fragments read best coloured by thread, shared-memory tiles by bank
  local color = l:kind() == "atom" and "thread" or "bank"
  local file = ("%s/%s.%s"):format(outdir, atom.name:gsub("[^%w%._-]", "_"), ext)
  assert(l:plot{color = color}:save(file))
  count = count + 1
end
print(("wrote %d atom plots to %s/"):format(count, outdir))

-- The algebra: a 8x8 tile of a row-major 8x64 matrix, its complement and a divide into 4x4 blocks.
local A = tl.layout("(8,64):(64,1)")
local tile = A:compose("(8,8):(1,8)")
print("A                 = " .. tostring(A))
print("A o (8,8):(1,8)   = " .. tostring(tile))
print("complement(4:2)   = " .. tostring(tl.layout("4:2"):complement(16)))
print("divide(16:1, 4:1) = " .. tostring(tl.layout("16:1"):divide("4:1")))
print("inverse((4,2):(2,1)) = " .. tostring(tl.layout("(4,2):(2,1)"):inverse()))
local banks = tl.banks("smem.swizzle128B.bf16.(8,64)", "col.v128:8")
print(("128B-swizzled bf16 8x64 tile, 16-byte column reads: %d wavefronts (ideal %d)"):format(
  banks.wavefronts, banks.ideal_wavefronts))
assert(tl.plot.banks("(8,64):(64,1)", "col.v128:8", {elem_bytes = 2}):save(outdir .. "/banks_unswizzled." .. ext))
