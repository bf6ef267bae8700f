"""The job's Perfetto trace: every track nests (Perfetto drops what does not), kernel time
per rank survives exactly, and the added tracks are there."""

import gzip
import json
import os
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from trainprof.cli import main
from trainprof.report.perfetto import lanes
from trainprof.trace import Kind, read_trace

REAL = Path(__file__).parents[2] / "data" / "traces" / "real"


def test_lanes_by_hand():
    # [0,10] opens lane 0; [2,5] nests in it; [4,8] overlaps [2,5] without nesting -> lane 1;
    # [10,12] starts when [0,10] ends -> back on lane 0
    s, e = np.array([0.0, 2, 4, 10]), np.array([10.0, 5, 8, 12])
    assert lanes(s, e).tolist() == [0, 0, 1, 0]


def check_nesting(events: list[dict]) -> int:
    """Perfetto's rule: on one (pid, tid), complete events nest or follow. Returns tracks checked."""
    tracks = defaultdict(list)
    for ev in events:
        if ev["ph"] == "X":
            tracks[(ev["pid"], ev["tid"])].append((ev["ts"], -ev["dur"], ev["ts"] + ev["dur"]))
    for key, xs in tracks.items():
        stack: list[float] = []
        for ts, _, end in sorted(xs):
            while stack and stack[-1] <= ts + 1e-6:
                stack.pop()
            assert not stack or end <= stack[-1] + 1e-6, f"track {key}: an event overlaps without nesting"
            stack.append(end)
    return len(tracks)


