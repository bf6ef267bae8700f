"""report.html's loss and tokens/s chart: its data is run.json's steps, unchanged but rounded."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec

from trainprof.recordtypes.run import load_run
from trainprof.report import charts

PATH = Path(__file__).resolve().parents[2] / "data" / "reports" / "cpu_run" / "run.json"
RUN = json.loads(PATH.read_text())  # the file as written, to check the chart against
REC = load_run(PATH)  # what the chart reads


def _layers(spec: dict) -> tuple[list[dict], list[dict], list[dict]]:
    loss, thr = spec["vconcat"]
    return loss["layer"][0]["data"]["values"], loss["layer"][1]["data"]["values"], thr["data"]["values"]


def test_every_step_loss_and_tokens_per_second_and_the_validation_point():
    train, val, tps = _layers(charts.training([("run", REC)]))
    steps = RUN["steps"]
    assert [r["step"] for r in train] == [s["step"] for s in steps]
    assert [r["loss"] for r in train] == [charts._r(s["loss"], 5) for s in steps]
    # tokens/s = tokens / step time, per step: e.g. step 0 of the record
    s0 = steps[0]
    assert tps[0]["tokens/s"] == charts._r(s0["tokens"] / s0["step_time_s"])
    assert [r["warm-up"] for r in tps] == [i < RUN["summary"]["warmup_steps"] for i in range(len(steps))]
    assert val == [{"step": steps[-1]["step"], "series": "run validation", "loss": charts._r(RUN["summary"]["val_loss"], 5)}]


def test_two_runs_are_two_series():
    train, val, tps = _layers(charts.training([("baseline", REC), ("optimised", REC)]))
    assert {r["series"] for r in train} == {"baseline training", "optimised training"}
    assert {r["run"] for r in tps} == {"baseline", "optimised"}
    assert len(val) == 2


def test_no_steps_no_chart():
    assert charts.training([("run", msgspec.structs.replace(REC, steps=[]))]) is None
