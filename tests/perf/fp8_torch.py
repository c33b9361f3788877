#!/usr/bin/env python3
"""torch._scaled_mm (cuBLASLt FP8) at gemm.fp8's anchor shapes: per-tensor, row-wise and, where this PyTorch and
cuBLASLt have it, DeepSeek-V3's 1x128 x 128x128 block scaling. Inputs random e4m3, scales random in [0.5, 2).
Timing: cuda_timing.median_time (CUDA events, warm-up, the L2 flushed before each launch, median of 100). Usage:
python3 tests/perf/fp8_torch.py (beside cuda_timing.py); FP8_MODES=row,block runs only those modes.
"""
import os

import torch

from cuda_timing import median_time

SHAPES = [(8192, 8192, 8192), (4096, 4096, 4096), (4096, 7168, 2048), (128, 7168, 2048), (16384, 16384, 4096)]


def scales(*shape):
    return torch.rand(*shape, device="cuda", dtype=torch.float32) * 1.5 + 0.5


def main():
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}")
    f8 = torch.float8_e4m3fn
    for (m, n, k) in SHAPES:
        a = (torch.rand(m, k, device="cuda") * 4 - 2).to(f8)
        b = (torch.rand(n, k, device="cuda") * 4 - 2).to(f8)  # N x K, K-major: b.t() is the column-major K x N
        flops = 2.0 * m * n * k
        # (name, scale_a, scale_b, use_fast_accum). Block: 1x128 scales of A outer-dim-major (M contiguous), 128x128
        # scales of B passed as [K/128, N/128] (as PyTorch's own tests call it).
        modes = [("tensor", scales(()), scales(()), False), ("tensor_fast", scales(()), scales(()), True),
                 ("row", scales(m, 1), scales(1, n), False),
                 ("block", scales(m, k // 128).t().contiguous().t(), scales(n // 128, k // 128).t(), False)]
        only = os.environ.get("FP8_MODES")
        if only:
            modes = [m for m in modes if m[0] in only.split(",")]
        for name, sa, sb, fast in modes:
            try:
                t, _ = median_time(lambda: torch._scaled_mm(a, b.t(), scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16,
                                                         use_fast_accum=fast), reps=100, warmup=10)
                print(f"torch._scaled_mm {name:<11} {m}x{n}x{k:<6} median {t*1e3:8.4f} ms  {flops/t/1e12:7.1f} TFLOP/s")
            except Exception as e:  # a mode this PyTorch / cuBLASLt lacks
                print(f"torch._scaled_mm {name:<11} {m}x{n}x{k:<6} unavailable: {str(e).splitlines()[0][:150]}")


if __name__ == "__main__":
    main()
