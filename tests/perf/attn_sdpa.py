#!/usr/bin/env python3
"""Attention forward side by side: PyTorch SDPA (cuDNN and flash backends forced) and `tilelab bench` of our kernels.

The issue's shapes: batch * seq = 32k tokens, 16 heads, head dim 128, bf16, seq 2k..16k, causal and not.
Run on a GPU machine with PyTorch: python3 tests/perf/attn_sdpa.py [--tilelab PATH] [--run KERNEL[:k=v,...]]...
[--quick] [--json FILE] (TILELAB_EXE also names the binary).
--space 'k=v1,v2;...' (and --causal-space for the causal shapes) also sweeps attn.fwd.wgmma's configs per shape in one
`tilelab sweep` process (--samples output positions checked each), printed as TFLOP/s and the ratio to cuDNN. --run is repeatable (default: attn.fwd.mma and
attn.fwd.wgmma at their defaults); --config k=v,... is the older spelling of --run attn.fwd.mma:k=v,... SDPA timing: cuda_timing.median_time beside this script (CUDA events, warm-up, L2 flushed, median), random inputs;
TileLab's numbers come from its own bench (same rules, L2 flushed, output checked against the float64 reference).
FLOPs = 4 * batch * heads * seq^2 * dim, halved for causal, for both.
"""
import argparse
import json
import os
import subprocess
import tempfile

import torch

from cuda_timing import median_time


def sdpa_tflops(batch, seq, heads, dim, causal, flops):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    import torch.nn.functional as F
    # SDPA takes (batch, heads, seq, dim); a transposed view of (batch, seq, heads, dim) is TileLab's layout.
    q, k, v = (torch.randn(batch, seq, heads, dim, device="cuda", dtype=torch.bfloat16).transpose(1, 2) for _ in range(3))
    out = {}
    for name, backend in (("cudnn", SDPBackend.CUDNN_ATTENTION), ("flash", SDPBackend.FLASH_ATTENTION)):
        try:
            with sdpa_kernel(backend):
                t, _ = median_time(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal))
                out[name] = flops / t / 1e12
        except Exception as e:  # a backend may refuse a shape
            out[name] = f"n/a ({type(e).__name__})"
    del q, k, v
    torch.cuda.empty_cache()
    return out


def tilelab_tflops(exe, kernel, problem, config):
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        cmd = [exe, "bench", kernel, "--problem", problem, "--json", f.name, "--no-store"]
        if config:
            cmd += ["--config", config]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            return f"FAIL ({(r.stdout + r.stderr).strip().splitlines()[-1:]})"
        rec = json.load(open(f.name))
        return rec["tflops"] if rec.get("passed") else f"FAIL ({rec.get('failure', 'check')})"


def tilelab_sweep(exe, kernel, problem, space, samples):
    """Every config of `space` on one problem, one worker: [(label, tflops or 'FAIL (...)' / 'refused')]."""
    keys = [item.split("=", 1)[0] for item in space.split(";") if item]
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        cmd = [exe, "sweep", kernel, "--problem", problem, "--space", space, "--no-store", "--fresh", "--plain",
               "--samples", str(samples), "--json", f.name]
        r = subprocess.run(cmd, capture_output=True, text=True)
        try:
            points = json.load(open(f.name))["points"]
        except Exception:
            return [("sweep", f"FAIL (rc {r.returncode}: {(r.stdout + r.stderr).strip().splitlines()[-1:]})")]
    out = []
    for pt in points:
        label = ",".join(f"{k}={str(pt['config'].get(k)).lower()}" for k in keys)
        if pt.get("status") == "skipped":
            out.append((label, "refused"))
        elif "tflops" in pt and pt.get("passed"):
            out.append((label, pt["tflops"]))
        else:
            out.append((label, f"FAIL ({pt.get('status')}: {pt.get('reason', '')[:80]})"))
    return out


def fmt(v):
    return f"{v:7.1f}" if isinstance(v, float) else f"{v:>7}"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--tilelab", default=os.environ.get("TILELAB_EXE", "tilelab"))
    p.add_argument("--run", action="append", default=[], help="KERNEL[:k=v,...] to time; repeatable")
    p.add_argument("--config", action="append", default=[], help="attn.fwd.mma config(s) to time; repeatable")
    p.add_argument("--quick", action="store_true", help="seq 2k and 4k only")
    p.add_argument("--json", help="also write every number to FILE")
    p.add_argument("--space", help="attn.fwd.wgmma config space swept on every shape ('k=v1,v2;...')")
    p.add_argument("--causal-space", help="the space for the causal shapes (default: --space)")
    p.add_argument("--samples", type=int, default=128, help="output positions each sweep point checks")
    args = p.parse_args()
    runs = [tuple((r.split(":", 1) + [""])[:2]) for r in args.run] + [("attn.fwd.mma", c) for c in args.config]
    runs = runs or ([] if args.space else [("attn.fwd.mma", ""), ("attn.fwd.wgmma", "")])
    print(torch.cuda.get_device_name(), "torch", torch.__version__, "(TFLOP/s; causal counts half the FLOPs)")
    for i, (k, c) in enumerate(runs):
        print(f"  tl{i} = {k} [{c or 'defaults'}]")
    heads, dim, tokens = 16, 128, 32768
    print(f"{'shape':<34} {'cudnn':>7} {'flash':>7} " + " ".join(f"{'tl' + str(i):>7}" for i in range(len(runs))))
    table = []
    for seq in ([2048, 4096] if args.quick else [2048, 4096, 8192, 16384]):
        batch = tokens // seq
        for causal in (False, True):
            flops = 4 * batch * heads * seq * seq * dim * (0.5 if causal else 1.0)
            base = sdpa_tflops(batch, seq, heads, dim, causal, flops)
            problem = f"batch={batch},seq_q={seq},seq_k={seq},heads={heads},heads_kv={heads},dim={dim},causal={str(causal).lower()},dtype=bf16"
            ours = [tilelab_tflops(args.tilelab, k, problem, c) for k, c in runs]
            print(f"b={batch:<3} s={seq:<6} h={heads} d={dim} causal={int(causal)}  {fmt(base['cudnn'])} {fmt(base['flash'])} "
                  + " ".join(fmt(o) for o in ours), flush=True)
            row = {"batch": batch, "seq": seq, "causal": causal, **base,
                   "tilelab": [{"kernel": k, "config": c, "tflops": o} for (k, c), o in zip(runs, ours)]}
            space = (args.causal_space or args.space) if causal else args.space
            if space:
                row["sweep"] = []
                for label, v in tilelab_sweep(args.tilelab, "attn.fwd.wgmma", problem, space, args.samples):
                    ratio = v / base["cudnn"] if isinstance(v, float) and isinstance(base["cudnn"], float) else None
                    print(f"  {label:<40} {fmt(v)}" + (f"  {ratio:5.3f}x cuDNN" if ratio else ""), flush=True)
                    row["sweep"].append({"config": label, "tflops": v, "vs_cudnn": ratio})
            table.append(row)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(table, f, indent=1)


if __name__ == "__main__":
    main()
