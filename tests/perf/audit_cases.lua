-- audit1 (session 44): each "kernel|k=v,..." of audit_cases.txt (arg[1]) at the kernel's default config: run checked (rep 3) on a GPU,
-- or (arg[2] == "compile") compiled only, to fill the NVRTC cache. Prints one line a case; stops past arg[3] seconds.
local file, mode, budget = arg[1], arg[2] or "run", tonumber(arg[3] or "1e9")
local t0 = os.time()
local n, counts = 0, {}
for line in io.lines(file) do
  local name, spec = line:match("^([^|]+)|(.*)$")
  if name then
    if os.time() - t0 > budget then print(string.format("%-18s %-36s NOT_RUN (time budget)", name, spec)) goto next end
    local problem = {}
    for kv in spec:gmatch("[^,]+") do
      local key, v = kv:match("^([^=]+)=(.*)$")
      problem[key] = tonumber(v) or (v == "true" and true) or (v == "false" and false) or v
    end
    local k = tl.kernel(name)
    local status, detail
    if mode == "compile" then
      local ok, r, msg = pcall(k.compile, k, k:config{}, problem)
      if not ok then status, detail = "REFUSED", tostring(r)
      elseif not r then status, detail = "COMPILE_FAIL", tostring(msg)
      else status, detail = "COMPILED", string.format("%d regs %d B smem %s", r.registers, r.smem, r.cached and "(cached)" or "") end
    else
      local t = os.clock()
      local ok, r, msg = pcall(k.run, k, {problem = problem, rep = 3, warmup = 1})
      if not ok then status, detail = "REFUSED", tostring(r)
      elseif not r then status, detail = "ERROR", tostring(msg)
      else
        local nan = r.rel_err ~= r.rel_err or r.max_abs_err ~= r.max_abs_err
        status = (r.passed and not nan) and "PASS" or "FAIL"
        detail = string.format("rel %.2e abs %.2e %.4f ms%s", r.rel_err or -1, r.max_abs_err or -1, r.median_ms or -1,
                               r.passed and "" or (" " .. tostring(r.failure)))
      end
    end
    counts[status] = (counts[status] or 0) + 1
    n = n + 1
    print(string.format("%-18s %-36s %-8s %s", name, spec, status, detail:gsub("\n", " "):sub(1, 300)))
    io.stdout:flush()
  end
  ::next::
end
local parts = {}
for s, c in pairs(counts) do parts[#parts + 1] = s .. " " .. c end
table.sort(parts)
print(string.format("cases: %d (%s) in %d s", n, table.concat(parts, ", "), os.time() - t0))
