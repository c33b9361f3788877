-- gemm.fp8 beside cuBLASLt in the same worker (issue 21 item 1's targets): every anchor shape x scaling x config, each
-- row one k:run{baseline = "cublas"} (cuBLASLt's FP8 matmul on the same buffers, right after the kernel, same timer and
-- L2 flush; fast_accum=true rows run cuBLASLt with FAST_ACCUM, the others without). Usage: tilelab run
-- tests/perf/gemm_fp8_cublas.lua (a GPU); every record to $OUT/gemm_fp8_cublas.json when OUT is set (rewritten after
-- each row). The first run of each (scaling, config) is checked against the float64 reference (sampled).
-- GEMM_COMPILE_ONLY=1: compile every case (fills the kernel cache a GPU machine reuses). GEMM_SETS=names (default
-- "base,rs"): which config lists of `sets` to run; GEMM_SHAPES=i,j: those of `shapes` (default the anchors, 1-5);
-- GEMM_REP: timed runs per row (default 20); GEMM_ROUNDS: times each row runs (default 1); GEMM_VERIFY=shape: the first
-- run of each (scaling, config) at each shape checked (by default only its first, whatever its shape). GEMM_CHECK=
-- config lists (e.g. "rs,noregs"): first every config of those lists on `tilelab test --full`'s odd problems, each
-- checked against the float64 reference (no baseline, not timed).
local rep = tonumber(os.getenv("GEMM_REP") or "20")
-- GEMM_TIMER=events|cupti (default events): how every row and its cuBLASLt row are timed (README, *Timers*).
local timer = os.getenv("GEMM_TIMER") or "events"
-- The five anchors (the default GEMM_SHAPES), then M around the small-M tile rule's edges at N 7168, K 2048 (6-10:
-- M 64, 200, 256, 512, 1000), two more 128 x 192-tile shapes for the pipeline depth (11, 12: K 4096 and 8192) and
-- M 32 (13).
local shapes = {{M = 8192, N = 8192, K = 8192}, {M = 4096, N = 4096, K = 4096}, {M = 4096, N = 7168, K = 2048},
                {M = 128, N = 7168, K = 2048, small = true}, {M = 16384, N = 16384, K = 4096},
                {M = 64, N = 7168, K = 2048, small = true}, {M = 200, N = 7168, K = 2048, small = true},
                {M = 256, N = 7168, K = 2048, small = true}, {M = 512, N = 7168, K = 2048, small = true},
                {M = 1000, N = 7168, K = 2048, small = true}, {M = 8192, N = 8192, K = 4096},
                {M = 16384, N = 16384, K = 8192}, {M = 32, N = 7168, K = 2048, small = true}}
