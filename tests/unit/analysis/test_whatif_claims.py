"""What a projection may claim (analysis/graph/whatif_bounds.claims), fed doctored projections
of a real multi-step trace: each of its three checks fires, and `project` then holds the
headline and every per-step row to the floor and the time removed (no row contradicts it)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from trainprof.analysis.graph import whatif
from trainprof.analysis.graph.depgraph import build_graph
from trainprof.analysis.graph.path_steps import step_bounds, step_work, windows
from trainprof.analysis.graph.whatif_bounds import claims
from trainprof.analysis.timeline.context import Context
from trainprof.trace import read_trace

DDP = Path(__file__).parents[2] / "data" / "traces" / "real" / "hta_ddp_2rank_nccl_a100" / "nccl_data.json.gz"


@pytest.fixture(scope="module")
def setup():
    ctx = Context.build(read_trace(DDP))
    g = build_graph(ctx)
    owned = step_work(ctx)
    bounds = step_bounds(ctx, g, owned)
    before = windows(g.t_us, bounds)
    pick = list(range(1, len(bounds)))
    steady = [(owned[i], before[i][1], before[i][2], bounds[i].cpu_start) for i in pick]
    measured = float(np.mean([g.t_us[before[i][2]] - g.t_us[before[i][1]] for i in pick]))
    w1, _ = whatif.edited_intrinsic(ctx, g, [])
    return ctx, g, w1, steady, measured


def test_an_honest_projection_holds(setup):
    ctx, g, w1, steady, measured = setup
    c = claims(ctx, g, w1, g.t_us, steady, measured, measured)  # no edit: nothing removed, nothing gained
    assert c["violations"] == [] and c["removed_us"] == 0.0 and c["bound_pct"] == 0.0
    assert 0 < c["floor_us"] <= measured


def test_each_check_fires(setup):
    ctx, g, w1, steady, measured = setup
    # a step projected at 0 µs is below the busiest stream's work, and gains what nothing removed
    c = claims(ctx, g, w1, g.t_us, steady, measured, 0.0)
    assert any("below the busiest stream" in v for v in c["violations"]), c
    assert any("above the 0.000 µs removed" in v for v in c["violations"]), c
    # the last step's end moved 1 ms earlier with nothing removed before it
    t_new = g.t_us.copy()
    t_new[steady[-1][2]] -= 1000.0
    c = claims(ctx, g, w1, t_new, steady, measured, measured)
    assert any("more than was removed before it" in v for v in c["violations"]), c


def test_a_violating_projection_is_held_to_its_claims_rows_included(setup, monkeypatch):
    ctx, g, *_ = setup
    half = [whatif.Edit("scale", ".", 0.5)]  # every op and kernel at half its time: ~222 -> ~118 ms a step
    honest = whatif.project(ctx, g, half)
    assert honest.violations == [] and honest.projected_step_us < 0.6 * honest.measured_step_us
    # planted claims: a floor of 150 ms and 80 ms removed per step, as if the model had gone past them
    planted = {"floor_us": 150_000.0, "removed_us": 80_000.0, "bound_pct": 36.0, "violations": ["planted"]}
    monkeypatch.setattr(whatif, "claims", lambda *a, **k: planted)
    held = whatif.project(ctx, g, half)
    # headline: max(118 ms, 150 ms, 222 − 80 = 142 ms) = 150 ms
    assert held.projected_step_us == 150_000.0
    # each steady row: max(its projection ~117-119 ms, 150 ms, its measured − 80 ms ~140-145 ms)
    # = 150 ms; the first step, which the edit does not touch (issue #39), stays as measured
    assert held.steps[0].projected_us == held.steps[0].measured_us
    assert [r.projected_us for r in held.steps[1:]] == [150_000.0] * (len(honest.steps) - 1)
    assert [r.measured_us for r in held.steps] == [r.measured_us for r in honest.steps]
