# The direct call's checks, which need no GPU: argument binding, the problem inferred from shapes and dtypes,
# and a message naming each kind of mistake (NumPy arrays stand in for CUDA tensors until the device check).
import numpy as np
import pytest

import tilelab

gemm = tilelab.kernel("gemm.wgmma")


def f16(*shape):
    return np.zeros(shape, np.float16)


def test_tensors_list_the_call():
    t = gemm.tensors({"M": 256, "N": 128, "K": 64})
    assert [(x["name"], x["role"], x["shape"]) for x in t] == [("A", "in", (256, 64)), ("B", "in", (128, 64)),
                                                                ("C", "out", (256, 128))]


def test_problem_from_the_tensors():
    p = gemm.infer_problem(f16(256, 512), f16(128, 512))
    assert (p["M"], p["N"], p["K"], p["dtype"]) == (256, 128, 512, "f16")
    assert gemm.infer_problem(B=f16(128, 512), A=f16(256, 512))["N"] == 128
    # What the shapes cannot say comes from problem=: B stored K x N.
    p = gemm.infer_problem(f16(256, 512), f16(512, 128), problem={"trans_B": False})
    assert (p["M"], p["N"], p["K"]) == (256, 128, 512)
    p = tilelab.kernel("rmsnorm").infer_problem(np.zeros((64, 1000), np.float32))
    assert (p["rows"], p["cols"], p["dtype"]) == (64, 1000, "f32")
    # GQA with a head size and a dtype that are not the defaults: each found although neither matches alone.
    q, kv = f16(4, 512, 8, 64), f16(4, 1024, 2, 64)
    p = tilelab.kernel("attn.fwd.wgmma").infer_problem(q, kv, kv)
    assert {k: p[k] for k in ("batch", "seq_q", "seq_k", "heads", "heads_kv", "dim", "dtype")} == \
        {"batch": 4, "seq_q": 512, "seq_k": 1024, "heads": 8, "heads_kv": 2, "dim": 64, "dtype": "f16"}


@pytest.mark.parametrize("b, message", [
    (f16(128, 64), "tensor 'B' has shape [128, 64]; it must be f16 [128, 512]"),
    (np.zeros((128, 512), np.float32), "tensor 'B' is float32; it must be f16 [128, 512]"),
    (f16(512, 128).T, "tensor 'B' is not contiguous"),
    (f16(128, 512), "tensor 'A' is on the CPU: the direct call runs on CUDA tensors"),
])
def test_each_mistake_is_named(b, message):
    with pytest.raises(tilelab.InvalidArgumentError, match=message.replace("[", r"\[").replace("]", r"\]")):
        gemm(f16(256, 512), b)


def test_binding_mistakes():
    with pytest.raises(tilelab.InvalidArgumentError, match="3 tensors given by position; it takes 2 \\(A, B\\)"):
        gemm(f16(8, 8), f16(8, 8), f16(8, 8))
    with pytest.raises(tilelab.InvalidArgumentError, match="it has no tensor 'X' \\(its tensors: A, B, C\\)"):
        gemm(f16(256, 512), X=f16(8, 8))
    with pytest.raises(tilelab.InvalidArgumentError, match="given twice"):
        gemm(f16(256, 512), A=f16(256, 512))
    with pytest.raises(tilelab.InvalidArgumentError, match="missing tensor 'B'"):
        gemm(f16(256, 512))
    with pytest.raises(TypeError, match="tensor 'B' is a list, not a DLPack tensor"):
        gemm(f16(256, 512), [1, 2])


def test_a_config_or_problem_that_cannot_run():
    with pytest.raises(tilelab.UnsupportedError, match="K=30 is not a multiple of 8.*from the tensors: K=30"):
        gemm(f16(100, 30), f16(64, 30))
    with pytest.raises(tilelab.InvalidArgumentError, match="block_M=65"):
        gemm(f16(256, 512), f16(128, 512), config={"block_M": 65})
