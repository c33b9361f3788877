-- A user-defined kernel end to end: define it from CUDA source (custom_kernel.cu) and Lua callbacks, look at its
-- schema, validate configs, compile it (no GPU needed: registers, shared memory, spills), then run it against its
-- Lua reference on the GPU — or say why not.
-- Run: tilelab run samples/custom_kernel.lua

local k = tl.define_kernel{
  name = "user.bias_relu",
  summary = "out = max(x, 0) * alpha + bias[col]",
  source = "custom_kernel.cu",            -- a file (next to this script) or the CUDA text itself
  entry = "bias_relu<{threads},{items}>", -- {param} takes the config/problem value
  problem = {
    rows = {default = 1024, min = 1, max = 1 << 20, help = "rows of x"},
    cols = {default = 4096, min = 1, max = 1 << 20, help = "columns of x (length of bias)"},
  },
  params = {
    threads = {default = 256, values = {64, 128, 256, 512, 1024}, help = "threads per block"},
    items = {default = 4, values = {1, 2, 4, 8}, help = "elements per thread"},
  },
  can_implement = function(p, c)
    if p.rows * p.cols >= 2^31 then return false, "rows * cols must fit in an int" end
    return true
  end,
  grid = function(p, c) return (p.rows * p.cols + c.threads * c.items - 1) // (c.threads * c.items) end,
  block = function(p, c) return c.threads end,
  args = function(p, c)
    return {
      {name = "x", dtype = "f32", shape = {p.rows, p.cols}, role = "in"},
      {name = "bias", dtype = "f32", shape = {p.cols}, role = "in"},
      {name = "out", dtype = "f32", shape = {p.rows, p.cols}, role = "out"},
      {name = "alpha", dtype = "f32", value = 0.5},
      {name = "rows", dtype = "i32", value = p.rows},
      {name = "cols", dtype = "i32", value = p.cols},
    }
  end,
  flops = function(p) return 3 * p.rows * p.cols end,
  bytes = function(p) return 4 * (2 * p.rows * p.cols + p.cols) end,
  -- float64 value of output `out` at linear index i, from the inputs the kernel saw
  reference = function(p, inputs, out, i)
    return math.max(inputs.x[i], 0) * inputs.alpha + inputs.bias[i % p.cols]
  end,
}

print(("defined %s (%s)"):format(k.name, k.summary))
for _, param in ipairs(k:schema().config) do
  print(("  config %-8s default %-5s %s"):format(param.name, tostring(param.default), param.help or ""))
end

print("config{threads=128}: " .. tl.json_encode(k:config{threads = 128}))
local ok, why = pcall(k.config, k, {threads = 100})
print("config{threads=100}: " .. (ok and "accepted?!" or why))

local res = assert(k:compile{threads = 128, items = 4})
print(("compiled %s for %s: %d registers, %d B shared, %d B spills, %.0f ms%s"):format(res.name_expression, res.arch,
  res.registers, res.smem, res.spills, res.compile_ms, res.cached and " (cache)" or ""))

local r, err = k:run{problem = {rows = 4096, cols = 4096}, config = {threads = 256, items = 4}, rep = 20}
if not r then
  print("run skipped: " .. err)
else
  print(("run: %.4f ms median, %.0f GB/s, rel err %.1e, %s"):format(r.median_ms, r.gbps, r.rel_err,
    r.passed and "PASS" or ("FAIL: " .. r.failure)))
end
