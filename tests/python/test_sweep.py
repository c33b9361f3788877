# Sweeps and the results store from Python: the CLI's engine, ids and rows; filters and callbacks in Python.
import json
import subprocess

import pytest

import tilelab

SPACE = {"vec": [1, 8], "threads": [128]}
PROBLEM = {"n": 65536, "dtype": "f32"}


def test_sweep_is_the_cli_sweep(cli, store, tmp_path):
    r = tilelab.sweep("copy", SPACE, problem=PROBLEM, progress=False)
    assert len(r) == 2 and r.summary["total"] == 2
    skipped = [p for p in r if p["status"] == "skipped"]
    assert len(skipped) == 1 and skipped[0]["config"]["vec"] == 8 and "the widest is 16" in skipped[0]["reason"]
    rows = tilelab.results.query()
    db = str(tmp_path / "cli.db")
    subprocess.run([cli, "sweep", "copy", "--problem", "n=65536,dtype=f32", "--space", "vec=1,8;threads=128",
                    "--db", db, "--plain"], check=True, capture_output=True)
    cli_rows = json.loads(subprocess.run([cli, "results", "--db", db, "--json"], capture_output=True, text=True,
                                         check=True).stdout)
    assert r.id == cli_rows[-1]["sweep_id"] == rows[-1]["sweep_id"]
    key = ("kernel", "status", "point_key", "failure_message", "config", "problem")
    assert [{k: x[k] for k in key} for x in rows] == [{k: x[k] for k in key} for x in cli_rows]
    if not tilelab.info()["devices"]:
        assert [p["status"] for p in r] == ["not_run", "skipped"]
        assert r[0]["resources"]["registers"] > 0


def test_sweep_filter_and_callbacks(store):
    seen = []
    r = tilelab.sweep("copy", {"vec": [1, 2, 4]}, problem=PROBLEM, store=False, progress=False,
                      filter=lambda config, problem: (config["vec"] != 2, "no twos"),
                      on_result=lambda point, done, total: seen.append((point["config"]["vec"], done, total)))
    assert [p["status"] for p in r if p["config"]["vec"] == 2] == ["filtered"]
    assert [p["reason"] for p in r if p["config"]["vec"] == 2] == ["no twos"]
    assert seen and seen[-1][1] == seen[-1][2] == 3
    assert tilelab.results.query() == []


def test_a_callback_error_stops_the_sweep(store):
    def boom(point, done, total):
        raise RuntimeError("from the callback")

    with pytest.raises(RuntimeError, match="from the callback"):
        tilelab.sweep("copy", {"vec": [1, 2]}, problem=PROBLEM, store=False, progress=False, on_result=boom)


def test_sweep_errors():
    with pytest.raises(tilelab.NotFoundError):
        tilelab.sweep("nope", {"vec": [1]}, progress=False, store=False)
    with pytest.raises(tilelab.InvalidArgumentError, match="problem or problems"):
        tilelab.sweep("copy", {"vec": [1]}, problem={}, problems=[{}])


def test_sweep_gpus(store):
    r = tilelab.sweep("copy", {"vec": [1, 2]}, problem=PROBLEM, store=False, progress=False, gpus="all")
    assert len(r) == 2
    here = len(tilelab.info()["devices"])
    with pytest.raises(tilelab.InvalidArgumentError, match=f"gpus: there is no GPU {here}: this machine has"):
        tilelab.sweep("copy", {"vec": [1]}, store=False, progress=False, gpus=[here])
    with pytest.raises(tilelab.InvalidArgumentError, match="gpus: 'x' is not a GPU index"):
        tilelab.sweep("copy", {"vec": [1]}, store=False, progress=False, gpus="x")
    with pytest.raises(tilelab.InvalidArgumentError, match="gpus: no GPU given"):
        tilelab.sweep("copy", {"vec": [1]}, store=False, progress=False, gpus="")
    for bad in ([], [0.5], True, {0: 1}):
        with pytest.raises(tilelab.InvalidArgumentError, match="gpus: expected \"all\""):
            tilelab.sweep("copy", {"vec": [1]}, store=False, progress=False, gpus=bad)


def test_results_compare_needs_stored_runs(store):
    with pytest.raises(tilelab.NotFoundError, match="no run 1"):
        tilelab.results.compare(1, 2)
    assert tilelab.results.path() == str(store)
