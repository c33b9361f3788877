#!/usr/bin/env python3
# cuBLAS's kernel for each shape, as torch.matmul (bf16, a @ b.t(): cuBLAS/cuBLASLt through PyTorch) launches it under
# torch.profiler: name, median time of five launches, and grid, block, registers and shared memory from its Chrome trace.
# Usage (a GPU machine with PyTorch): python3 tests/perf/cublas_kernel_names.py
import sys, torch
from torch.profiler import profile, ProfilerActivity
shapes = [(3000, 5000, 4096), (4096, 4096, 4096), (8192, 8192, 8192), (16384, 16384, 4096)]
for M, N, K in shapes:
    a = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(N, K, device="cuda", dtype=torch.bfloat16)
    for _ in range(3):
        c = a @ b.t()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(5):
            c = a @ b.t()
        torch.cuda.synchronize()
    ev = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    names = {}
    for e in ev:
        names.setdefault(e.name, []).append(e.device_time if hasattr(e, "device_time") else e.cuda_time)
    import json, os, tempfile
    f = os.path.join(tempfile.gettempdir(), "trace.json")
    prof.export_chrome_trace(f)
    seen = set()
    for e in json.load(open(f)).get("traceEvents", []):
        a = e.get("args", {})
        if e.get("cat") == "kernel" and e.get("name") not in seen:
            seen.add(e.get("name"))
            print(f"{M}x{N}x{K}: grid {a.get('grid')} block {a.get('block')} cluster {a.get('cluster', a.get('cluster dim'))} "
                  f"smem {a.get('shared memory')} regs {a.get('registers per thread')}")
    for n, t in names.items():
        t = sorted(t)
        print(f"{M}x{N}x{K}: {len(t)}x median {t[len(t)//2]:.1f} us  {n}")
    sys.stdout.flush()
