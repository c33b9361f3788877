#!/usr/bin/env python3
"""attn.decode beside PyTorch SDPA's flash and cuDNN backends (enable_gqa=True) at issue 20's decoding shapes.

Run on a GPU machine with PyTorch: python3 tests/perf/attn_decode_sdpa.py [--tilelab PATH] [--space 'k=v1,v2;...']
[--quick] [--shapes 'b,hq,hkv,sk,sq ...'] [--json FILE] (TILELAB_EXE also names the binary).
Shapes (d 128, bf16): b in {1, 8, 32}, h_q/h_kv 32/8, 64/8 and 32/32, s_k 4096 and 16384 (and 65536 for b 1 and 8),
s_q 1 and 4 (causal, the mask aligned to the cache's end: torch's causal_lower_right).
SDPA timing: q [b, h_q, s_q, d] and the cache k, v [b, h_kv, s_k, d] as views of [b, s, h, d] tensors (TileLab's
layout), CUDA events around one call after an L2 flush (a write of 256 MiB, which also keeps the GPU busy while Python
dispatches the call), median of --reps. TileLab's numbers come from one `tilelab sweep attn.decode --vs cudnn` over every shape (events
after the same kind of flush, outputs checked against the float64 reference) with cuDNN's SDPA graph in the same worker.
GB/s = (k and v of every cached token + q + out) / time for every column.
"""
import argparse
import json
import os
import subprocess
import tempfile

import torch

from cuda_timing import median_time


def sdpa_us(b, hq, hkv, sk, sq, d, reps):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.nn.attention.bias import causal_lower_right
    import torch.nn.functional as F
    q = torch.randn(b, sq, hq, d, device="cuda", dtype=torch.bfloat16).transpose(1, 2)
    k = torch.randn(b, sk, hkv, d, device="cuda", dtype=torch.bfloat16).transpose(1, 2)
    v = torch.randn(b, sk, hkv, d, device="cuda", dtype=torch.bfloat16).transpose(1, 2)
    mask = causal_lower_right(sq, sk) if sq > 1 else None
    out = {}
    for name, backend in (("flash", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION)):
        try:
            with sdpa_kernel(backend):
                out[name] = 1e6 * median_time(lambda: F.scaled_dot_product_attention(
                    q, k, v, attn_mask=mask, enable_gqa=True), reps=reps, warmup=3)[0]
        except Exception as e:  # a backend may refuse a shape
            out[name] = f"n/a ({type(e).__name__}: {str(e).splitlines()[0][:60] if str(e) else ''})"
    del q, k, v
    torch.cuda.empty_cache()
    return out


def tilelab_sweep(exe, problems, space, samples):
    """Every config of `space` on every problem in one `tilelab sweep` (one worker; cuDNN's SDPA graph once per
    problem): {problem: [(config label, point)]}, a point {us, gbps, passed, rel_error, grid, cudnn_us} or {error}."""
    keys = [item.split("=", 1)[0] for item in space.split(";") if item]
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        cmd = [exe, "sweep", "attn.decode", "--space", space, "--vs", "cudnn", "--no-store", "--fresh", "--plain",
               "--samples", str(samples), "--json", f.name]
        for pr in problems:
            cmd += ["--problem", pr]
        r = subprocess.run(cmd, capture_output=True, text=True)
        try:
            points = json.load(open(f.name))["points"]
        except Exception:
            raise SystemExit(f"tilelab sweep failed (rc {r.returncode}): {(r.stdout + r.stderr).strip()[-2000:]}")
    out = {}
    for pt in points:
        prob = pt["problem"]
        key = (prob["batch"], prob["heads"], prob["heads_kv"], prob["seq_k"], prob["seq_q"])
        label = ",".join(f"{k}={pt['config'].get(k)}" for k in keys)
        rec = pt.get("record") or {}
        if "median_ms" not in pt or not pt.get("passed"):
            o = {"error": f"{pt.get('status')}: {(pt.get('reason') or rec.get('failure') or '')[:100]}"}
        else:
            o = {"us": pt["median_ms"] * 1e3, "gbps": pt["gbps"], "passed": True, "rel_error": pt["rel_error"],
                 "grid": rec.get("launch", {}).get("grid")}
        base = rec.get("baseline") or {}
        if base.get("time_ms", {}).get("median"):
            o["cudnn_us"] = base["time_ms"]["median"] * 1e3
        out.setdefault(key, []).append((label, o))
    return out


