import json

import pytest

from trainprof import Monitor
from trainprof.backends.fake import FakeBackend


def test_monitor_gives_hand_computable_metrics(tmp_path):
    # Two steps of 2 s each; 1 s of it forward. Fake H100: peak 989.4 bf16.
    times = [0.0, 0.0, 1.0, 2.0, 2.0, 2.0, 3.0, 4.0]
    mon = Monitor(FakeBackend(times, name="NVIDIA H100 80GB HBM3"), dtype="bf16",
                  tokens_per_step=1000, flops_per_step=989.4e12, warmup_steps=0)
    for loss in (4.0, 3.0):
        with mon.step() as s:
            with s.phase("forward"):
                pass
            s.loss = loss
    summ = mon.summary()
    assert summ.step_time_s == 2.0 and summ.forward_s == 1.0 and summ.other_s == 1.0
    assert summ.tokens_per_s == 500.0
    assert summ.mfu == pytest.approx(0.5)  # 989.4 TFLOP per 2 s on a 989.4 TFLOP/s peak
    rec = mon.save(str(tmp_path / "run.json"))
    data = json.loads((tmp_path / "run.json").read_text())
    assert data["schema"] == "trainprof.run/1"
    assert data["summary"]["mfu"] == pytest.approx(0.5) and rec.summary.loss_last == 3.0
    assert [s["loss"] for s in data["steps"]] == [4.0, 3.0]
    # diagnosed from the record as `trainprof run` does: the forward is 1 s of the 2 s step, so the
    # device is busy 50% (< 70%) and waits for the other 1 s, host work (seed 002's flowchart)
    chart = data["flowchart"]
    assert chart["branch"] == "host overhead" and [t["value"] for t in chart["path"]] == [50.0, 50.0]
    assert [f["id"] for f in data["findings"]] == [f.id for f in rec.findings] and "small_batch" in rec.findings[0].id


def test_a_failing_diagnosis_still_saves_the_record_with_a_warning(tmp_path, monkeypatch):
    """Monitor.save runs in the user's program (the HF/Lightning callbacks): a rule that raises
    must not end their training, and the record says it was not diagnosed."""
    from trainprof.diagnose import engine

    def broken(rec):
        raise KeyError("a rule's bug")

    monkeypatch.setattr(engine, "diagnose_run", broken)
    mon = Monitor(FakeBackend([0.0, 0.0, 1.0, 2.0], name="NVIDIA H100 80GB HBM3"), dtype="bf16",
                  tokens_per_step=1000, flops_per_step=1e12, warmup_steps=0)
    with mon.step() as s:
        with s.phase("forward"):
            pass
    rec = mon.save(str(tmp_path / "run.json"))
    data = json.loads((tmp_path / "run.json").read_text())
    assert data["findings"] == [] and "flowchart" not in data
    assert data["warnings"][-1] == "not diagnosed: KeyError: \"a rule's bug\"" == rec.warnings[-1]


def test_monitor_requires_tokens_and_flops():
    mon = Monitor(FakeBackend([0.0] * 4, name="NVIDIA H100 80GB HBM3"), dtype="bf16")
    with pytest.raises(ValueError, match="tokens"):
        with mon.step():
            pass
    with pytest.raises(ValueError, match="FLOPs"):
        mon.summary()


def test_a_failing_step_is_not_recorded():
    mon = Monitor(FakeBackend([0.0] * 6, name="x"), tokens_per_step=1, flops_per_step=1)
    with pytest.raises(KeyError):
        with mon.step():
            raise KeyError("boom")
    assert mon.steps == []
    with mon.step():  # the timer is usable again
        pass
    assert len(mon.steps) == 1


def test_steps_and_phases_are_nvtx_ranges_in_order():
    backend = FakeBackend([0.0] * 12, name="x")
    mon = Monitor(backend, tokens_per_step=1, flops_per_step=1)
    with mon.step() as s:
        with s.phase("data"):
            pass
        with s.phase("forward"):
            pass
    assert backend.ranges == [("push", "trainprof.step"), ("push", "trainprof.data"), ("pop", "trainprof.data"),
                              ("push", "trainprof.forward"), ("pop", "trainprof.forward"),
                              ("pop", "trainprof.step")]


def test_nvtx_ranges_are_no_ops_on_cpu():
    from trainprof.backends.cpu import CpuBackend

    mon = Monitor(CpuBackend(), tokens_per_step=1, flops_per_step=1)
    with mon.step() as s:  # must not touch torch.cuda.nvtx (no CUDA build here)
        with s.phase("backward"):
            pass
    assert len(mon.steps) == 1
