#!/usr/bin/env python3
"""torch._grouped_mm (bf16) at gemm.grouped's anchor shapes (issue 21: G groups of M rows each, N 4096, K 7168): A
[G M, K] against B [G, N, K] (passed transposed, as torch's grouped GEMM takes it) with int32 offsets, the groups'
cumulative row ends. The masked layout has no torch counterpart: torch._grouped_mm 3d x 3d ([G, M, K] @ [G, K, N],
every row computed) stands beside it. Where this PyTorch has torch._scaled_grouped_mm, e4m3 with row-wise scales too.
Inputs random. Timing: cuda_timing.median_time (CUDA events, warm-up, the L2 flushed before each launch, median of
100; the minimum printed after the rate). Usage: python3 tests/perf/grouped_torch.py (beside cuda_timing.py)
"""
import torch

from cuda_timing import median_time

ANCHORS = [(8, 2048), (32, 512), (64, 128)]
N, K = 4096, 7168


def main():
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}")
    for (g, m) in ANCHORS:
        flops = 2.0 * g * m * N * K
        a = torch.rand(g * m, K, device="cuda", dtype=torch.bfloat16) * 2 - 1
        b = torch.rand(g, N, K, device="cuda", dtype=torch.bfloat16) * 2 - 1
        offs = torch.arange(1, g + 1, device="cuda", dtype=torch.int32) * m
        rows = [("2d x 3d (offsets)", lambda: torch._grouped_mm(a, b.transpose(-2, -1), offs=offs)),
                ("3d x 3d (batched)", lambda: torch._grouped_mm(a.view(g, m, K), b.transpose(-2, -1)))]
        f8 = torch.float8_e4m3fn
        a8, b8 = a.to(f8), b.to(f8)
        sa = torch.rand(g * m, device="cuda", dtype=torch.float32) * 1.5 + 0.5
        sb = torch.rand(g, N, device="cuda", dtype=torch.float32) * 1.5 + 0.5
        rows.append(("e4m3 row-wise (scaled)", lambda: torch._scaled_grouped_mm(
            a8, b8.transpose(-2, -1), sa, sb, offs=offs, out_dtype=torch.bfloat16)))
        for name, fn in rows:
            try:
                t, tmin = median_time(fn, reps=100, warmup=10)
                print(f"torch {name:<24} G={g:<3} M={m:<5} median {t*1e3:8.4f} ms  {flops/t/1e12:7.1f} TFLOP/s"
                      f"  min {tmin*1e3:8.4f} ms")
            except Exception as e:  # an API this PyTorch lacks
                print(f"torch {name:<24} G={g:<3} M={m:<5} unavailable: {str(e).splitlines()[0][:150]}")
        del a, b, a8, b8
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
