# The package against the CLI: kernels and schemas, values, can_implement, compile (no GPU needed), errors.
import subprocess

import pytest

import tilelab


def test_version_is_the_cli_version(cli):
    out = subprocess.run([cli, "--version"], capture_output=True, text=True, check=True).stdout
    assert tilelab.__version__ in out


def test_kernels_are_the_cli_kernels(cli):
    import json
    listed = json.loads(subprocess.run([cli, "kernels", "--json"], capture_output=True, text=True, check=True).stdout)
    names = [k["name"] for k in tilelab.kernels()]
    assert names == [k["name"] for k in listed]
    assert names == sorted(names) and "gemm.wgmma" in names
    assert "test.oob" not in names and "test.oob" in [k["name"] for k in tilelab.kernels(all=True)]


def test_schema_has_every_parameter_with_a_default():
    k = tilelab.kernel("gemm.wgmma")
    s = k.schema()
    assert (k.name, k.family) == ("gemm.wgmma", "gemm")
    for section in ("problem", "config"):
        assert s[section], section
        for p in s[section]:
            assert p["name"] and "default" in p and p["help"]
    assert {p["name"] for p in s["config"]} == set(k.config())


def test_values_are_typed_and_checked():
    k = tilelab.kernel("gemm.wgmma")
    c = k.config(block_N=128)
    assert c["block_N"] == 128 and isinstance(c["block_M"], int)
    p = k.problem({"M": 256}, dtype="f16")
    assert p["M"] == 256 and p["dtype"] == "f16" and p["trans_B"] is True
    with pytest.raises(tilelab.InvalidArgumentError, match="unknown gemm.wgmma config key 'blockN' \\(valid: block_M"):
        k.config(blockN=128)
    with pytest.raises(TypeError):
        k.config(block_N=[128])


def test_can_implement_says_why_not():
    k = tilelab.kernel("gemm.wgmma")
    assert k.can_implement() == (True, None)
    ok, why = k.can_implement({"K": 30})
    assert not ok and "K=30 is not a multiple of 8" in why


def test_compile_needs_no_gpu():
    c = tilelab.kernel("copy").compile({"vec": 4}, {"n": 4096, "dtype": "f32"})
    assert c["registers"] > 0 and c["spills"] == 0
    assert c["arch"].startswith("sm_")
    assert ".entry " + c["lowered_name"] in c["ptx"]
    assert "copy" in c["name_expression"]


def test_errors_carry_the_cli_messages(cli_error):
    with pytest.raises(tilelab.NotFoundError) as e:
        tilelab.kernel("gemm.wgma")
    assert str(e.value) == cli_error("compile", "gemm.wgma")
    assert e.value.code == "not_found" and isinstance(e.value, tilelab.Error) and "'gemm.wgmma'" in str(e.value)
    with pytest.raises(tilelab.InvalidArgumentError) as e:
        tilelab.kernel("gemm.wgmma").compile({"block_M": 65})
    assert str(e.value) == cli_error("compile", "gemm.wgmma", "--config", "block_M=65")
    with pytest.raises(tilelab.UnsupportedError) as e:
        tilelab.kernel("gemm.wgmma").compile(problem={"K": 30})
    assert str(e.value) == cli_error("compile", "gemm.wgmma", "--problem", "K=30")
    with pytest.raises(tilelab.ParseError) as e:
        tilelab.layout("(8,4):(4,")
    assert str(e.value) == cli_error("layout", "(8,4):(4,", "--format", "txt")


def test_timer_refusals_name_the_timers():
    k = tilelab.kernel("copy")
    with pytest.raises(tilelab.InvalidArgumentError, match=r"^run: timer: unknown timer 'nvtx' \(valid: events, cupti, graph\)$"):
        k.run({"n": 1024}, timer="nvtx")
    with pytest.raises(tilelab.InvalidArgumentError, match="^run: graph_launches is set, but the timer is cupti"):
        k.bench({"n": 1024}, timer="cupti", graph_launches=3)
    with pytest.raises(tilelab.InvalidArgumentError, match=r"^run: graph_launches: 20000 is out of range \(expected 1 to 10000"):
        k.run({"n": 1024}, timer="graph", graph_launches=20000)
    with pytest.raises(tilelab.InvalidArgumentError, match="^sweep: timer: unknown timer 'x'"):
        tilelab.sweep("copy", {"vec": [1]}, timer="x", store=False)


@pytest.mark.skipif(bool(tilelab.info()["devices"]), reason="checks the message without a GPU")
def test_run_without_a_gpu_says_why(cli_error):
    with pytest.raises(tilelab.NoDeviceError) as e:
        tilelab.kernel("copy").run({"n": 1024})
    assert str(e.value) == cli_error("bench", "copy", "--problem", "n=1024", "--no-store")
    with pytest.raises(tilelab.NoDeviceError):
        tilelab.device()
