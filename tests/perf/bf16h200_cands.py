#!/usr/bin/env python3
"""gemm.wgmma bf16 config screen on the H200 (issue 21 item 2): the candidates per anchor shape, pruned here without a
GPU by `tilelab compile --json` (refusals dropped; a config whose kernel is the default's or another candidate's at
that shape dropped), the NVRTC cache filled on the way. Prints one line per shape: 'M,N,K<TAB>cfg;cfg;...' (the
default '' first and last), in screening order (the rows nearest 1.0x cuBLAS first).
Usage: TILELAB_KERNELS_DIR=... TILELAB_CACHE_DIR=... python3 bf16h200_cands.py TILELAB > shapes.txt"""
import json, subprocess, sys

T = sys.argv[1]
BIG = ["3000,5000,4096", "4096,4096,4096", "6144,6144,6144", "2048,8192,8192", "16384,16384,4096", "8192,8192,8192"]
SMALL = ["4096,4096,512", "8192,8192,1024"]


def big_cands(shape):
    c = []
    for r in ("m", "n"):
        for p in (1, 2, 4, 8, 16, 32):
            c.append(f"block_M=128,schedule=data_parallel,panel={p},raster={r}")
    for p in (2, 4, 8, 16, 32):
        c.append(f"block_M=128,num_stages=4,c_split=2,schedule=data_parallel,panel={p}")
    for p in (4, 16):
        c.append(f"block_M=128,num_stages=4,c_split=2,schedule=data_parallel,panel={p},raster=n")
    for p in (4, 8, 16, 32):
        c.append(f"block_M=256,block_N=152,num_stages=4,c_split=2,panel={p}")
    for p in (4, 16):
        c.append(f"block_M=256,block_N=152,num_stages=4,c_split=2,panel={p},raster=n")
    for p in (4, 16):
        c.append(f"block_M=256,block_N=128,num_stages=4,panel={p}")
    c += ["block_M=192,block_N=192,num_stages=4,panel=4", "block_M=192,block_N=192,num_stages=4,panel=16",
          "block_M=192,block_N=192,panel=16"]
    for p in (4, 16):
        c.append(f"block_M=128,schedule=stream_k,panel={p}")
    c.append("block_M=128,num_stages=4,c_split=2,schedule=stream_k,panel=16")
    c += ["block_M=128,cluster_M=2,panel=16", "block_M=128,cluster_N=2,panel=16"]
    if shape in ("4096,4096,4096",):
        c += ["schedule=pingpong,panel=4", "schedule=pingpong,panel=16"]
    return c


def small_cands(shape):
    c = []
    for r in ("m", "n"):
        for p in (1, 2, 4, 8, 16, 32):
            c.append(f"schedule=pingpong,panel={p},raster={r}")
    c += ["schedule=pingpong,num_stages=4,panel=4", "schedule=pingpong,num_stages=5,panel=4",
          "schedule=pingpong,block_M=64,panel=4", "schedule=pingpong,block_M=64,block_N=128,panel=4",
          "block_M=128,num_stages=4,c_split=2,schedule=data_parallel,panel=4",
          "block_M=128,schedule=data_parallel,panel=4", "block_M=128,schedule=stream_k,panel=4",
          "block_M=256,block_N=128,num_stages=4,panel=4", "block_M=256,block_N=152,num_stages=4,c_split=2,panel=4"]
    return c


def name(shape, cfg):
    M, N, K = shape.split(",")
    cmd = [T, "compile", "gemm.wgmma", "--problem", f"M={M},N={N},K={K}", "--json"]
    if cfg:
        cmd += ["--config", cfg]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        return None, (r.stderr or r.stdout).strip().splitlines()[-1][:160]
    d = json.loads(r.stdout)
    return d["name_expression"], json.dumps(d.get("resources"))[:120]


ORDER = ["4096,4096,4096", "3000,5000,4096", "6144,6144,6144", "2048,8192,8192", "16384,16384,4096", "8192,8192,8192",
         "4096,4096,512", "8192,8192,1024"]
for shape in ORDER:
    cands = big_cands(shape) if shape in BIG else small_cands(shape)
    seen = {}
    n0, info = name(shape, "")
    seen[n0] = "(default)"
    keep = []
    for cfg in cands:
        n, info = name(shape, cfg)
        if n is None:
            print(f"# {shape} {cfg}: refused: {info}", file=sys.stderr)
            continue
        if n in seen:
            print(f"# {shape} {cfg}: same kernel as {seen[n]}", file=sys.stderr)
            continue
        seen[n] = cfg
        keep.append(cfg)
        print(f"# {shape} {cfg}: {info}", file=sys.stderr)
    # Stream-K rows last: their workspace arguments change the reference key, so the host's inputs are made again.
    keep = [k for k in keep if "stream_k" not in k] + [k for k in keep if "stream_k" in k]
    print(shape + "\t" + ";".join([""] + keep + [""]))
