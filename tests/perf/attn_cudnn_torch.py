#!/usr/bin/env python3
"""PyTorch SDPA's cuDNN backend at the shapes of `tilelab bench ... --vs cudnn`, timed as TileLab times its rows.

Usage: python3 tests/perf/attn_cudnn_torch.py [--backward] SHAPE... with SHAPE = batch,heads,heads_kv,seq,dim,causal
(e.g. 8,16,16,4096,128,1). Per shape: cuda_timing.median_time (beside this script): CUDA events around each call,
the L2 flushed before each (a 256 MiB write outside the events), median of 20 after 3 warm-ups, bf16 inputs laid out
[batch, seq, heads, dim] as TileLab's (SDPA sees a transposed view). Forward, two columns: inference (no grad: cuDNN writes O only) and with requires_grad (cuDNN
also writes the log-sum-exp, as TileLab's kernels and its cuDNN row do). --backward: torch.autograd.grad of one
forward's output (dQ, dK, dV). FLOPs = 4 * batch * heads * seq^2 * dim (2.5x that backward), halved for causal.
"""
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from cuda_timing import median_time


def main():
    backward = "--backward" in sys.argv
    print(torch.cuda.get_device_name(), "torch", torch.__version__, "cudnn", torch.backends.cudnn.version())
    if backward:
        print(f"{'backward (b,h,h_kv,s,d,causal)':<30} {'ms':>9} {'TFLOP/s':>8}")
    else:
        print(f"{'shape (b,h,h_kv,s,d,causal)':<30} {'infer ms':>9} {'TFLOP/s':>8} {'+lse ms':>9} {'TFLOP/s':>8}")
    for shape in [a for a in sys.argv[1:] if a != "--backward"]:
        b, h, hkv, s, d, causal = (int(x) for x in shape.split(","))
        flops = 4 * b * h * s * s * d * (0.5 if causal else 1.0) * (2.5 if backward else 1.0)

        def make(heads, grad):
            return torch.randn(b, s, heads, d, device="cuda", dtype=torch.bfloat16, requires_grad=grad).transpose(1, 2)

        row = []
        for grad in (True,) if backward else (False, True):
            q, k, v = make(h, grad), make(hkv, grad), make(hkv, grad)
            try:
                with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                    o = F.scaled_dot_product_attention(q, k, v, is_causal=bool(causal), enable_gqa=hkv != h)
                    if backward:
                        g = torch.randn_like(o)
                        ms = 1e3 * median_time(lambda: torch.autograd.grad(o, (q, k, v), g, retain_graph=True),
                                               warmup=3)[0]
                    else:
                        ms = 1e3 * median_time(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=bool(causal),
                                                                                   enable_gqa=hkv != h), warmup=3)[0]
                row += [f"{ms:9.4f}", f"{flops / ms * 1e-9:8.1f}"]
            except Exception as e:  # the backend may refuse a shape
                row += [f"{'n/a':>9}", f"{type(e).__name__[:8]:>8}"]
            del q, k, v, o
            torch.cuda.empty_cache()
        print(f"{shape:<30} " + " ".join(row), flush=True)


if __name__ == "__main__":
    main()
