-- Checks a `tilelab layout --format json` file against the contract: check_layout_json.lua FILE ROWS COLS KIND
-- (KIND: fragment needs thread/value per cell, memory needs offset/bank); prints "layout json ok".
local path, rows, cols, kind = arg[1], tonumber(arg[2]), tonumber(arg[3]), arg[4]
local f = assert(io.open(path, "r"))
local doc = assert(tl.json_decode(f:read("a")))
f:close()
assert(doc.shape[1] == rows and doc.shape[2] == cols,
       ("shape is [%s, %s], expected [%d, %d]"):format(doc.shape[1], doc.shape[2], rows, cols))
assert(#doc.cells == rows * cols, ("%d cells, expected %d"):format(#doc.cells, rows * cols))
local seen = {}
for i, c in ipairs(doc.cells) do
  assert(c.row and c.col, "cell " .. i .. " has no row/col")
  local key = c.row * cols + c.col
  assert(not seen[key], ("coordinate (%d, %d) listed twice"):format(c.row, c.col))
  seen[key] = true
  if kind == "fragment" then
    assert(c.thread and c.value, ("cell (%d, %d) has no thread/value"):format(c.row, c.col))
  elseif kind == "memory" then
    assert(c.offset and c.bank, ("cell (%d, %d) has no offset/bank"):format(c.row, c.col))
  end
end
print("layout json ok")