@pytest.mark.parametrize("folder", ["hta_recsys_128rank_nccl_a100", "hta_ddp_2rank_nccl_a100"])
def test_job_trace_nests_and_keeps_kernel_time(tmp_path, folder, capsys):
    out = tmp_path / "job.json.gz"
    assert main(["analyze", str(REAL / folder), "--perfetto", str(out), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    events = json.loads(gzip.decompress(out.read_bytes()))["traceEvents"]
    assert check_nesting(events) > 1
    by_file = {r["file"]: r["rank"] for r in result["ranks"]}
    for f, rank in by_file.items():
        t = read_trace(f)
        k = t.kind == Kind.KERNEL
        want = float(t.dur_us[k].sum())
        got = sum(ev["dur"] for ev in events if ev["ph"] == "X" and ev["pid"] == rank and ev["cat"] in
                  {t.categories[c] for c in np.unique(t.cat_id[k])})
        assert got == pytest.approx(want, rel=1e-6)
    names = {ev["args"]["name"] for ev in events if ev["ph"] == "M" and ev["name"] == "thread_name"}
    # the idle-cause track: every kept gap of each rank, each named by its cause
    assert "idle cause" in names
    for rank_rec in result["ranks"]:
        gaps = rank_rec["idle_breakdown"]["intervals"]
        drawn = [ev for ev in events if ev["ph"] == "X" and ev["pid"] == rank_rec["rank"] and ev["cat"] == "trainprof.idle"]
        assert len(drawn) == len(gaps["dur_us"]) > 0
        assert sum(ev["dur"] for ev in drawn) == pytest.approx(sum(gaps["dur_us"]), abs=1e-3 * len(drawn))
        assert {ev["name"] for ev in drawn} == {f"GPU idle: {c}" for c in gaps["cause"]}
    if folder.startswith("hta_recsys"):
        assert "collective waits" in names  # two ranks: the waits are drawn
        # the track draws the record's waits: per rank, its slices cover wait_us (one number)
        for r in result["multi_rank"]["collectives"]["per_rank"]:
            drawn = sorted((ev["ts"], ev["ts"] + ev["dur"]) for ev in events
                           if ev["ph"] == "X" and ev["pid"] == r["rank"] and ev["cat"] == "trainprof.wait")
            covered, reach = 0.0, float("-inf")
            for a, b in drawn:  # union of the slices
                covered += max(0.0, b - max(a, reach))
                reach = max(reach, b)
            assert covered == pytest.approx(r["wait_us"], abs=1e-3 * (len(drawn) + 1))
    assert any(ev["ph"] == "i" and ev["cat"] == "trainprof" for ev in events) or not any(
        r["findings"] for r in result["ranks"])


def test_no_raw_args_reach_the_job_trace(tmp_path, capsys):
    out = tmp_path / "job.json"
    assert main(["analyze", str(REAL / "hta_ddp_2rank_nccl_a100"), "--perfetto", str(out), "--json"]) == 0
    capsys.readouterr()
    events = json.loads(out.read_text())["traceEvents"]
    # only the args trainprof writes: track names, finding texts, a collective's parsed op/group/bytes
    assert {k for ev in events for k in ev.get("args", {})} <= {"name", "sort_index", "evidence", "fix",
                                                                 "estimated_gain_pct", "op", "group", "bytes"}


def test_existing_output_is_refused_before_any_work(tmp_path, capsys):
    out = tmp_path / "job.json.gz"
    out.write_bytes(b"keep")
    assert main(["analyze", str(REAL / "hta_ddp_2rank_nccl_a100"), "--perfetto", str(out)]) == 2
    assert "--perfetto" in capsys.readouterr().err and out.read_bytes() == b"keep"
    assert main(["analyze", str(REAL / "hta_ddp_2rank_nccl_a100"), "--perfetto", str(tmp_path / "no" / "x.json")]) == 2


def _tp_query(tp: str, trace: Path, sql: str, tmp_path: Path) -> int:
    """One integer from trace_processor_shell (`--query-file`; the result is printed as CSV,
    the value on the last line)."""
    import subprocess

    q = tmp_path / "q.sql"
    q.write_text(sql)
    r = subprocess.run([tp, "--query-file", str(q), str(trace)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    return int([ln for ln in r.stdout.splitlines() if ln.strip()][-1].strip().strip('"'))


@pytest.mark.skipif(not os.environ.get("PERFETTO_TP"), reason="PERFETTO_TP (a trace_processor_shell) not set")
def test_perfetto_imports_the_job_trace_without_errors(tmp_path, capsys):
    # The `perfetto` package downloads its trace processor at run time (not possible offline);
    # with PERFETTO_TP pointing at a trace_processor_shell binary, Perfetto's own importer
    # loads the file: nothing in its `stats` table at severity error or data_loss, and every
    # complete event we wrote became a slice.
    tp = os.environ["PERFETTO_TP"]
    out = tmp_path / "job.json"
    assert main(["analyze", str(REAL / "hta_ddp_2rank_nccl_a100"), "--perfetto", str(out), "--json"]) == 0
    capsys.readouterr()
    events = json.loads(out.read_text())["traceEvents"]
    bad = _tp_query(tp, out, "select count(*) from stats where severity in ('error', 'data_loss') and value > 0;",
                    tmp_path)
    assert bad == 0
    slices = _tp_query(tp, out, "select count(*) from slice;", tmp_path)
    assert slices >= sum(ev["ph"] == "X" for ev in events)


@pytest.mark.slow  # analyze of 4 ranks in this process (--jobs 1): ~5 s on 2 cores, most of it importing torch
def test_job_view_by_mesh_coordinates_and_axis(tmp_path, capsys):
    """DP×TP 2×2 (tests/data/traces/cpu_parallel/dp2_tp2): `analyze DIR` prints the per-axis
    table, report.html shows it, and the job trace names each rank by its mesh coordinates
    and lays its collectives on a track where each is named (so coloured) by its axis:
    32 tensor-parallel all_reduces and 2 data-parallel ones per rank (README there)."""
    folder = Path(__file__).parents[2] / "data" / "traces" / "cpu_parallel" / "dp2_tp2"
    out, job = tmp_path / "a", tmp_path / "job.json.gz"
    assert main(["analyze", str(folder), "--out", str(out), "--perfetto", str(job), "--jobs", "1"]) == 0
    assert "Communication per parallelism axis" in capsys.readouterr().out
    html = (out / "report.html").read_text()
    assert "Communication per parallelism axis" in html and "<td>tp</td><td>3, 4 (name)</td>" in html
    events = json.loads(gzip.decompress(job.read_bytes()))["traceEvents"]
    names = {e["pid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "process_name"}
    assert [names[r] for r in range(4)] == ["dp0·tp0 (rank 0)", "dp0·tp1 (rank 1)", "dp1·tp0 (rank 2)",
                                            "dp1·tp1 (rank 3)"]
    comm = defaultdict(int)
    for e in events:
        if e["ph"] == "X" and e["cat"].startswith("trainprof.axis."):
            comm[(e["pid"], e["name"])] += 1
            assert e["cat"] == f"trainprof.axis.{e['name']}" and e["args"]["op"] == "all_reduce"
    assert comm == {(r, a): n for r in range(4) for a, n in (("tp", 32), ("dp", 2))}
    assert check_nesting(events) > 4
