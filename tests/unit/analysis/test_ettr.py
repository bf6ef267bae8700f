import pytest

from trainprof.analysis.run.ettr import ettr


def ev(t, kind, **kw):
    return {"t": t, "event": kind, **kw}


def test_ettr_by_hand_with_a_crash_and_a_restart():
    events = [
        ev(0, "start"), ev(3, "step", step=0, step_time_s=1.0), ev(4, "step", step=1, step_time_s=1.0),
        ev(4.5, "checkpoint_save", step=2, duration_s=0.5), ev(5.5, "step", step=2, step_time_s=1.0),
        # killed here (no end); restarted at 10
        ev(10, "start", resume=True), ev(11, "checkpoint_load", step=2, duration_s=0.5),
        ev(13, "step", step=2, step_time_s=1.0), ev(14, "step", step=3, step_time_s=1.0),
        ev(15, "eval", duration_s=1.0), ev(15, "end"),
    ]
    r = ettr(events)
    assert r["wall_s"] == 15 and r["productive_s"] == 4.0 and r["ettr"] == pytest.approx(4 / 15)
    lost = r["lost_s"]
    assert lost["redone_steps"] == 1.0  # step 2 ran twice
    assert lost["failures_downtime"] == 4.5  # 5.5 → 10
    assert lost["checkpointing"] == 1.0 and lost["evaluation"] == 1.0
    assert lost["startup"] == pytest.approx(2.0 + 1.5)  # 0→2 and 10→12 before the first steps, less the load
    assert sum(lost.values()) + r["productive_s"] == pytest.approx(r["wall_s"])
    assert r["sessions"] == 2 and r["failures"] == 1 and r["finished"] and r["steps_completed"] == 4


def test_uninterrupted_run():
    r = ettr([ev(0, "start"), ev(1, "step", step=0, step_time_s=1.0), ev(2, "step", step=1, step_time_s=1.0),
              ev(2, "end")])
    assert r["ettr"] == 1.0 and r["failures"] == 0 and r["lost_s"]["redone_steps"] == 0


def test_empty_journal():
    with pytest.raises(ValueError):
        ettr([])
