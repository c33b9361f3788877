-- A binding called with a bad argument type: exits 1 naming this file and line and the bad argument.
local k = tl.kernel("copy")
k:config(42)
