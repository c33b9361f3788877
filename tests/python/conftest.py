# pytest set-up of the tilelab package's tests: the CLI to compare with, the GPU marker, the shared test data.
import os
import pathlib
import subprocess

import pytest

import tilelab

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _why_no_gpu():
    info = tilelab.info()
    return "" if info["devices"] else info.get("why_no_device", "no GPU")


WHY_NO_GPU = _why_no_gpu()


def pytest_collection_modifyitems(config, items):
    if not WHY_NO_GPU:
        return
    skip = pytest.mark.skip(reason="no GPU: " + WHY_NO_GPU)
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def cli():
    """The tilelab executable (the worker the package runs), for comparing messages and outputs with the CLI."""
    exe = os.environ.get("TILELAB_CLI") or tilelab._worker_path()
    assert exe and os.access(exe, os.X_OK), "no tilelab executable (set TILELAB_CLI)"
    return exe


@pytest.fixture(scope="session")
def cli_error(cli):
    """The message `tilelab ARGS` prints after 'tilelab: error: ' (it must fail)."""

    def run(*args):
        r = subprocess.run([cli, *args], capture_output=True, text=True)
        assert r.returncode != 0, f"tilelab {' '.join(args)} did not fail"
        prefix = "tilelab: error: "
        assert r.stderr.startswith(prefix), r.stderr
        return r.stderr[len(prefix):].rstrip("\n")

    return run


@pytest.fixture(scope="session")
def roofline_data():
    """Run records and a device profile of made-up ceilings (the CLI's roofline tests use the same)."""
    return ROOT / "tests" / "cli" / "roofline"


@pytest.fixture()
def store(tmp_path):
    """A fresh results store for the test, and the default one back afterwards."""
    tilelab.configure(db=str(tmp_path / "results.db"))
    yield tmp_path / "results.db"
    tilelab.configure()
