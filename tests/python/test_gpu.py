# On a GPU (label gpu; skipped with the reason without one): the direct call on torch tensors against torch's own
# results, on the caller's stream (inside a CUDA graph too), with out=; its time against run()'s; run/bench records,
# the store, a faulting kernel isolated in the worker. Runs under pytest, or as `python3 test_gpu.py` where pytest
# is missing (a GPU server).
import os
import sys
import tempfile

try:
    import pytest
    gpu = pytest.mark.gpu
except ImportError:
    pytest = None

    def gpu(f):
        return f

import tilelab


def torch_or_skip():
    try:
        import torch
    except ImportError:
        if pytest:
            pytest.skip("torch is not installed")
        raise
    return torch


def rel_err(x, ref):
    x, ref = x.double(), ref.double()
    return ((x - ref).norm() / ref.norm()).item()


@gpu
def test_gemm_direct_matches_torch():
    torch = torch_or_skip()
    torch.manual_seed(0)
    k = tilelab.kernel("gemm.wgmma")
    for m, n, kk in ((1000, 1000, 512), (4096, 4096, 4096)):
        a = torch.randn(m, kk, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(n, kk, device="cuda", dtype=torch.bfloat16)
        c = k(a, b)
        assert c.shape == (m, n) and c.dtype == torch.bfloat16 and c.device == a.device
        assert rel_err(c, a.float() @ b.float().T) < 1e-2


@gpu
def test_other_kernels_direct_match_torch():
    torch = torch_or_skip()
    torch.manual_seed(1)
    x = torch.randn(4096, 1000, device="cuda")
    assert torch.equal(tilelab.kernel("copy")(x.flatten()), x.flatten())
    assert rel_err(tilelab.kernel("softmax")(x), torch.softmax(x, dim=1)) < 1e-5
    w = torch.randn(1000, device="cuda")
    ref = x / torch.sqrt((x * x).mean(dim=1, keepdim=True) + 1e-6) * w
    assert rel_err(tilelab.kernel("rmsnorm")(x, w), ref) < 1e-5
    b = torch.randn(4, 512, 8, 128, device="cuda", dtype=torch.bfloat16)
    q, kk, v = b, torch.randn_like(b), torch.randn_like(b)
    o, lse = tilelab.kernel("attn.fwd.wgmma")(q, kk, v)
    ref = torch.nn.functional.scaled_dot_product_attention(q.transpose(1, 2), kk.transpose(1, 2), v.transpose(1, 2))
    assert rel_err(o, ref.transpose(1, 2)) < 2e-2 and lse.shape == (4, 8, 512)
    b16 = torch.randn(512, 256, device="cuda", dtype=torch.float16)
    c = tilelab.kernel("gemm.mma")(b16, torch.randn(256, 256, device="cuda", dtype=torch.float16), problem={"trans_B": False})
    assert c.shape == (512, 256)


@gpu
def test_direct_call_on_a_stream_with_out():
    torch = torch_or_skip()
    k = tilelab.kernel("gemm.wgmma")
    a = torch.randn(2048, 1024, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(2048, 1024, device="cuda", dtype=torch.bfloat16)
    c = torch.empty(2048, 2048, device="cuda", dtype=torch.bfloat16)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    assert k(a, b, out=c, stream=s) is c
    s.synchronize()
    assert rel_err(c, a.float() @ b.float().T) < 1e-2
    with torch.cuda.stream(s):  # no stream=: torch's current stream, here s
        d = k(a, b)
    s.synchronize()
    assert torch.equal(c, d)


@gpu
def test_direct_call_is_captured_in_a_cuda_graph():
    # Capture fails for any launch that is not on the capturing stream: this checks the call uses torch's.
    torch = torch_or_skip()
    k = tilelab.kernel("gemm.wgmma")
    a = torch.randn(1024, 512, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(1024, 512, device="cuda", dtype=torch.bfloat16)
    k(a, b)  # compiled and loaded outside the capture
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        c = k(a, b)
    a.copy_(torch.randn_like(a))
    g.replay()
    torch.cuda.synchronize()
    assert rel_err(c, a.float() @ b.float().T) < 1e-2


@gpu
def test_direct_time_is_the_bench_time():
    torch = torch_or_skip()
    k = tilelab.kernel("gemm.wgmma")
    n = 4096
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    c = k(a, b)
    for _ in range(10):
        k(a, b, out=c)
    # Queued back to back (no synchronisation between calls), so the host's time per call overlaps the kernels
    # and the events time the kernel alone, as bench's do.
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(50)]
    for start, stop in events:
        start.record()
        k(a, b, out=c)
        stop.record()
    torch.cuda.synchronize()
    times = [start.elapsed_time(stop) for start, stop in events]
    direct = sorted(times)[len(times) // 2]
    bench = k.run({"M": n, "N": n, "K": n}, rep=50)["median_ms"]
    print(f"gemm.wgmma {n}^3: direct call {direct:.4f} ms, run() {bench:.4f} ms")
    assert 0.9 < direct / bench < 1.1


@gpu
def test_run_bench_and_the_store():
    k = tilelab.kernel("gemm.wgmma")
    with tempfile.TemporaryDirectory() as d:
        tilelab.configure(db=os.path.join(d, "r.db"))
        try:
            r = k.run({"M": 1024, "N": 1024, "K": 1024}, timeline=True)
            assert r["passed"] and r["tflops"] > 0 and r["record"]["kernel"] == "gemm.wgmma"
            assert r["timeline"].events > 0 and not r["timeline"].model
            rec = k.bench({"M": 1024, "N": 1024, "K": 1024}, baseline="cublas")
            assert rec["baseline"]["name"] == "cublas"
            rows = tilelab.results.query(kernel="gemm.wgmma")
            assert len(rows) == 1 and rows[0]["status"] == "passed"
            pts = tilelab.roofline([r])["points"]
            assert len(pts) == 1 and pts[0]["efficiency"] > 0
        finally:
            tilelab.configure()


@gpu
def test_a_fault_stays_in_the_worker():
    torch = torch_or_skip()
    try:
        tilelab.kernel("test.oob").run()
        raise AssertionError("test.oob did not fault")
    except tilelab.FaultError as e:
        assert "fault" in str(e)
    x = torch.randn(1024, device="cuda")  # this process's context is intact
    assert torch.equal(tilelab.kernel("copy")(x), x)


def main():
    if not tilelab.info()["devices"]:
        print("SKIPPED: no GPU: " + tilelab.info().get("why_no_device", ""))
        return 0
    failed = 0
    for name, fn in sorted(globals().items()):
        if name.startswith("test_") and callable(fn):
            try:
                fn()
                print("PASS", name)
            except Exception as e:  # report every test, then fail
                failed += 1
                print("FAIL", name, type(e).__name__, e)
    print(f"{failed} failed" if failed else "gpu python ok")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
