#!/usr/bin/env python3
"""PyTorch baselines on the GPU beside TileLab's own numbers: copy bandwidth, bf16 matmul, SDPA (cuDNN, flash).

Run on a GPU machine with PyTorch: python3 tests/perf/torch_baselines.py [--quick]
Timing: cuda_timing.median_time (beside this script): CUDA events, warm-up, the L2 flushed before each launch (not
for the 1 GiB copy, which L2 cannot hold), median of repetitions; inputs random (never zeros).
"""
import argparse

import torch

from cuda_timing import median_time


def copy_bandwidth():
    n = 1 << 30  # 1 GiB of bytes each way
    src = torch.rand(n // 4, device="cuda")
    dst = torch.empty_like(src)
    med, lo = median_time(lambda: dst.copy_(src), reps=30, flush=False)
    print(f"copy  1 GiB   median {med*1e3:8.3f} ms  {2*n/med/1e12:6.3f} TB/s (read+write)  [best {2*n/lo/1e12:.3f}]")


def matmul(shapes):
    for (m, n, k) in shapes:
        a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
        med, _ = median_time(lambda: a @ b, reps=50)
        print(f"matmul bf16 {m}x{n}x{k:<6} median {med*1e3:8.3f} ms  {2*m*n*k/med/1e12:7.1f} TFLOP/s")


def sdpa(seqs, causal_list):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    import torch.nn.functional as F
    heads, dim, tokens = 16, 128, 32768
    for seq in seqs:
        batch = tokens // seq
        q, k, v = (torch.randn(batch, heads, seq, dim, device="cuda", dtype=torch.bfloat16) for _ in range(3))
        for causal in causal_list:
            flops = 4 * batch * heads * seq * seq * dim * (0.5 if causal else 1.0)
            row = f"sdpa b={batch:<3} s={seq:<6} h={heads} d={dim} causal={int(causal)}"
            for name, backend in (("cudnn", SDPBackend.CUDNN_ATTENTION), ("flash", SDPBackend.FLASH_ATTENTION)):
                try:
                    with sdpa_kernel(backend):
                        med, _ = median_time(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal))
                    row += f"  {name} {flops/med/1e12:6.1f} TFLOP/s"
                except Exception as e:  # a backend may refuse a shape
                    row += f"  {name} n/a ({type(e).__name__})"
            print(row)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--quick", action="store_true")
    args = p.parse_args()
    print(torch.cuda.get_device_name(), "torch", torch.__version__)
    copy_bandwidth()
    matmul([(8192, 8192, 8192), (4096, 4096, 4096), (8192, 8192, 1024), (4096, 4096, 512)])
    sdpa([2048, 4096] if args.quick else [2048, 4096, 8192, 16384], [False, True])


if __name__ == "__main__":
    main()