-- Config lists by name: `large` for the big shapes, `small` for the small-M ones (M = 128 and 6-10).
-- A list may name the scalings it runs for (`scalings`; default all three).
local sets = {
  base = {large = {{}},
          small = {{block_M = 64, block_N = 128, num_stages = 5}, {block_M = 128, block_N = 64, wgmma_N = 64, num_stages = 8}}},
  noregs = {scalings = {"block"}, large = {{a_regs = "false"}},
            small = {{block_M = 128, block_N = 64, wgmma_N = 64, num_stages = 8, a_regs = "false"}}},
  rs = {scalings = {"tensor", "row"}, large = {{a_regs = "true"}},
        small = {{block_M = 64, block_N = 128, num_stages = 5, a_regs = "true"}}},
  overlap = {large = {{wgmma_N = 64, overlap = true}},
             small = {{block_M = 64, block_N = 128, wgmma_N = 64, overlap = true, num_stages = 5}}},
  -- Overlapped promotion with A from registers: four 64-column chains a k block, chain j + 1 in flight while chain
  -- j is promoted, within each k block.
  ovregs = {large = {{wgmma_N = 64, overlap = true, a_regs = "true"}},
            small = {{block_N = 128, wgmma_N = 64, overlap = true, a_regs = "true"}}},
  -- The consumers in turns (ping_pong, opt-in) beside each consumer on its own.
  ppoff = {scalings = {"block"}, large = {{ping_pong = "false"}}, small = {{ping_pong = "false"}}},
  ppon = {scalings = {"tensor"}, large = {{ping_pong = "true"}}, small = {{ping_pong = "true"}}},
  -- Fast accumulation: auto chains (one of 256 columns) and the 128-column chains they replaced.
  fast = {scalings = {"tensor", "row"}, large = {{fast_accum = true}, {fast_accum = true, wgmma_N = 128}},
          small = {{block_M = 64, block_N = 128, num_stages = 5, fast_accum = true}}},
  -- A fourth stage beside 128 x 256 tiles: the C staging tile stored in two parts (four with block scales' slots).
  split = {scalings = {"tensor", "row"}, large = {{c_split = 2, num_stages = 4}}, small = {}},
  split4 = {scalings = {"block"}, large = {{c_split = 4, num_stages = 4}}, small = {}},
  -- 128 x 192 tiles, one 192-column chain per consumer (A read once per k block), three and four stages.
  wide = {scalings = {"tensor", "row"}, large = {{block_N = 192, wgmma_N = 192}, {block_N = 192, wgmma_N = 192, num_stages = 4}},
          small = {}},
  -- The defaults (auto widths) at M = 128 too, and the widths they replaced; four stages; 192 columns with A in
  -- registers for block scales.
  auto = {large = {{}}, small = {{}, {block_M = 64, block_N = 128, num_stages = 5},
                                {block_M = 128, block_N = 64, wgmma_N = 64, num_stages = 8}}},
  old = {large = {{block_N = 256, wgmma_N = 128}}, small = {{block_N = 256, wgmma_N = 128}}},
  deep = {large = {{num_stages = 4}}, small = {}},
  wideregs = {scalings = {"block"}, large = {{block_N = 192, wgmma_N = 192, a_regs = "true"}}, small = {}},
  wideb = {scalings = {"block"}, large = {{block_N = 192, wgmma_N = 192}, {block_N = 192, wgmma_N = 192, num_stages = 4},
                                          {block_N = 192, wgmma_N = 192, a_regs = "true"}}, small = {}},
  -- How much the pipeline's depth matters: two stages.
  shallow = {scalings = {"tensor"}, large = {{num_stages = 2}}, small = {}},
  -- The small-M rule (block_N and num_stages auto) beside each width it chooses from, each with auto's depth, and
  -- the widths it replaced (128 x 192 for tensor and row scales, 128 x 256 for block, three stages); `only` / `skip`
  -- name the scaling a config is for or not for (the field is not passed to the kernel).
  narrow = {large = {}, small = {{}, {block_N = 64}, {block_N = 128},
                                 {block_N = 192, wgmma_N = 192, num_stages = 3, skip = "block"},
                                 {block_N = 256, num_stages = 3, only = "block"}}},
  -- A fourth stage beside the auto widths (128 x 192 at 8192^3 and 16384^2 x 4096).
  stages = {scalings = {"tensor", "row"}, large = {{}, {num_stages = 4}}, small = {}},
  -- The defaults everywhere, and at 8192^3 (auto: four stages beside 128 x 192) the three stages they replaced; `at`
  -- names the shapes a config is for (one, or a comma-separated list).
  defaults = {large = {{}}, small = {{}}},
  -- The wave tail (issue 21 item 1): block scales on 128 x 192 tiles (scale_tma auto: on; num_stages auto: 4 where
  -- the grid walks at most 32 waves) where 128 x 256's last wave is part-empty: 8192^3 (2048 tiles, 15.5 waves on
  -- 132 SMs; 192: 2752, 20.8) and 16384^2 x 4096 (8192, 62.1; 192: 11008, 83.4). `at` may list shapes ("a,b").
  tailb = {scalings = {"block"}, large = {{block_N = 192, wgmma_N = 192, at = "8192x8192x8192,16384x16384x4096"}},
           small = {}},
  -- The panel (tile rows walked together): 4 where B fits in the L2 (gemm.wgmma's panel=0 rule: 4096^3, 4096 x 7168
  -- x 2048), 8 where it does not (8192^3, 16384^2 x 4096); 128-column tiles (1024 at 4096^3: 7.8 waves; 1792 at
  -- 4096 x 7168 x 2048: 13.6; against 128 x 256's 3.9 and 6.8) for tensor and row scales.
  pan = {large = {{panel = 4, at = "4096x4096x4096,4096x7168x2048"}, {panel = 8, at = "8192x8192x8192,16384x16384x4096"}},
         small = {}},
  n128 = {scalings = {"tensor", "row"}, large = {{block_N = 128, at = "4096x4096x4096,4096x7168x2048"}}, small = {}},
  -- cuBLASLt's FP8 kernels at 4096^3 and 4096 x 7168 x 2048 (tests/perf/gemm_fp8_kernels.sh), tensor and row scales:
  -- the defaults (`dtr`, at every anchor); a fourth 128-k stage beside 128 x 256 (`s4t`: c_split=2); 2-CTA clusters
  -- with TMA multicast sharing B, pairs along M (`c2t`), and with the fourth stage (`c2s4t`) — `cluster` is branch
  -- fp8blk6's opt-in switch: a binary without it refuses those configs, so they are skipped.
  dtr = {scalings = {"tensor", "row"}, large = {{}}, small = {{}}},
  s4t = {scalings = {"tensor", "row"}, large = {{c_split = 2, num_stages = 4, at = "4096x4096x4096,4096x7168x2048"}},
         small = {}},
  c2t = {scalings = {"tensor", "row"}, large = {{cluster = 2, at = "4096x4096x4096,4096x7168x2048"}}, small = {}},
  c2s4t = {scalings = {"tensor", "row"},
           large = {{cluster = 2, c_split = 2, num_stages = 4, at = "4096x4096x4096,4096x7168x2048"}}, small = {}},
  -- cuBLASLt's own tile there (nvjet_sm90_qqtst_128x128_128x6_1x2: 128 x 128, six 128-k stages, 2-CTA clusters
  -- along M sharing B; row-wise scales 1x1): 128-column tiles (six stages by the auto rule) in pairs sharing B
  -- (`n128c2`) or A (`n128c2a`); unclustered they are `n128`.
  n128c2 = {scalings = {"tensor", "row"}, large = {{block_N = 128, cluster = 2, at = "4096x4096x4096,4096x7168x2048"}},
            small = {}},
  n128c2a = {scalings = {"tensor", "row"},
             large = {{block_N = 128, cluster = 2, multicast = "a", at = "4096x4096x4096,4096x7168x2048"}}, small = {}},
  -- The same 128 x 128 tiles with the promotion hidden as 128 x 256 cannot: the consumers in turns (`n128pp`), or two
  -- 64-column chains a k block, one promoted while the next runs (`n128ov`).
  n128pp = {scalings = {"tensor", "row"}, large = {{block_N = 128, ping_pong = true, at = "4096x4096x4096,4096x7168x2048"}},
            small = {}},
  n128ov = {scalings = {"tensor", "row"},
            large = {{block_N = 128, wgmma_N = 64, overlap = true, at = "4096x4096x4096,4096x7168x2048"}}, small = {}},
  -- Row and block scales at the defaults (row: the row-wise cuBLASLt baseline each block row is divided by).
  brow = {scalings = {"row", "block"}, large = {{}}, small = {{}}},
  final = {large = {{}, {num_stages = 3, skip = "block", at = "8192x8192x8192"}}, small = {{}}},
  -- Block scales by TMA (scale_tma, opt-in; K/128 a multiple of 4, else cp.async): with a_regs auto (true) and
  -- false; `stmachk` (for GEMM_CHECK): two blocks of B a tile (192 columns, tiles at column 0 or 64 of a block),
  -- 64-column chains with 6 stages, one consumer.
  stma = {scalings = {"block"}, large = {{scale_tma = true}}, small = {}},
  stmanr = {scalings = {"block"}, large = {{scale_tma = true, a_regs = "false"}}, small = {}},
  stmachk = {scalings = {"block"}, large = {{scale_tma = true, block_N = 192, wgmma_N = 192},
                                            {scale_tma = true, block_N = 128, wgmma_N = 64, num_stages = 6},
                                            {scale_tma = true, block_M = 64, block_N = 128, num_stages = 5}}, small = {}},
  -- scale_A M-major (the problem's scale_a_layout=mn; an entry's scale_a_layout goes to the problem): the defaults
  -- (scale_tma's box of the tile's rows where M is a multiple of 4), and for GEMM_CHECK every scale path beside them
  -- (cp.async with A from shared memory or registers, TMA on 192-column tiles, 64-column chains, one consumer).
  bmn = {scalings = {"block"}, large = {{scale_a_layout = "mn"}}, small = {{scale_a_layout = "mn"}}},
  -- For GEMM_CHECK with GEMM_CHECK_PROBLEMS (fp8blk17): block scales at the defaults with scale_A M-major and K-major.
  mnodd = {scalings = {"block"}, large = {{scale_a_layout = "mn"}, {}}, small = {}},
  mnchk = {scalings = {"block"}, large = {{scale_a_layout = "mn"}, {scale_a_layout = "mn", scale_tma = "false", a_regs = "false"},
                                          {scale_a_layout = "mn", scale_tma = "false", a_regs = "true"},
                                          {scale_a_layout = "mn", scale_tma = true, block_N = 192, wgmma_N = 192},
                                          {scale_a_layout = "mn", scale_tma = true, block_N = 128, wgmma_N = 64, num_stages = 6},
                                          {scale_a_layout = "mn", scale_tma = true, block_M = 64, block_N = 128, num_stages = 5}},
           small = {}},
  -- Row scales staged in shared memory at the tile's start (scale_stage; auto: on for the wide tiles) beside the
  -- row-scaled defaults (`rdef`), forced on (`rss`) and off (`rnoss`: the global loads, main's default before
  -- 2026-11-27); for GEMM_CHECK (`sschk`, with GEMM_CHECK_SCALING=row) also on one consumer with 128-column tiles,
  -- one 192-column chain, direct stores and fast accumulation.
  rdef = {scalings = {"row"}, large = {{}}, small = {{}}},
  rss = {scalings = {"row"}, large = {{scale_stage = true}}, small = {{scale_stage = true}}},
  rnoss = {scalings = {"row"}, large = {{scale_stage = "false"}}, small = {{scale_stage = "false"}}},
  -- The consumers' wgmma descriptors from warp-uniform values (uniform_desc; auto: on for 128 x 256 tiles) forced
  -- on and off.
  ud = {large = {{uniform_desc = true}}, small = {{uniform_desc = true}}},
  udoff = {large = {{uniform_desc = "false"}}, small = {{uniform_desc = "false"}}},
  -- For GEMM_CHECK: uniform_desc with the other loops' issue paths: overlapped chains, A from registers, fast
  -- accumulation, the consumers in turns, one consumer.
  udchk = {large = {{uniform_desc = true, wgmma_N = 64, overlap = true}, {uniform_desc = true, a_regs = "true"},
                    {uniform_desc = true, fast_accum = true}, {uniform_desc = true, ping_pong = true, a_regs = "false"},
                    {uniform_desc = true, block_M = 64, block_N = 128, num_stages = 5}},
           small = {}},
  -- Small M's grid (issue 21 item 1, M 128): cuBLASLt's 64 x 112 tile (block_M=64, one consumer; 128 CTAs at N 7168
  -- against the default 128 x 64's 112), 64 x 128 (112 CTAs, one consumer), the default with uniform descriptors,
  -- with 6 stages; `n112chk` (GEMM_CHECK) the 112-column tile on the odd problems, with and without uniform_desc,
  -- with two consumers and direct stores.
  n112 = {scalings = {"tensor", "row"}, large = {}, small = {{block_M = 64, block_N = 112}}},
  n112u = {scalings = {"tensor", "row"}, large = {}, small = {{block_M = 64, block_N = 112, uniform_desc = true}}},
  m64n128 = {scalings = {"tensor", "row"}, large = {}, small = {{block_M = 64, block_N = 128}}},
  sud = {scalings = {"tensor", "row"}, large = {}, small = {{uniform_desc = true}}},
  st6 = {scalings = {"tensor", "row"}, large = {}, small = {{num_stages = 6}}},
  -- Row scales staged in shared memory on the 112-column tile of one consumer (scale_stage's auto is off there),
  -- with and without uniform descriptors (fp8small2).
  n112s = {scalings = {"row"}, large = {}, small = {{block_M = 64, block_N = 112, scale_stage = true}}},
  n112us = {scalings = {"row"}, large = {}, small = {{block_M = 64, block_N = 112, uniform_desc = true, scale_stage = true}}},
  n112chk = {scalings = {"tensor", "row"},
             large = {{block_M = 64, block_N = 112}, {block_M = 64, block_N = 112, uniform_desc = true},
                      {block_N = 112}, {block_M = 64, block_N = 112, tma_store = false},
                      {block_M = 64, block_N = 112, scale_stage = true},
                      {block_M = 64, block_N = 112, uniform_desc = true, scale_stage = true}}, small = {}},
  -- The fixed costs after the last k block (fp8small3): the tensor scales loaded at the kernel's start (scale_early)
  -- and the TMA descriptors prefetched first, C's too (prefetch_maps), both off (`eold`: main's kernel before them),
  -- scale_early alone (`ese`), prefetch_maps alone (`epm`); `dtr` had both on in fp8small3's call (both auto off since).
  eold = {scalings = {"tensor", "row"}, large = {{scale_early = "false", prefetch_maps = "false"}},
          small = {{scale_early = "false", prefetch_maps = "false"}}},
  ese = {scalings = {"tensor"}, large = {{prefetch_maps = "false"}}, small = {{prefetch_maps = "false"}}},
  epm = {scalings = {"tensor"}, large = {{scale_early = "false"}}, small = {{scale_early = "false"}}},
  -- M <= 64 (one 64-row tile row): the one-consumer tiles against the default's 128 x 64 (half its rows empty):
  -- 64 x 64 (112 CTAs), 64 x 112 (64) with and without uniform_desc, 64 x 128 (56); row scales staged (scale_stage).
  s64 = {scalings = {"tensor", "row"}, large = {},
         small = {{block_M = 64, block_N = 64, skip = "row"}, {block_M = 64, block_N = 64, scale_stage = true, only = "row"}}},
  s112 = {scalings = {"tensor", "row"}, large = {},
          small = {{block_M = 64, block_N = 112, skip = "row"}, {block_M = 64, block_N = 112, scale_stage = true, only = "row"}}},
  s112u = {scalings = {"tensor", "row"}, large = {},
           small = {{block_M = 64, block_N = 112, uniform_desc = true, skip = "row"},
                    {block_M = 64, block_N = 112, uniform_desc = true, scale_stage = true, only = "row"}}},
  s128 = {scalings = {"tensor", "row"}, large = {},
          small = {{block_M = 64, block_N = 128, skip = "row"}, {block_M = 64, block_N = 128, scale_stage = true, only = "row"}}},
  -- Both fixed-cost switches on (scale_early is per-tensor's only) beside the defaults (both off), for the small-M tiles.
  fxon = {scalings = {"tensor", "row"}, large = {},
          small = {{scale_early = "true", prefetch_maps = "true", skip = "row"}, {prefetch_maps = "true", only = "row"}}},
  -- Per-tensor scales staged per tile by each consumer thread's cp.async (scale_stage=true, session 47), beside `dtr`.
  tst = {scalings = {"tensor"}, large = {{scale_stage = true}}, small = {{scale_stage = true}}},
  -- ... and the epilogue's loads (scale_stage=false, the default before) beside the defaults since (`dtr`).
  tsf = {scalings = {"tensor"}, large = {{scale_stage = false}}, small = {{scale_stage = false}}},
  -- The 128-row tiles block_M's auto took at M <= 64 before fp8small3 (beside `dtr`, the 64 x 64 tiles now).
  m128 = {scalings = {"tensor", "row"}, large = {}, small = {{block_M = 128}}},
  -- Block scales on the row-scaled defaults' 128 x 192 tiles (one 192-column chain a consumer, scale_tma auto, auto
  -- depth: 4 stages at 8192^3, 3 at 16384^2 x 4096) with uniform descriptors (`b192`), without them (`b192nu`), and
  -- with a fourth stage at 16384^2 x 4096 (`b192s4`); `b192chk` (GEMM_CHECK) the first two on the odd problems.
  b192 = {scalings = {"block"}, large = {{block_N = 192, wgmma_N = 192, uniform_desc = true,
                                          at = "8192x8192x8192,16384x16384x4096"}}, small = {}},
  b192nu = {scalings = {"block"}, large = {{block_N = 192, wgmma_N = 192, uniform_desc = "false",
                                            at = "8192x8192x8192,16384x16384x4096"}}, small = {}},
  b192s4 = {scalings = {"block"}, large = {{block_N = 192, wgmma_N = 192, uniform_desc = true, num_stages = 4,
                                            at = "16384x16384x4096"}}, small = {}},
  b192chk = {scalings = {"block"}, large = {{block_N = 192, wgmma_N = 192, uniform_desc = true},
                                            {block_N = 192, wgmma_N = 192, uniform_desc = "false"}}, small = {}},
  -- M 128's start and end (fp8m128t): the defaults at M 64 / 128 / 256 (tensor and row) and 4096 x 7168 x 2048
  -- (tensor) beside the first stages loaded before the __syncthreads (`m1el`), B past the ring prefetched into the L2
  -- (`m1pb`), the last store wait for the reads only (`m1xr`), all three (`m1c`), and four stages at small M (`m1s4`).
  -- (`m1d` was timed at 4edc283, before early_loads' auto: since 28bdc1d it runs early_loads at M <= 256. prefetch_b
  -- and exit_read were taken out after that call, with m1pb, m1xr and m1c: branch fp8m128t keeps them.)
  m1d = {scalings = {"tensor", "row"}, large = {{only = "tensor", at = "4096x7168x2048"}}, small = {{}}},
  m1el = {scalings = {"tensor", "row"}, large = {{early_loads = true, only = "tensor", at = "4096x7168x2048"}},
          small = {{early_loads = true}}},
  m1s4 = {scalings = {"tensor", "row"}, large = {}, small = {{num_stages = 4}}},
  sschk = {scalings = {"row"}, large = {{scale_stage = true}, {scale_stage = true, block_M = 64, block_N = 128, num_stages = 5},
                                        {scale_stage = true, block_N = 192, wgmma_N = 192},
                                        {scale_stage = true, tma_store = false}, {scale_stage = true, fast_accum = true}},
           small = {}},
}
-- Entry fields that are the problem's, not the config's.
local problem_keys = {scale_a_layout = true}
local picked = {}
for i in (os.getenv("GEMM_SHAPES") or "1,2,3,4,5"):gmatch("%d+") do
  picked[#picked + 1] = assert(shapes[tonumber(i)], "GEMM_SHAPES: no shape " .. i .. " (1-" .. #shapes .. ")")
end
shapes = picked
local k = tl.kernel("gemm.fp8")
local cases = {}
for name in (os.getenv("GEMM_SETS") or "base,rs"):gmatch("[%w_]+") do
  local set = assert(sets[name], "GEMM_SETS: no config list '" .. name .. "'")
  for _, s in ipairs(shapes) do
    for _, scaling in ipairs(set.scalings or {"tensor", "row", "block"}) do
      for _, entry in ipairs(s.small and set.small or set.large) do
        local c = {}
        local p = {M = s.M, N = s.N, K = s.K, scaling = scaling}
        for key, v in pairs(entry) do
          if problem_keys[key] then p[key] = v elseif key ~= "only" and key ~= "skip" and key ~= "at" then c[key] = v end
        end
        local at = (entry.at or "") == "" or ("," .. entry.at .. ","):find("," .. s.M .. "x" .. s.N .. "x" .. s.K .. ",", 1, true)
        if at and (entry.only or scaling) == scaling and entry.skip ~= scaling and k:can_implement(p, c) then
          cases[#cases + 1] = {p, c}
        end
      end
    end
  end
end
-- `tilelab test --full`'s gemm.fp8 problems: partial tiles, K with a partial last k block, one k block, f32 C.
local odd = {{M = 257, N = 130, K = 256, scaling = "tensor"}, {M = 257, N = 130, K = 256, scaling = "row"},
             {M = 257, N = 130, K = 384, scaling = "block"}, {M = 256, N = 256, K = 512, scaling = "block", out_dtype = "f32"},
             {M = 200, N = 136, K = 208, scaling = "row", out_dtype = "f32"}, {M = 129, N = 300, K = 144, scaling = "block"},
             {M = 1, N = 1, K = 16, scaling = "block"}, {M = 513, N = 511, K = 1008, scaling = "tensor"},
             {M = 513, N = 520, K = 1008, scaling = "row", out_dtype = "f32"}, {M = 2113, N = 2312, K = 272, scaling = "block"},
             {M = 2113, N = 2312, K = 272, scaling = "tensor", out_dtype = "f32"},
             -- 16-bit C with N % 8 == 0: the TMA-store epilogue (c_split's parts) on partial tiles.
             {M = 257, N = 136, K = 384, scaling = "tensor"}, {M = 300, N = 200, K = 256, scaling = "row"},
             {M = 2113, N = 2312, K = 272, scaling = "row"}, {M = 129, N = 520, K = 400, scaling = "block"},
             -- Block scales in 4 or 8 k blocks (scale_tma's TMA boxes): partial tiles and k blocks, odd N (direct
             -- stores), several tiles per CTA.
             {M = 257, N = 130, K = 400, scaling = "block"}, {M = 513, N = 511, K = 1008, scaling = "block"},
             {M = 2113, N = 2312, K = 1024, scaling = "block"},
             -- M a multiple of 4 (an M-major scale_A's TMA rows): partial tiles, 4 and 8 k blocks, several tiles a CTA.
             {M = 260, N = 130, K = 400, scaling = "block"}, {M = 516, N = 511, K = 1008, scaling = "block", out_dtype = "f32"},
             {M = 2116, N = 2312, K = 1024, scaling = "block"},
             -- Row scales past a tile's edges: one column or row, N 3 (and 130) with one row, M 257 with N 3.
             {M = 1, N = 1, K = 16, scaling = "row"}, {M = 257, N = 3, K = 256, scaling = "row"},
             {M = 1, N = 130, K = 128, scaling = "row"}}
-- GEMM_CHECK_PROBLEMS="MxNxK,...": these problems (each scaling of GEMM_CHECK_SCALING, default block, bf16 C) instead
-- of the odd list above.
if (os.getenv("GEMM_CHECK_PROBLEMS") or "") ~= "" then
  odd = {}
  for m, n, kk in os.getenv("GEMM_CHECK_PROBLEMS"):gmatch("(%d+)x(%d+)x(%d+)") do
    odd[#odd + 1] = {M = tonumber(m), N = tonumber(n), K = tonumber(kk),
                     scaling = (os.getenv("GEMM_CHECK_SCALING") or "") ~= "" and os.getenv("GEMM_CHECK_SCALING") or "block"}
  end
end
local checks = {}
for name in (os.getenv("GEMM_CHECK") or ""):gmatch("[%w_]+") do
  local set = assert(sets[name], "GEMM_CHECK: no config list '" .. name .. "'")
  for _, list in ipairs({set.large, set.small}) do
    for _, entry in ipairs(list) do
      for _, p0 in ipairs(odd) do
        local p, c = {}, {}
        for key, v in pairs(p0) do p[key] = v end
        for key, v in pairs(entry) do if problem_keys[key] then p[key] = v else c[key] = v end end
        -- GEMM_CHECK_SCALING=block: only the odd problems of that scaling.
        local only = os.getenv("GEMM_CHECK_SCALING") or ""
        if only == "" or only == p.scaling then
          local ok, why = k:can_implement(p, c)
          if ok then
            checks[#checks + 1] = {p, c}
          elseif os.getenv("GEMM_CHECK_VERBOSE") then
            print("CHECK REFUSED", tl.json_encode(p), tl.json_encode(c), tostring(why))
          end
        end
      end
    end
  end
end
local function text(t) return tl.json_encode(t) end
-- A row's scaling as the tables show it: block scales with an M-major scale_A as "block/mn".
local function scale_label(p) return p.scaling .. (p.scale_a_layout == "mn" and "/mn" or "") end
if os.getenv("GEMM_COMPILE_ONLY") then
  local seen = {}
  for _, list in ipairs({checks, cases}) do for _, c in ipairs(list) do
    -- Every problem: the kernel's name follows it too (scale_tma's K rule, tma_store's N rule); the cache's hits
    -- cost nothing.
    local key = text(c[1]) .. " " .. text(c[2])
    if not seen[key] then
      seen[key] = true
      local r, err = k:compile(c[2], c[1])
      print(key, r and (r.registers .. " registers, " .. r.spills .. " B spills") or err)
    end
  end end
  return
end
local failed = 0
for _, c in ipairs(checks) do
  local r, err = k:run{problem = c[1], config = c[2], rep = 1, warmup = 0, verify = true}
  if os.getenv("GEMM_CHECK_VERBOSE") and r and r.passed then
    print(string.format("CHECK PASS %s %s rel %.2e", text(c[1]), text(c[2]), r.rel_err or -1))
  end
  if not r or not r.passed then
    failed = failed + 1
    print("CHECK FAIL", text(c[1]), text(c[2]), r and tostring(r.failure) or tostring(err))
  end
end
if #checks > 0 then print(string.format("checks: %d run, %d failed", #checks, failed)) end
-- GEMM_ROUNDS=n: the rows n times over, in the same order (each shape's configs alternate round by round).
local rounds = tonumber(os.getenv("GEMM_ROUNDS") or "1")
local all = {}
for _ = 1, rounds do for _, c in ipairs(cases) do all[#all + 1] = c end end
cases = all
local records, verified = {}, {}
print(string.format("%-16s %-6s %-62s %4s %8s %7s %7s %6s %8s", "problem", "scale", "config", "ok", "ms", "TFLOP/s",
                    "cuBLAS", "x", "vs_cublas"))
for _, c in ipairs(cases) do
  local key = scale_label(c[1]) .. " " .. text(c[2])
  if os.getenv("GEMM_VERIFY") == "shape" then key = key .. " " .. c[1].M .. "x" .. c[1].N .. "x" .. c[1].K end
  local verify = not verified[key]
  verified[key] = true
  local shape = c[1].M .. "x" .. c[1].N .. "x" .. c[1].K
  local r, err = k:run{problem = c[1], config = c[2], rep = rep, warmup = 3, baseline = "cublas", verify = verify,
                       timer = timer}
  if not r then
    print(string.format("%-16s %-6s %-62s ERROR %s", shape, scale_label(c[1]), text(c[2]), tostring(err)))
  else
    local b = r.baseline or {}
    print(string.format("%-16s %-6s %-62s %4s %8.4f %7.1f %7.1f %6.3f %8.1e", shape, scale_label(c[1]), text(c[2]),
                        r.passed and "PASS" or "FAIL", r.median_ms, r.tflops, b.tflops or 0,
                        (b.tflops and b.tflops > 0) and r.tflops / b.tflops or 0, b.rel_vs_kernel or -1))
    if not r.passed then print("  failure: " .. tostring(r.failure)) end
    if b.error then print("  baseline: " .. tostring(b.error)) end
    records[#records + 1] = {problem = c[1], config = c[2], median_ms = r.median_ms, min_ms = r.min_ms,
                             max_ms = r.max_ms, tflops = r.tflops, passed = r.passed, rel_err = r.rel_err,
                             resources = r.resources, baseline = b, checked = verify}
    -- Written after every row, so that a run cut off by its time limit keeps the minima of the rows it timed.
    if os.getenv("OUT") then tl.write_file(os.getenv("OUT") .. "/gemm_fp8_cublas.json", tl.json_encode(records, 1)) end
  end
end
local out = os.getenv("OUT")
if out then tl.write_file(out .. "/gemm_fp8_cublas.json", tl.json_encode(records, 1)) end
-- GEMM_SUMMARY=1: per shape, each (scaling, config) in the order first run, its rounds (the n-th row of the same
-- case is round n): medians and minima (ms), then the block rows' medians ÷ the shape's first block row's (the
-- defaults, where GEMM_SETS starts with them) and the row-wise cuBLASLt baseline (of the shape's row-scaled row of
-- the same round) ÷ the row, by medians and by minima (> 1: the row is faster than cuBLASLt row-wise).
if os.getenv("GEMM_SUMMARY") == "1" then
  local order, by = {}, {}
  for _, r in ipairs(records) do
    local shape = r.problem.M .. "x" .. r.problem.N .. "x" .. r.problem.K
    local key = shape .. " " .. scale_label(r.problem) .. " " .. text(r.config)
    if not by[key] then
      by[key] = {shape = shape, scaling = r.problem.scaling, label = scale_label(r.problem), config = text(r.config),
                 rows = {}}
      order[#order + 1] = key
    end
    table.insert(by[key].rows, r)
  end
  local function list(rows, f)
    local t = {}
    for _, r in ipairs(rows) do t[#t + 1] = f(r) end
    return table.concat(t, " / ")
  end
  local first_block, row_rows = {}, {}
  for _, key in ipairs(order) do
    local e = by[key]
    if e.scaling == "block" and not first_block[e.shape] then first_block[e.shape] = e end
    if e.scaling == "row" and not row_rows[e.shape] then row_rows[e.shape] = e end
  end
  print(string.format("\n%-16s %-6s %-40s %-17s %-17s %-13s %-13s %-13s", "shape", "scale", "config",
                      "median ms", "min ms", "÷defaults", "rowcuBLAS/med", "rowcuBLAS/min"))
  for _, key in ipairs(order) do
    local e = by[key]
    local ref, rw = first_block[e.shape], row_rows[e.shape]
    local idx = {}
    for i, r in ipairs(e.rows) do idx[r] = i end
    local vs_def = e.scaling == "block" and ref and list(e.rows, function(r)
      local o = ref.rows[idx[r]] or ref.rows[#ref.rows]
      return string.format("%.3f", o.median_ms / r.median_ms)
    end) or "-"
    local function vs_row(field)
      return rw and list(e.rows, function(r)
        local o = rw.rows[idx[r]] or rw.rows[#rw.rows]
        local b = o.baseline and o.baseline[field]
        return b and string.format("%.3f", b / r[field]) or "-"
      end) or "-"
    end
    print(string.format("%-16s %-6s %-40s %-17s %-17s %-13s %-13s %-13s", e.shape, e.label, e.config:sub(1, 40),
                        list(e.rows, function(r) return string.format("%.4f", r.median_ms) end),
                        list(e.rows, function(r) return string.format("%.4f", r.min_ms) end), vs_def,
                        vs_row("median_ms"), vs_row("min_ms")))
  end
end
