-- TileLang's examples/plot_layout/fragment_mma_load_a.py in TileLab: the mma.sync m16n8k16 A fragment (the 16x16
-- f16 tile ldmatrix.x4 loads), grown with repeat/replicate into a warp-level 32x16 and a block-level 128x32 layout.
-- No GPU needed. Run: tilelab run samples/plot_layout.lua [OUTDIR]    (default out/plot_layout: PNG, SVG, JSON each)

local outdir = arg[1] or "out/plot_layout"
assert(tl.mkdir(outdir))

-- the example's names
local block_rows, block_cols = 2, 2
local warp_rows, chunk = 4, 2

-- 16x16, 32 lanes x 8 values: thread = lane, value = the PTX ISA's a_i
local base = tl.layout("mma.m16n8k16.f16.A")
-- 32x16: block_rows copies down the rows on new threads (64), then each element held by block_cols threads (128)
local warp = base:repeat_(block_rows, 1, "thread"):replicate(block_cols)
-- 128x32: warp_rows x chunk copies on new values of the same threads, numbered down the rows first
local block = warp:repeat_(warp_rows, chunk, "value", "rows")

for _, plot in ipairs({{"base_layout", base}, {"warp_layout", warp}, {"block_layout", block}}) do
  local name, l = plot[1], plot[2]
  local rows, cols = l:tile()
  local threads, values, replication = l:threads()
  print(("%-12s %3dx%-3d %3d threads x %2d values%s  %s"):format(name, rows, cols, threads, values,
    replication > 1 and (", each element held by %d threads"):format(replication) or "", tostring(l)))
  for _, ext in ipairs({"png", "svg"}) do
    -- 40-point cells keep every "T5/69 V4" label legible, as TileLang's figures have them (the default fits ~2000)
    assert(l:plot{cell_size = 40}:save(("%s/%s.%s"):format(outdir, name, ext)))
  end
  assert(tl.write_file(("%s/%s.json"):format(outdir, name), tl.json_encode(l:json())))
end
print("wrote base_layout, warp_layout and block_layout (png, svg, json) to " .. outdir .. "/")