def fmt(v, w=8):
    return f"{v:{w}.1f}" if isinstance(v, float) else f"{str(v)[:w]:>{w}}"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--tilelab", default=os.environ.get("TILELAB_EXE", "tilelab"))
    p.add_argument("--space", default="num_splits=0", help="attn.decode configs to sweep on every shape ('k=v1,v2;...')")
    p.add_argument("--samples", type=int, default=4096, help="output positions each sweep point checks")
    p.add_argument("--quick", action="store_true", help="s_k 4096 and 16384 only")
    p.add_argument("--shapes", help="'b,hq,hkv,sk,sq ...' instead of the issue's")
    p.add_argument("--reps", type=int, default=30)
    p.add_argument("--json", help="also write every number to FILE")
    args = p.parse_args()
    d = 128
    if args.shapes:
        shapes = [tuple(int(x) for x in s.split(",")) for s in args.shapes.split()]
    else:
        shapes = [(b, hq, hkv, sk, sq) for b in (1, 8, 32) for (hq, hkv) in ((32, 8), (64, 8), (32, 32))
                  for sk in (4096, 16384, 65536) for sq in (1, 4)
                  if not (sk == 65536 and (b > 8 or args.quick))]
    base = {sh: sdpa_us(*sh[:3], sh[3], sh[4], d, args.reps) for sh in shapes}
    torch.cuda.empty_cache()
    problems = [f"batch={b},heads={hq},heads_kv={hkv},seq_k={sk},seq_q={sq},dim={d},causal=true,dtype=bf16"
                for (b, hq, hkv, sk, sq) in shapes]
    ours = tilelab_sweep(args.tilelab, problems, args.space, args.samples)
    print(torch.cuda.get_device_name(), "torch", torch.__version__, "| times in us; GB/s of attn.decode; ratio = "
          "the better SDPA backend's time / attn.decode's; cudnn-g = cuDNN's SDPA graph in tilelab's worker")
    print(f"{'b':>3} {'hq':>3} {'hkv':>3} {'s_k':>6} {'s_q':>3} {'flash':>8} {'cudnn':>8} {'cudnn-g':>8} "
          f"{'tl':>8} {'tl GB/s':>8} {'ratio':>6}  config / check")
    table = []
    for sh in shapes:
        b, hq, hkv, sk, sq = sh
        better = min([v for v in base[sh].values() if isinstance(v, float)], default=None)
        cudnn_g = next((o["cudnn_us"] for _, o in ours.get(sh, []) if "cudnn_us" in o), "-")
        row = {"batch": b, "heads": hq, "heads_kv": hkv, "seq_k": sk, "seq_q": sq, **base[sh], "cudnn_graph": cudnn_g,
               "tilelab": []}
        for label, o in ours.get(sh, [("-", {"error": "no point"})]):
            ratio = better / o["us"] if better and "us" in o else None
            check = o.get("error") or f"ok {o['rel_error']:.1e} grid {o['grid']}"
            print(f"{b:>3} {hq:>3} {hkv:>3} {sk:>6} {sq:>3} {fmt(base[sh]['flash'])} {fmt(base[sh]['cudnn'])} "
                  f"{fmt(cudnn_g)} {fmt(o.get('us', '-'))} {fmt(o.get('gbps', '-'))} "
                  f"{(f'{ratio:6.3f}' if ratio else '     -')}  {label} {check}", flush=True)
            row["tilelab"].append({"config": label, **o, "ratio": ratio})
        row["ratio"] = max([t["ratio"] for t in row["tilelab"] if t["ratio"]], default=None)
        table.append(row)
    ratios = [r["ratio"] for r in table if r["ratio"]]  # the best config of each shape
    if ratios:
        geo = 1.0
        for r in ratios:
            geo *= r
        print(f"ratio: min {min(ratios):.3f}, geometric mean {geo ** (1 / len(ratios)):.3f} over {len(ratios)} shapes")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(table, f, indent=1)


if __name__ == "__main__":
    main()
