-- Escape 4: no memory bound. 200 strings of 256 MiB were OOM-killed with the machine at 24 GB: the default
-- --max-memory stops the script well before 12 of them (3 GiB).
local mib = string.rep("x", 1 << 20)
local kept = {}
for i = 1, 12 do kept[i] = string.rep(mib, 256) end
print("no memory limit: 3 GiB of strings allocated")
