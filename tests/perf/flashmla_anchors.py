# FlashMLA 9241ae3 on issue 19's anchors (mla_anchors.lua's rows), ROUNDS rounds in one process (even rounds in
# reverse order; each shape's inputs made once, in round 1, and kept): its sparse decode (flashmla_sparse.py's inputs),
# sparse prefill (flashmla_sparse_prefill.py's) and dense decode (flashmla_dense.py's), CUDA events around each
# launch with the L2 flushed before it (cuda_timing.py), 5 warm-ups, median and min of REP; FLOPs as FlashMLA counts
# them (dense: its own varlen draw's mean length). Prints one "FMROW" line a point:
# FMROW r<round>|<kind>|<name>|<median ms>|<min ms>|<TFLOP/s by the median>|<TFLOP/s by the min>|<note>.
# FM_ONLY: a regex of the point names timed (mla_anchors.lua's ONLY is a Lua pattern: "k$" is the prefill rows in both).
# Needs flash_mla importable and FlashMLA's tests/quant.py in /tmp/flashmla/tests (flashmla_sparse.py's import).
import os
import re
import sys

import torch

here = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [here]
sys.setdlopenflags(os.RTLD_LAZY)  # as flashmla_sparse_run.py imports a build
from cuda_timing import median_time  # noqa: E402
import flash_mla  # noqa: E402
import flashmla_dense as fd  # noqa: E402
import flashmla_sparse as fs  # noqa: E402
import flashmla_sparse_prefill as fp  # noqa: E402

ROUNDS = int(os.environ.get("ROUNDS", "2"))
REP = int(os.environ.get("REP", "20"))

NAMES = {"V3.2 b64": "V3.2 b64 h128", "V3.2 b128": "V3.2 b128 h128"}  # mla_anchors.lua's row names
POINTS = [("sparse_decode", NAMES.get(s[0], s[0]), s) for s in fs.SHAPES]
POINTS += [("sparse_prefill", s[0], s) for s in fp.SHAPES]
POINTS += [("decode", s[0], s) for s in fd.SHAPES]
POINTS = [p for p in POINTS if re.search(os.environ.get("FM_ONLY", "."), p[1])]  # FM_ONLY: a regex of the names


def make(kind, s):
    """(run, flops, note) of one point."""
    if kind == "sparse_decode":
        _, b, s_q, h_q, s_k, topk = s
        q, cache, idx = fs.inputs(b, s_q, h_q, s_k, topk)
        meta, _ = flash_mla.get_mla_metadata()
        run = lambda: flash_mla.flash_mla_with_kvcache(q, cache, None, None, 512, meta, None, is_fp8_kvcache=True,
                                                       indices=idx)
        return run, 2.0 * b * s_q * h_q * topk * (576 + 512), ""
    if kind == "sparse_prefill":
        _, s_q, h_q, s_kv, topk = s
        q, kv, idx, sink = fp.inputs(s_q, h_q, s_kv, topk)
        run = lambda: flash_mla.flash_mla_sparse_fwd(q, kv, idx, fp.SCALE, 512, sink)
        return run, 2.0 * s_q * h_q * topk * (576 + 512), ""
    _, b, s_q, h_q, s_k, causal = s
    q, cache, table, lens, mean, longest = fd.inputs(b, s_q, h_q, s_k)
    meta, _ = flash_mla.get_mla_metadata()
    run = lambda: flash_mla.flash_mla_with_kvcache(q, cache, table, lens, 512, meta, None, causal=causal)
    return run, 2.0 * b * h_q * s_q * (576 + 512) * mean, f"mean_len {mean:.0f} max_len {longest}"


def main():
    print(f"FlashMLA on {torch.cuda.get_device_name()}", flush=True)
    made = {}
    for rnd in range(1, ROUNDS + 1):
        order = POINTS if rnd % 2 == 1 else POINTS[::-1]
        for kind, name, s in order:
            try:
                if name not in made:
                    made[name] = make(kind, s)
                run, flops, note = made[name]
                out = run()
                ok = all(bool(torch.isfinite(t).all()) for t in (out if isinstance(out, (tuple, list)) else (out,))
                         if t is not None and t.is_floating_point())
                t, t_min = median_time(run, reps=REP)
                print(f"FMROW r{rnd}|{kind}|{name}|{t * 1e3:.5f}|{t_min * 1e3:.5f}|{flops / t / 1e12:.2f}|"
                      f"{flops / t_min / 1e12:.2f}|{note}{'' if ok else ' NON-FINITE'}", flush=True)
            except Exception as e:  # one point's failure (memory, API) does not hide the others
                print(f"FMROW r{rnd}|{kind}|{name}|failed: {type(e).__name__}: {str(e)[:160]}", flush=True)


if __name__ == "__main__":
    main()
