# FlashMLA's sparse prefill (flash_mla_sparse_fwd) on the shapes mla_sprefill_device.sh benches, in one process:
# inputs made as FlashMLA's own test makes them (tests/lib.py of its tarball: q and kv ~ N(0, 1) / 10 plus an offset,
# topk distinct rows of [0, s_kv) per query token, attn_sink per head with +-inf, as its performance cases), CUDA
# events around each launch with the L2 flushed before it, 5 warm-ups, median of 20; FLOPs as its benchmark counts
# them (2 s_q h_q topk (576 + 512)). Also checks one small case against a float64 torch reference of the same
# definition TileLab's reference uses, so that the conventions (natural-log LSE, max_logits, sink) are FlashMLA's.
import sys

import torch

from cuda_timing import median_time

sys.path.insert(0, "/tmp/flashmla")
import flash_mla  # noqa: E402

SHAPES = [  # name, s_q, h_q, s_kv, topk
    ("V3.2 8k", 4096, 128, 8192, 2048),
    ("V3.2 32k", 4096, 128, 32768, 2048),
    ("h64 8k", 4096, 64, 8192, 2048),
]
SCALE = 576 ** -0.5


def inputs(s_q, h_q, s_kv, topk):
    torch.manual_seed(0)
    q = (torch.randn(s_q, h_q, 576, dtype=torch.bfloat16, device="cuda") / 10 + 0.01).clamp_(-10, 10)
    kv = (torch.randn(s_kv, 1, 576, dtype=torch.bfloat16, device="cuda") / 10 - 0.01).clamp_(-10, 10)
    rand = torch.rand(s_q, max(s_kv, topk), device="cuda")
    rand[:, s_kv:] = -1.0
    idx = rand.topk(topk, dim=-1).indices.to(torch.int32)
    idx[idx >= s_kv] = -1
    sink = torch.randn(h_q, dtype=torch.float32, device="cuda")
    mask = torch.randn(h_q, device="cuda")
    sink[mask < -0.5] = float("-inf")
    sink[mask > 0.5] = float("inf")
    return q, kv, idx.view(s_q, 1, topk), sink


def check():
    # s_kv < topk: invalid padding; some tokens with no valid index (all -1).
    q, kv, idx, sink = inputs(37, 64, 100, 128)
    idx[5] = -1
    out, max_logits, lse = flash_mla.flash_mla_sparse_fwd(q, kv, idx, SCALE, 512, sink)
    i = idx.view(37, 128).long()
    valid = (i >= 0) & (i < 100)
    k = kv.view(-1, 576).double()[i.clamp(0, 99)]  # [s_q, topk, 576]
    s = torch.einsum("qhd,qtd->qht", q.double(), k) * SCALE
    s[~valid.unsqueeze(1).expand_as(s)] = float("-inf")
    ref_lse = torch.logsumexp(s, -1)
    ref_max = s.max(-1).values
    p = torch.exp(s - ref_lse.unsqueeze(-1)).nan_to_num(0.0)
    o = torch.einsum("qht,qtd->qhd", p, k[..., :512])
    o = o / (1 + torch.exp(sink.double().view(1, -1) - ref_lse)).unsqueeze(-1)
    o[ref_lse == float("-inf")] = 0
    ref_lse[ref_lse == float("-inf")] = float("inf")
    empty = (ref_max == float("-inf")).sum().item()
    print(f"FlashMLA  check: out max err {(out.double() - o).abs().max().item():.2e}, "
          f"lse max err {(lse.double() - ref_lse).nan_to_num(0.0).abs().max().item():.2e} (natural log), "
          f"max_logits max err {(max_logits.double() - ref_max).nan_to_num(0.0).abs().max().item():.2e}; "
          f"empty rows {empty}: lse {lse[5, 0].item()}, max_logits {max_logits[5, 0].item()}, "
          f"out {out[5].abs().max().item()}")


def main():
    try:
        check()
    except Exception as e:
        print(f"FlashMLA  check failed: {type(e).__name__}: {str(e)[:160]}")
    for name, s_q, h_q, s_kv, topk in SHAPES:
        try:
            q, kv, idx, sink = inputs(s_q, h_q, s_kv, topk)
            run = lambda: flash_mla.flash_mla_sparse_fwd(q, kv, idx, SCALE, 512, sink)
            t, t_min = median_time(run, reps=20)
            flops = 2.0 * s_q * h_q * topk * (576 + 512)
            print(f"FlashMLA  {name:<9} {flops / t / 1e12:8.0f} TFLOP/s {t * 1e3:9.4f} ms (min {t_min * 1e3:.4f})")
            del q, kv, idx
            torch.cuda.empty_cache()
        except Exception as e:  # one shape's failure (memory, API) does not hide the others
            print(f"FlashMLA  {name:<9} failed: {type(e).__name__}: {str(e)[:160]}")


if __name__ == "__main__":
    main()
