-- Checks the three plots of TileLang's plot_layout example (samples/plot_layout.lua, or `tilelab layout` with the same
-- SPECs) in DIR: {base,warp,block}_layout.{png,svg,json}. Each JSON must give every (thread, value) the coordinate of
-- the PTX ISA's mma.m16n8k16 .f16 A fragment formula, moved by the example's repeat/replicate; prints "plot_layout ok".
local dir = assert(arg[1], "usage: check_plot_layout.lua DIR")

-- PTX ISA, "Matrix Fragments for mma.m16n8k16" (.f16/.bf16 A, 16x16): a_i of lane l, groupID = l >> 2,
-- threadID_in_group = l % 4: row = groupID (+8 for a2, a3, a6, a7), col = 2*threadID_in_group + (i & 1) (+8 for i >= 4)
local function mma_a(lane, i)
  local group, tig = lane // 4, lane % 4
  local row = (i == 2 or i == 3 or i == 6 or i == 7) and group + 8 or group
  local col = 2 * tig + (i & 1) + (i >= 4 and 8 or 0)
  return row, col
end
-- repeat([2, 1], on threads): threads 32..63 hold the copy 16 rows down; replicate(2): thread t + 64 holds what t holds
local function warp(t, i)
  local row, col = mma_a(t % 32, i)
  return row + 16 * ((t % 64) // 32), col
end
-- repeat([4, 2], on values, copies numbered down the rows first): value v = i + 8*(copy row + 4*copy col)
local function block(t, v)
  local row, col = warp(t, v % 8)
  local k = v // 8
  return row + 32 * (k % 4), col + 16 * (k // 4)
end

local plots = {
  {name = "base_layout", rows = 16, cols = 16, threads = 32, values = 8, replication = 1, at = mma_a},
  {name = "warp_layout", rows = 32, cols = 16, threads = 128, values = 8, replication = 2, at = warp},
  {name = "block_layout", rows = 128, cols = 32, threads = 128, values = 64, replication = 2, at = block},
}

local function read(path)
  local f = assert(io.open(path, "rb"), "missing " .. path)
  local text = f:read("a")
  f:close()
  return text
end

for _, p in ipairs(plots) do
  local base = dir .. "/" .. p.name
  assert(read(base .. ".png"):sub(1, 8) == "\137PNG\r\n\26\n", base .. ".png is not a PNG")
  assert(read(base .. ".svg"):find("<svg", 1, true), base .. ".svg is not an SVG")
  local doc = assert(tl.json_decode(read(base .. ".json")))
  assert(doc.shape[1] == p.rows and doc.shape[2] == p.cols,
         ("%s: shape [%d, %d], expected [%d, %d]"):format(p.name, doc.shape[1], doc.shape[2], p.rows, p.cols))
  assert(doc.num_threads == p.threads and doc.num_values == p.values,
         ("%s: %d threads x %d values, expected %d x %d"):format(p.name, doc.num_threads, doc.num_values, p.threads, p.values))
  assert((doc.replication or 1) == p.replication, p.name .. ": replication " .. tostring(doc.replication))
  -- what the formula says each coordinate holds: its threads (ascending) and one value
  local want = {}
  for t = 0, p.threads - 1 do
    for v = 0, p.values - 1 do
      local row, col = p.at(t, v)
      assert(row >= 0 and row < p.rows and col >= 0 and col < p.cols, ("%s: formula left the tile"):format(p.name))
      local key = row * p.cols + col
      local w = want[key] or {threads = {}, value = v}
      assert(w.value == v, ("%s: (%d, %d) is value %d and %d"):format(p.name, row, col, w.value, v))
      w.threads[#w.threads + 1] = t
      want[key] = w
    end
  end
  assert(#doc.cells == p.rows * p.cols, p.name .. ": cell count")
  for _, c in ipairs(doc.cells) do
    local w = assert(want[c.row * p.cols + c.col], ("%s: (%d, %d) has no owner in the formula"):format(p.name, c.row, c.col))
    local got = c.threads or {c.thread}
    local where = ("%s (%d, %d)"):format(p.name, c.row, c.col)
    assert(#got == #w.threads, ("%s: %d holders, the formula says %d"):format(where, #got, #w.threads))
    for k = 1, #got do
      assert(got[k] == w.threads[k], ("%s: thread %s, the formula says %d"):format(where, tostring(got[k]), w.threads[k]))
    end
    assert(c.thread == w.threads[1] and c.value == w.value,
           ("%s: T%d V%d, the formula says T%d V%d"):format(where, c.thread, c.value, w.threads[1], w.value))
  end
end
print("plot_layout ok")
