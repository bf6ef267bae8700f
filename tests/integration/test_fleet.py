"""Jobs of many ranks: one unreadable rank costs that rank, not the job; the Ray engine on a
real local cluster gives exactly the local engine's result."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from trainprof.cli import main

REPO = Path(__file__).resolve().parents[2]
RANKS = REPO / "tests" / "data" / "traces" / "real" / "hta_recsys_128rank_nccl_a100"  # 2 sampled ranks, 120 KB each
# Fixed roofs: a GPU trace without a device name would otherwise get roofs measured on this CPU.
ROOFS = ["--peak-tflops", "312", "--peak-bandwidth-gbs", "2039"]


def _job(tmp_path: Path, bad: int = 1) -> Path:
    d = tmp_path / "job"
    d.mkdir()
    for f in sorted(RANKS.glob("*.json.gz")):
        shutil.copy(f, d / f.name)
    for i in range(bad):
        (d / f"sampled_rank-{90 + i}.json").write_text('{"traceEvents": [{"ph": "X", ')  # cut short
    return d


def test_one_unreadable_rank_is_named_and_the_job_is_written(tmp_path, capsys):
    d = _job(tmp_path)
    out = tmp_path / "out"
    assert main(["analyze", str(d), "--out", str(out), "--jobs", "2", *ROOFS]) == 0
    err = capsys.readouterr().err
    bad = str(d / "sampled_rank-90.json")
    assert f"skipped an unreadable trace: {bad}: invalid JSON" in err
    doc = json.loads((out / "analysis.json").read_text())
    assert [r["rank"] for r in doc["ranks"]] == [0, 1]  # both readable ranks analysed
    assert doc["multi_rank"] is not None
    assert len(doc["unreadable"]) == 1 and doc["unreadable"][0]["file"] == bad
    assert doc["unreadable"][0]["error"].startswith(f"{bad}: invalid JSON")
    html = (out / "report.html").read_text()
    assert 'id="unreadable"' in html and "sampled_rank-90.json" in html
    md = (out / "report.md").read_text()
    assert "**1 unreadable trace(s), left out of everything below:**" in md and "sampled_rank-90.json" in md


def test_no_readable_rank_exits_2_and_writes_nothing(tmp_path, capsys):
    d = tmp_path / "job"
    d.mkdir()
    for i in range(3):
        (d / f"r{i}.json").write_text("[{")
    out = tmp_path / "out"
    assert main(["analyze", str(d), "--out", str(out), "--jobs", "2"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("trainprof: error: no trace could be read: ")
    assert "(and 2 more unreadable traces)" in err[0]
    assert not out.exists()


def test_glob_and_memory_url_sources_analyse_like_the_folder(tmp_path, capsys):
    import fsspec

    d = _job(tmp_path, bad=0)
    assert main(["analyze", str(d), "--json", "--jobs", "1", *ROOFS]) == 0
    by_folder = json.loads(capsys.readouterr().out)
    assert main(["analyze", str(d / "sampled_rank-*.json.gz"), "--json", "--jobs", "1", *ROOFS]) == 0
    assert json.loads(capsys.readouterr().out) == by_folder
    fs = fsspec.filesystem("memory")
    for f in d.iterdir():
        fs.pipe(f"/bucket/job/{f.name}", f.read_bytes())
    try:
        # memory:// lives in this process: --jobs 1 keeps the workers here
        assert main(["analyze", "memory://bucket/job/", "--json", "--jobs", "1", *ROOFS]) == 0
    finally:
        fs.rm("/bucket", recursive=True)
    by_url = json.loads(capsys.readouterr().out)
    assert [r["file"] for r in by_url["ranks"]] == [f"memory:///bucket/job/{f.name}" for f in sorted(d.iterdir())]
    for r in by_url["ranks"] + by_folder["ranks"]:
        r.pop("file")
    assert by_url == by_folder


def test_ray_address_without_ray_engine_is_a_usage_error(tmp_path, capsys):
    assert main(["analyze", str(RANKS), "--ray-address", "auto"]) == 2
    assert "engine.ray_address (--ray-address) needs --engine ray" in capsys.readouterr().err


@pytest.mark.slow  # starts a local Ray cluster
def test_ray_engine_on_a_local_cluster_equals_the_local_engine(tmp_path, capsys):
    pytest.importorskip("ray", reason="the [cluster] extra (ray) is not installed")
    d = _job(tmp_path)  # one unreadable rank too: errors travel back from Ray tasks as data
    assert main(["analyze", str(d), "--json", "--jobs", "2", *ROOFS]) == 0
    local = capsys.readouterr().out
    # A real Ray instance on 127.0.0.1 with 2 CPUs, started and stopped by the command.
    assert main(["analyze", str(d), "--json", "--jobs", "2", "--engine", "ray", *ROOFS]) == 0
    ray_out = capsys.readouterr().out
    assert ray_out == local  # byte for byte
    doc = json.loads(ray_out)
    assert len(doc["ranks"]) == 2 and len(doc["unreadable"]) == 1
