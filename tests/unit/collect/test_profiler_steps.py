"""The trace's ProfilerStep#N are the program's step numbers: a run of 12 measured steps
profiles steps 12–15 (wait, warm-up, then 14 and 15 recorded), and the critical path, the
what-ifs and every report then name steps 14 and 15, not torch.profiler's own count "2, 3"
(issue #37 item 5.2)."""

from __future__ import annotations

import gzip
import json

import torch

from trainprof.collect.profiler import ProfileConfig, StepProfiler
from trainprof.jobs.analyze import analyze_paths


def _record(tmp_path, first_step: int):  # noqa: ANN001, ANN202
    path = tmp_path / "trace.json.gz"
    p = StepProfiler(ProfileConfig(active=2, record_shapes=False), "cpu", path, first_step=first_step)
    x = torch.ones(32, 32)
    with p.running():
        for _ in range(ProfileConfig(active=2).total_steps):  # wait, warm-up, 2 active
            (x @ x).sum().item()
            p.step()
    return path


def test_profiled_steps_carry_the_programs_numbers(tmp_path):
    path = _record(tmp_path, first_step=12)
    with gzip.open(path, "rt") as f:
        names = {e["name"] for e in json.load(f)["traceEvents"] if e.get("name", "").startswith("ProfilerStep#")}
    assert names == {"ProfilerStep#14", "ProfilerStep#15"}
    # what the report's critical-path table shows: analysis.json's critical_path.steps[].step
    rank = analyze_paths([str(path)], jobs=1).ranks[0]
    assert [s.step for s in rank.critical_path.steps] == [14, 15]


def test_from_step_zero_the_schedule_is_unchanged(tmp_path):
    path = _record(tmp_path, first_step=0)
    with gzip.open(path, "rt") as f:
        names = {e["name"] for e in json.load(f)["traceEvents"] if e.get("name", "").startswith("ProfilerStep#")}
    assert names == {"ProfilerStep#2", "ProfilerStep#3"}
