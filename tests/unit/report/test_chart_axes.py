"""report.html's charts: axes from the data, point labels that meet no other (the browser test
measures the drawn text; these check the specs and the placement before any drawing)."""

from __future__ import annotations

import itertools
import json

import msgspec

from report_fixtures import DATA

from trainprof.recordtypes.analysis import Analysis, IdleBreakdown, Temporal
from trainprof.recordtypes.run import load_run
from trainprof.report import charts
from trainprof.report.placement import place, text_box_size


def _x_scales(spec: dict) -> list[dict]:
    return [v["encoding"]["x"]["scale"] for v in spec["vconcat"]]


def test_step_axis_runs_over_the_steps():
    """Steps 0..3 drawn as bars 0.8 wide: the axis is [-0.4, 3.4], not rounded out to [-5, 5]."""
    run = json.loads((DATA / "cpu_run" / "run.json").read_text())
    rec = load_run(DATA / "cpu_run" / "run.json")
    detail, strip = _x_scales(charts.step_split(rec.steps, rec.summary.warmup_steps))
    assert detail["nice"] is False and detail["zero"] is False
    assert strip["domain"] == [-0.4, len(run["steps"]) - 1 + 0.4] and strip["nice"] is False


def test_idle_and_temporal_axes_run_to_their_whole():
    """The DDP trace's numbers: 503.1 ms idle over the whole trace (488.3 + 12.5 + 2.2),
    a 435.6 ms HTA window: each axis ends at its whole, so a bar reads as its share of it."""
    ib = IdleBreakdown(host_sync_us=12_484.8, host_launch_us=488_328.7, other_us=2_237.5, idle_us=503_051.0,
                       gaps=3480, span_us=660_551.0, host_sync_pct=2.48, host_launch_pct=97.07, other_pct=0.44)
    spec = charts.idle(ib)
    enc = spec["layer"][0]["encoding"]["x"]
    assert enc["scale"] == {"domain": [0, 503.1], "nice": False}
    assert [r["label"] for r in spec["data"]["values"]] == ["host sync", "host launching kernels", "other"]
    assert spec["data"]["values"][1]["text"] == "488.3 ms (97.1%)"  # the figures' one format
    tb = Temporal(span_us=435_587.6, compute_us=76_935.8, idle_us=336_419.7, compute_pct=17.66, idle_pct=77.23)
    t = charts.temporal(tb)
    assert t["layer"][0]["encoding"]["x"]["scale"]["domain"] == [0, 435.6]


def test_placed_labels_never_meet_and_the_biggest_come_first():
    # ten points on one spot (a GEMM cluster): the first gets a place, the others no room
    clump = [(300.0, 150.0, 6.0)] * 10
    texts = [f"{i} aten::mm" for i in range(1, 11)]
    boxes = place(clump, texts, 760, 360, 10, 10)
    got = [b for b in boxes if b is not None]
    assert boxes[0] is not None and 1 <= len(got) < 10
    assert not any(a.meets(b) for a, b in itertools.combinations(got, 2))
    # spread points all get a label, at most `limit`, each inside the plot; deterministic
    spread = [(60.0 + 70 * i, 40.0 + 30 * i, 5.0) for i in range(10)]
    boxes = place(spread, texts, 760, 360, 10, 8)
    assert sum(b is not None for b in boxes) == 8 and boxes[8:] == [None, None]
    assert all(0 <= b.x0 and b.x1 <= 760 and 0 <= b.y0 and b.y1 <= 360 for b in boxes[:8])
    assert boxes == place(spread, texts, 760, 360, 10, 8)
    assert text_box_size("12345", 10) == (5 * 0.62 * 10 + 2.0, 12.5)


def test_roofline_labels_the_biggest_points_without_overlap():
    """The multi-rank folder's rank 0 roofline: labels are placed boxes that meet no other."""
    a = msgspec.json.decode((DATA / "multi_rank" / "analysis.json").read_bytes(), type=Analysis)
    r = a.ranks[0]
    spec = charts.roofline(r.roofline, msgspec.to_builtins(r.roofline_points), "t")  # the charts draw dicts
    layers = {tuple(layer["mark"].values())[0] if isinstance(layer["mark"], dict) else layer["mark"]: layer
              for layer in spec["layer"]}
    labels = layers["text"]["data"]["values"]
    assert 1 <= len(labels) <= charts.ROOF_LABELS and spec["width"] == charts.ROOF_W
    assert all(v["label"].split(" ", 1)[0].isdigit() for v in labels)
    assert layers["point"]["encoding"]["x"]["scale"]["nice"] is False
