# Timelines (the model, without a GPU), the roofline and heat maps from Python, against what the CLI computes.
import json
import subprocess

import pytest

import tilelab

PROBLEM = {"M": 1024, "N": 1024, "K": 1024}


def test_model_timeline_is_the_cli_model(cli, tmp_path):
    t = tilelab.kernel("gemm.wgmma").model_timeline(PROBLEM)
    assert t.model and t.kernel == "gemm.wgmma" and t.events > 0 and t.duration_ns > 0
    subprocess.run([cli, "timeline", "gemm.wgmma", "--problem", "M=1024,N=1024,K=1024", "--model",
                    "--out", str(tmp_path / "cli.json")], check=True, capture_output=True)
    assert t.chrome_trace() == json.loads((tmp_path / "cli.json").read_text())
    assert tilelab.model_timeline("gemm.wgmma", PROBLEM).events == t.events


def test_timeline_stats_trace_and_plots(tmp_path):
    t = tilelab.kernel("gemm.wgmma").model_timeline(PROBLEM)
    stats = t.stats()
    regions = {r["name"]: r for r in stats["regions"]}
    assert "wgmma" in regions and regions["wgmma"]["count"] > 0
    path = t.trace(str(tmp_path / "t.json"))
    back = tilelab.load_timeline(path)
    assert back.events == t.events and back.kernel == t.kernel
    for view in ("gantt", "stats", "occupancy"):
        p = tilelab.plot.timeline(t, view=view)
        assert p.save(str(tmp_path / f"{view}.png"))
    assert tilelab.plot.timeline(path, t0=0, t1=1).kind == "timeline"
    with pytest.raises(tilelab.InvalidArgumentError, match="unknown view"):
        t.plot(view="pie")


def test_model_timeline_refuses_kernels_without_a_model():
    with pytest.raises(tilelab.UnsupportedError):
        tilelab.kernel("copy").model_timeline({"n": 1024})


def test_roofline_points_are_the_cli_points(cli, roofline_data, tmp_path):
    runs = [json.loads(line) for line in (roofline_data / "runs.jsonl").read_text().splitlines() if line.strip()]
    profile = str(roofline_data / "synthetic_profile.json")
    r = tilelab.roofline(runs, device_profile=profile)
    subprocess.run([cli, "roofline", "--from", str(roofline_data / "runs.jsonl"), "--device-profile", profile,
                    "--out", str(tmp_path / "r.json")], check=True, capture_output=True)
    assert r["points"] == json.loads((tmp_path / "r.json").read_text())["points"]
    assert len(r["skipped"]) == 1 and "threads=16" in r["skipped"][0]
    p = tilelab.plot.roofline(runs, device_profile=profile, color_by="block_M")
    assert p.save(str(tmp_path / "r.svg"))
    with pytest.raises(tilelab.InvalidArgumentError, match="color"):
        tilelab.plot.roofline(runs, device_profile=profile, color_by="no_such_param")


def test_heatmap_of_rows(tmp_path):
    rows = [{"kernel": "gemm.wgmma", "config": {"block_M": m, "block_N": n}, "tflops": m * n / 1000.0,
             "status": "passed"} for m in (64, 128) for n in (128, 256)]
    p = tilelab.plot.heatmap(rows, "block_M", "block_N")
    assert p.kind == "heatmap" and p.save(str(tmp_path / "h.png"))
