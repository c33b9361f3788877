-- gemm.grouped's uniform_desc (docs/perf.md, 2026-11-28, grouped3): at issue 21's anchors (G groups of M rows, N
-- 4096, K 7168), per problem A B B A rounds of the per-thread descriptors (A: uniform_desc=false, main's default
-- kernel before grouped3) against the uniform ones (B: uniform_desc=true; bf16's auto since), one worker, each problem's rounds back to back (the float64
-- reference's inputs are made once a problem). Every run float64-checked (65536 samples), CUDA events, L2 flushed.
-- Usage: tilelab run tests/perf/gemm_grouped_udesc.lua (a GPU; OUT set: records to $OUT/udesc.json).
-- UD_ROUNDS (default 2): A B B A rounds per problem; UD_KINDS (default "bf16,row"): bf16, row (e4m3 row scales),
-- block (e4m3 block scales), tensor; UD_BLOCK_ROUNDS: rounds for block (default UD_ROUNDS); UD_REP (default 20);
-- UD_VERIFY=first: only each problem's first A and first B run float64-checked, the others at one sampled position
-- (the check, not the run, is most of a run's ~2.3 s).
-- UD_COMPILE_ONLY=1: compile every config (no GPU; fills the kernel cache). On an H200 a run took ~2.3 s (the
-- problem's inputs made on the host, every run checked): 60 runs (bf16,row,block) need ~140 s.
local rep = tonumber(os.getenv("UD_REP") or "20")
local rounds = tonumber(os.getenv("UD_ROUNDS") or "2")
local block_rounds = tonumber(os.getenv("UD_BLOCK_ROUNDS") or tostring(rounds))
local anchors = {{G = 8, M = 2048}, {G = 32, M = 512}, {G = 64, M = 128}}
local kinds = {}
for w in (os.getenv("UD_KINDS") or "bf16,row"):gmatch("[^,]+") do kinds[#kinds + 1] = w end
local configs = {A = {uniform_desc = "false"}, B = {uniform_desc = "true"}}
local k = tl.kernel("gemm.grouped")
local compile_only = os.getenv("UD_COMPILE_ONLY")
local verify_first = os.getenv("UD_VERIFY") == "first"
local records = {}
if not compile_only then
  print(string.format("%-26s %-5s %-3s %-2s %5s %9s %9s %8s", "problem", "round", "run", "cf", "check", "med_ms",
                      "min_ms", "rel_err"))
end
for _, kind in ipairs(kinds) do
  for _, a in ipairs(anchors) do
    local p = {G = a.G, M = a.M, N = 4096, K = 7168}
    if kind ~= "bf16" then
      p.dtype = "e4m3"
      p.scaling = kind
    end
    local label = string.format("G=%d M=%d %s", a.G, a.M, kind)
    if compile_only then
      for _, name in ipairs({"A", "B"}) do
        local r, err = k:compile(configs[name], p)
        print(label, name, r and (r.registers .. " registers, " .. r.spills .. " B spills") or err)
      end
    else
      local n = kind == "block" and block_rounds or rounds
      for round = 1, n do
        for i, name in ipairs({"A", "B", "B", "A"}) do
          local verify = not verify_first or (round == 1 and i <= 2)
          local r, err = k:run{problem = p, config = configs[name], rep = rep, warmup = 3, verify = verify}
          if not r then
            print(string.format("%-26s %-5d %-3d %-2s ERROR %s", label, round, i, name, tostring(err)))
          else
            print(string.format("%-26s %-5d %-3d %-2s %5s %9.4f %9.4f %8.1e", label, round, i, name,
                                r.passed and "PASS" or "FAIL", r.median_ms, r.min_ms, r.rel_err or -1))
            records[#records + 1] = {problem = label, round = round, run = i, config = name, median_ms = r.median_ms,
                                     min_ms = r.min_ms, tflops = r.tflops, passed = r.passed, rel_err = r.rel_err}
          end
        end
      end
    end
  end
end
local out = os.getenv("OUT")
if out and not compile_only then tl.write_file(out .. "/udesc.json", tl.json_encode(records, 1)) end
