"""The pieces of `train` (workload/setup.py, step.py): prepare, place, one step, the schedule."""

import contextlib
import random

import pytest
import torch

from trainprof.errors import UsageError
from trainprof.hardware.peaks import PeakOverrides
from trainprof.workload.config import TrainConfig
from trainprof.workload.setup import place, prepare, process_settings
from trainprof.workload.trainer import train
from trainprof.workload.step import lr_at, make_step


def _cfg(tmp_path, **kw) -> TrainConfig:
    rng = random.Random(0)
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("".join(rng.choice("abcdefghij klmnop\n") for _ in range(20_000)))
    return TrainConfig(**{**dict(preset="tiny", device="cpu", micro_batch=2, seq_len=16, steps=3, grad_accum=2,
                                 warmup_steps=0, eval_batches=0, data=str(corpus), threads=1), **kw}).resolved()


@pytest.fixture
def session(tmp_path):
    with process_settings():  # prepare sets --threads for the process: later tests get theirs back
        s = prepare(_cfg(tmp_path), None, None, resume=False, resume_anyway=False)
        place(s, peaks=PeakOverrides(), on_step=None, monitor=None, run_dir=None, resume=False,
              extra_steps=1)
        yield s


def test_a_run_gives_the_process_its_threads_back(tmp_path):
    before = torch.get_num_threads()
    wanted = 1 if before != 1 else 2  # a thread count different from the process's
    rec = train(_cfg(tmp_path, threads=wanted, grad_accum=1, steps=1))
    assert rec.config["threads"] == wanted  # the run used it...
    assert torch.get_num_threads() == before  # ...and put the process's own back


def test_prepare_resolves_device_and_dtype(session):
    assert session.device == "cpu" and session.cfg.dtype == "fp32"  # "auto" on a CPU is fp32
    assert session.dist is None and session.journal is None  # no torchrun, no run folder
    assert session.params == session.model.num_params() > 0
    assert session.flops["model_flops_per_step"] > 0


def test_one_step_runs_the_phases_in_order(session):
    seen = []

    def phase(name):
        seen.append(name)
        return contextlib.nullcontext()

    loss = make_step(session)(0, phase)
    # grad_accum 2: two micro-batches of data → h2d → forward → backward, then one optimizer
    assert seen == ["data", "h2d", "forward", "backward"] * 2 + ["optimizer"]
    assert loss.ndim == 0 and float(loss) > 0


def test_measured_step_phases_add_up_to_the_step(session):
    step = make_step(session)
    for i in range(2):
        with session.mon.step() as st:
            st.loss = step(i, st.phase)
    for r in session.mon.steps:
        parts = r.data_s + r.h2d_s + r.forward_s + r.backward_s + r.optimizer_s + r.other_s
        assert parts == pytest.approx(r.step_time_s, rel=1e-9, abs=1e-9)
        assert r.forward_s > 0 and r.backward_s > 0 and r.tokens == 2 * 2 * 16  # grad_accum × micro × seq


def test_lr_schedule_by_hand():
    # 10 steps: warm-up max(1, 10 // 10) = 1 step, then cosine to 10% of the peak
    assert lr_at(0, 10, 1.0) == pytest.approx(1.0)  # (0 + 1) / 1
    assert lr_at(1, 10, 1.0) == pytest.approx(1.0)  # frac 0: 0.1 + 0.9 · 0.5 · (1 + cos 0)
    assert lr_at(10, 10, 1.0) == pytest.approx(0.1)  # frac 1: 0.1 + 0.9 · 0.5 · (1 + cos π)
    assert lr_at(0, 100, 1.0) == pytest.approx(0.1)  # warm-up of 10 steps: 1/10


def test_prepare_refuses_bf16_on_a_gpu_without_it(monkeypatch, tmp_path):
    from trainprof.backends import cuda_state

    class FakeCuda:
        device = "cuda:0"

        def device_name(self):
            return "Tesla V100"

    monkeypatch.setattr(cuda_state, "supports_bf16", lambda device: False)
    cfg = TrainConfig(preset="tiny", device="cuda:0", dtype="bf16", micro_batch=2, seq_len=16).resolved()
    with pytest.raises(UsageError, match="does not support bfloat16"):
        prepare(cfg, FakeCuda(), None, resume=False, resume_anyway=False)


def test_dropping_the_sessions_batches_releases_the_loader_iterator(session):
    # validate() sets s.batches = None so persistent DataLoader workers stop before
    # evaluation; the step function must not keep its own reference to the iterator
    import gc
    import weakref

    step = make_step(session)
    step(0, lambda name: contextlib.nullcontext())
    ref = weakref.ref(session.batches)
    session.batches = session.loader = None
    gc.collect()
    assert ref() is None


def test_place_takes_the_samplers_interval_from_the_monitor_options(tmp_path):
    from trainprof.options import MonitorOptions

    with process_settings():
        s = prepare(_cfg(tmp_path), None, None, resume=False, resume_anyway=False)
        place(s, peaks=PeakOverrides(), on_step=None, monitor=MonitorOptions(system_interval=0.25), run_dir=None,
              resume=False, extra_steps=0)
        assert s.mon.sampler is not None and s.mon.sampler.interval_s == 0.25  # not the 0.5 default
        s.mon.stop_system()
        place(s, peaks=PeakOverrides(), on_step=None, monitor=MonitorOptions(system_interval=0), run_dir=None,
              resume=False, extra_steps=0)
        assert s.mon.sampler is None  # 0: sampling off, as monitor=None
