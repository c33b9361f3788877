# FlashMLA's dense decode (flash_mla_with_kvcache over a bf16 paged cache, no indices) on the shapes
# mla_flashmla_dense_device.sh benches mla.decode at, in one process: inputs made as FlashMLA's dense test makes them
# (tests/test_flash_mla_dense_decoding.py of its tarball: varlen lengths max(N(s_k, s_k/2), s_q) from Python's random
# seeded 0, q and the cache randn/10 clamped to [-1, 1], a shuffled block table of 64-token blocks, NaN past each
# length), CUDA events around each launch with the L2 flushed before it, 5 warm-ups, median of 30; FLOPs and bytes as
# its test counts them (2 b h_q s_q (576 + 512) mean_len; b (s_q h_q 576 + mean_len 576 + s_q h_q 512) bf16 bytes).
# LENGTHS=tilelab (the default since session 49): the varlen lengths mla.decode itself runs on (mla_lengths.py, the
# same draw as its make_paged_cache), so the two kernels time the same caches; LENGTHS=flashmla: FlashMLA's test's own
# draw (Python's random seeded 0), as every call before session 49 did — at batch 32 its longest request is 60282
# tokens against mla.decode's 83074 (32k mean), which a by-rate comparison does not see.
import os
import random
import re

import torch

from cuda_timing import median_time

import flash_mla
from mla_lengths import tilelab_lengths

SHAPES = [  # name, b, s_q, h_q, s_k (mean), causal
    ("MB 4096", 128, 1, 64, 4096, False),
    ("MB 8192", 128, 1, 64, 8192, False),
    ("MB 16384", 128, 1, 64, 16384, False),
    ("CB 4096", 128, 2, 128, 4096, True),
    ("CB 8192", 128, 2, 128, 8192, True),
    ("L32 32768", 32, 1, 128, 32768, False),
]


def inputs(b, s_q, h_q, s_k, block=64, d=576):
    random.seed(0)
    torch.manual_seed(0)
    if os.environ.get("LENGTHS", "tilelab") == "flashmla":
        drawn = [max(int(random.normalvariate(s_k, s_k / 2)), s_q) for _ in range(b)]
    else:
        drawn = tilelab_lengths(b, s_k, s_q)
    lens_cpu = torch.tensor(drawn, dtype=torch.int32)
    pad = (int(lens_cpu.max()) + 255) // 256 * 256
    table = torch.randperm(b * pad // block, dtype=torch.int32, device="cuda").view(b, pad // block)
    blocked = (torch.randn(b * pad // block, block, 1, d, dtype=torch.bfloat16, device="cuda") / 10).clamp_(-1, 1)
    for i in range(b):
        n = int(lens_cpu[i])
        nb = (n + block - 1) // block
        blocked[table[i, nb:].long()] = float("nan")
        if n % block:
            blocked[table[i, nb - 1].long(), n % block:] = float("nan")
        table[i, nb:] = 2147480000
    q = (torch.randn(b, s_q, h_q, d, dtype=torch.bfloat16, device="cuda") / 10).clamp_(-1, 1)
    return q, blocked, table, lens_cpu.cuda(), float(lens_cpu.float().mean()), int(lens_cpu.max())


def main():
    print(f"FlashMLA dense on {torch.cuda.get_device_name()}, lengths {os.environ.get('LENGTHS', 'tilelab')}")
    only = os.environ.get("ONLY", ".")  # a regex of the shape names, as mla_flashmla_dense_device.sh's ONLY
    for name, b, s_q, h_q, s_k, causal in SHAPES:
        if not re.search(only, name):
            continue
        try:
            q, cache, table, lens, mean, longest = inputs(b, s_q, h_q, s_k)
            meta, _ = flash_mla.get_mla_metadata()
            run = lambda: flash_mla.flash_mla_with_kvcache(q, cache, table, lens, 512, meta, None, causal=causal)
            out, lse = run()
            ok = bool(torch.isfinite(out).all()) and bool(torch.isfinite(lse).all())
            t, t_min = median_time(run, reps=30)
            flops = 2.0 * b * h_q * s_q * (576 + 512) * mean
            nbytes = 2.0 * b * (s_q * h_q * 576 + mean * 576 + s_q * h_q * 512)
            print(f"FlashMLA  {name:<10} {t * 1e3:8.4f} ms (min {t_min * 1e3:.4f})  {nbytes / t / 1e9:7.1f} GB/s"
                  f"  {flops / t / 1e12:6.1f} TFLOP/s  mean_len {mean:.0f}  max_len {longest}  {'finite' if ok else 'NON-FINITE'}")
            del q, cache, table, lens, out, lse
            torch.cuda.empty_cache()
        except Exception as e:  # one shape's failure (memory, API) does not hide the others
            print(f"FlashMLA  {name:<10} failed: {type(e).__name__}: {str(e)[:160]}")


if __name__ == "__main__":
    main()
