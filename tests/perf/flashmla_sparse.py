# FlashMLA's sparse decode (flash_mla_with_kvcache with is_fp8_kvcache and indices) on the shapes mla_sparse_device.sh
# benches, in one process: inputs made as FlashMLA's own test makes them (tests/lib.py, tests/quant.py of its tarball:
# varlen cache lengths max(N(s_k, s_k/2), s_q), a shuffled block table, bf16 values quantized by its quantizer, topk
# distinct positions per query token, -1 padding), CUDA events around each launch with the L2 flushed before it, 5
# warm-ups, median of 20; FLOPs as its benchmark counts them (2 s_q h_q topk (576 + 512) per request).
import os
import random
import re
import sys

import torch

from cuda_timing import median_time

sys.path.insert(0, "/tmp/flashmla/tests")
import flash_mla  # noqa: E402
import quant  # noqa: E402  (FlashMLA's quantizer, tests/quant.py)

SHAPES = [  # name, b, s_q, h_q, s_k, topk
    ("V3.2 b64", 64, 2, 128, 32768, 2048),
    ("V3.2 b128", 128, 2, 128, 32768, 2048),
    ("peak h128", 148, 2, 128, 32768, 16384),
    ("peak h64", 148, 2, 64, 32768, 16384),
    ("V3.2 b128 h64", 128, 2, 64, 32768, 2048),
    ("V3.2 b64 h64", 64, 2, 64, 32768, 2048),
]
# FM_ONLY: a regex of the shape names timed (default: the four of mla_sparse_device.sh)
ONLY = os.environ.get("FM_ONLY", r"^(V3\.2 b(64|128)|peak h(128|64))$")


def inputs(b, s_q, h_q, s_k, topk, block=64):
    torch.manual_seed(0)
    random.seed(0)
    lens = [max(int(random.normalvariate(s_k, s_k / 2)), s_q) for _ in range(b)]
    pad = (max(lens) + 4 * block - 1) // (4 * block) * (4 * block)
    table = torch.randperm(b * pad // block, dtype=torch.int32).view(b, pad // block)
    blocked = (torch.randn(b * pad // block, block, 1, 576, dtype=torch.bfloat16, device="cuda") / 10).clamp_(-1, 1)
    cache = quant.quantize_k_cache(blocked, quant.FP8KVCacheLayout.V32_FP8Sparse)
    del blocked
    q = torch.randn(b, s_q, h_q, 576, dtype=torch.bfloat16).clamp_(-1, 1).cuda()
    idx = torch.full((b, s_q, topk), -1, dtype=torch.int32)
    for i in range(b):
        for s in range(s_q):
            pos = torch.randperm(lens[i])[:topk]
            idx[i, s, : len(pos)] = table[i, pos // block] * block + pos % block
    return q, cache, idx.cuda()


def main():
    for name, b, s_q, h_q, s_k, topk in SHAPES:
        if not re.search(ONLY, name):
            continue
        try:
            q, cache, idx = inputs(b, s_q, h_q, s_k, topk)
            meta, _ = flash_mla.get_mla_metadata()
            run = lambda: flash_mla.flash_mla_with_kvcache(q, cache, None, None, 512, meta, None, is_fp8_kvcache=True,
                                                           indices=idx)
            t, t_min = median_time(run, reps=20)
            flops = 2.0 * b * s_q * h_q * topk * (576 + 512)
            print(f"FlashMLA  {name:<10} {flops / t / 1e12:8.0f} TFLOP/s {t * 1e3:9.4f} ms (min {t_min * 1e3:.4f})")
            del q, cache, idx
            torch.cuda.empty_cache()
        except Exception as e:  # one shape's failure (memory, API) does not hide the others
            print(f"FlashMLA  {name:<10} failed: {type(e).__name__}: {str(e)[:160]}")


if __name__ == "__main__":
    main()
