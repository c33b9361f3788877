#!/usr/bin/env python3
"""cuBLASLt's FP8 kernel for each of gemm.fp8's anchors (issue 21 item 1), as torch._scaled_mm launches it under
torch.profiler: per scaling mode (tensor, row, block where this PyTorch has it; e4m3 A [M, K] and B [N, K], bf16 C, no
fast accumulation) the kernel's name, its median time over five launches, and grid, block, cluster, registers and shared
memory from the Chrome trace. Usage (a GPU machine with PyTorch): python3 tests/perf/fp8_kernel_names.py
"""
import json
import os
import sys
import tempfile

import torch
from torch.profiler import ProfilerActivity, profile

from fp8_torch import SHAPES, scales  # the same anchors and scale draws as the timing script


def main():
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}")
    f8 = torch.float8_e4m3fn
    trace = os.path.join(tempfile.gettempdir(), "fp8_names_trace.json")
    for m, n, k in SHAPES:
        a = (torch.rand(m, k, device="cuda") * 4 - 2).to(f8)
        b = (torch.rand(n, k, device="cuda") * 4 - 2).to(f8)
        modes = [("tensor", scales(()), scales(())), ("row", scales(m, 1), scales(1, n)),
                 ("block", scales(m, k // 128).t().contiguous().t(), scales(n // 128, k // 128).t())]
        for name, sa, sb in modes:
            if name not in os.environ.get("FP8_MODES", "tensor,row,block").split(","):
                continue
            def fn():
                return torch._scaled_mm(a, b.t(), scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16)
            try:
                for _ in range(3):
                    fn()
                torch.cuda.synchronize()
            except Exception as e:  # a mode this PyTorch / cuBLASLt lacks
                print(f"{m}x{n}x{k} {name}: unavailable: {str(e).splitlines()[0][:150]}")
                continue
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                for _ in range(5):
                    fn()
                torch.cuda.synchronize()
            prof.export_chrome_trace(trace)
            kernels = {}
            for e in json.load(open(trace)).get("traceEvents", []):
                if e.get("cat") == "kernel":
                    kernels.setdefault(e.get("name"), []).append(e)
            for kname, evs in kernels.items():
                d = sorted(float(e.get("dur", 0)) for e in evs)
                args = evs[0].get("args", {})
                keep = {key: v for key, v in args.items()
                        if any(w in key.lower() for w in ("grid", "block", "cluster", "shared", "registers"))}
                print(f"{m}x{n}x{k} {name}: {len(d)}x median {d[len(d) // 2]:.1f} us {json.dumps(keep)} {kname}")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
