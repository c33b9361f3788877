-- Escape 7: Ctrl-C during tl.sweep made the script go on and exit 0. The sweep stops after its current point, what
-- it ran is stored, and the script exits 130. Run: timeout -s INT 3 tilelab run --db DB sweep_interrupt.lua
-- (prints "stored ROW" per stored point; sweep_rows.lua DB N checks the store holds those N rows).
tl.sweep{kernel = "gemm.mma", problem = {M = 256, N = 256, K = 256}, jobs = 1, progress = false,
         -- 112 points (warps_M = 1: skipped, registers), so the sweep is still compiling when the interrupt comes on
         -- any machine
         space = {num_stages = {2, 3, 4, 5, 6, 7, 8}, warps_M = {1, 2}, swizzle = {true, false},
                  serpentine = {true, false}, unroll_k = {true, false}},
         on_result = function(p) if p.row_id > 0 then print("stored " .. p.row_id) end end}
print("the script went on after the interrupted sweep")
