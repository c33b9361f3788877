-- Shown by the Lua panel's screenshot: prints to the console, then fails on line 8 (highlighted in the listing).
print("TileLab " .. tl.version)
local info = tl.info()
print("GPUs: " .. #info.devices, info.why_no_device or "")
for i = 1, 3 do print(string.format("step %d of 3", i)) end
local config = {block_M = 128, block_N = 256}
print("config: " .. tl.json_encode(config))
local bad = config.block_K.value  -- block_K is nil: this line fails
