# FlashMLA's trimmed build imported with lazy binding (flashmla_sparse_build.sh), then flashmla_sparse.py (FM_ONLY picks the shapes)
# or, with FM_NCU=1, three calls at peak h 64 (for ncu's -s 1 -c 1).
import os, sys, runpy
import torch  # noqa: F401  (its libraries loaded as usual first)
here = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [here, "/tmp/flashmla"]
sys.setdlopenflags(os.RTLD_LAZY)
import flash_mla  # noqa: E402
if os.environ.get("FM_NCU"):
    import flashmla_sparse as fs
    q, cache, idx = fs.inputs(148, 2, 64, 32768, 16384)
    meta, _ = flash_mla.get_mla_metadata()
    for _ in range(3):
        out, lse = flash_mla.flash_mla_with_kvcache(q, cache, None, None, 512, meta, None, is_fp8_kvcache=True, indices=idx)
    torch.cuda.synchronize()
    print("fm_one done, finite", bool(torch.isfinite(out).all()))
else:
    runpy.run_path(os.path.join(here, "flashmla_sparse.py"), run_name="__main__")
