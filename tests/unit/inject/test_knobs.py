"""A tune trial's knobs, applied by the agent in this process on a real loop: what each touched
(and where), what it replaced, and that everything is put back when the window ends; none
travels, and nothing is patched, when no knob is set (`trainprof profile`)."""

from __future__ import annotations

import atexit
import gc
import json
import os

import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

from trainprof.inject import package_dir
from trainprof.inject.agent import Agent
from trainprof.inject.options import AgentConfig, ProfileOptions
from trainprof.options import MonitorOptions
from trainprof.knobs import Knobs


def _config(tmp_path, knobs: Knobs) -> AgentConfig:
    parts = tmp_path / ".parts"
    parts.mkdir(exist_ok=True)
    return AgentConfig(ProfileOptions(warmup=3, steps=2, monitor=MonitorOptions(profile_steps=0, system_interval=0),
                                      flops_per_step=1.0),  # no FlopCounterMode: not what is tested here
                       str(parts), str(package_dir()), pythonpath=os.environ["PYTHONPATH"], knobs=knobs)


@pytest.fixture
def installed(tmp_path, monkeypatch):
    """make(knobs) → an installed agent; removed (and torch's threads put back) after."""
    monkeypatch.setenv("PYTHONPATH", os.environ.get("PYTHONPATH", ""))
    threads, made = torch.get_num_threads(), []

    def make(knobs: Knobs) -> Agent:
        a = Agent(_config(tmp_path, knobs))
        a.install()
        made.append(a)
        return a

    yield make
    for a in made:
        atexit.unregister(a._at_exit)
        a.uninstall()
    torch.set_num_threads(threads)


def _part(tmp_path) -> dict:
    return json.loads((tmp_path / ".parts" / "rank0.json").read_text())["profile"]


def test_no_knob_travels_and_nothing_is_patched(tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", "")
    plain = _config(tmp_path, Knobs())
    assert "knobs" not in json.loads(plain.to_env())  # `trainprof profile`'s options, as before knobs existed
    init = DataLoader.__init__
    a = Agent(plain)
    a.install()
    try:
        assert a.knobs is None and DataLoader.__init__ is init
    finally:
        atexit.unregister(a._at_exit)
        a.uninstall()
    k = Knobs(num_workers=2, optimizer="fused", autocast="bf16")
    assert AgentConfig.from_env(_config(tmp_path, k).to_env()).knobs == k


def test_knobs_are_applied_recorded_and_put_back(installed, tmp_path):
    init, adamw_init, set_threads = DataLoader.__init__, torch.optim.AdamW.__init__, torch.set_num_threads
    before_gc = gc.get_threshold()
    a = installed(Knobs(num_workers=2, persistent_workers=True, optimizer="fused", autocast="bf16", threads=1,
                        gc_freeze=True))
    data = TensorDataset(torch.randn(8, 8), torch.randn(8, 4))
    loader = DataLoader(data, batch_size=4, num_workers=0)  # never iterated: no worker starts here
    assert (loader.num_workers, loader.persistent_workers) == (2, True)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 4))
    seen = []  # autocast at each call of the inner layer: off in step 0, on from step 1
    model[0].register_forward_hook(lambda m, i, o: seen.append(torch.is_autocast_enabled("cpu")))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, foreach=False)
    assert opt.defaults["fused"] is True
    torch.set_num_threads(2)  # the program's own call: the knob keeps 1
    assert torch.get_num_threads() == 1
    x = torch.randn(4, 8)
    for _ in range(7):
        out = model(x)
        assert out.dtype == torch.float32  # the output cast back: the loss computes as it did
        loss = out.pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert a.state == "done"
    assert seen[0] is False and all(seen[1:6])
    r = _part(tmp_path)["knobs"]
    here = os.path.relpath(__file__)
    by = {e["knob"]: e for e in r["applied"]}
    assert by["dataloader"]["set"] == {"num_workers": 2, "persistent_workers": True}
    assert by["dataloader"]["overrode"] == {"num_workers": 0} and by["dataloader"]["site"].startswith(here + ":")
    assert by["optimizer"]["set"] == {"fused": True} and by["optimizer"]["overrode"] == {"foreach": False}
    assert by["autocast"]["set"] == {"device_type": "cpu", "dtype": "torch.bfloat16"}
    assert r["threads_asked_by_program"][0]["value"] == 2 and r["forward_site"].startswith(here + ":")
    assert len(r["warmup_step_s"]) == 2 and r["not_applied"] == {}
    # put back: the patched functions, the threads the program asked for, the GC as it was
    assert DataLoader.__init__ is init and torch.optim.AdamW.__init__ is adamw_init
    assert torch.set_num_threads is set_threads and torch.get_num_threads() == 2
    assert gc.get_threshold() == before_gc and gc.get_freeze_count() == 0
    assert not model._forward_pre_hooks and len(model._forward_hooks) == 0


def test_what_cannot_be_applied_says_why(installed, tmp_path):
    installed(Knobs(autocast="fp16", optimizer="fused"))
    model = torch.nn.Linear(4, 2)
    opt = torch.optim.RMSprop(model.parameters(), lr=1e-3)  # no fused form: foreach instead
    assert opt.defaults["foreach"] is True and not opt.defaults.get("fused")
    for _ in range(7):
        loss = model(torch.ones(2, 4)).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
    r = _part(tmp_path)["knobs"]
    assert "GradScaler" in r["not_applied"]["autocast"]  # fp16 without loss scaling would underflow
    assert [e["set"] for e in r["applied"] if e["knob"] == "optimizer"] == [{"foreach": True}]


def test_an_error_of_trainprofs_own_never_reaches_the_programs_call(installed, monkeypatch, capsys):
    import trainprof.inject.knobs as knobs_mod

    a = installed(Knobs(num_workers=2, optimizer="fused"))

    def broken() -> str:
        raise RuntimeError("planted")

    monkeypatch.setattr(knobs_mod, "call_site", broken)
    loader = DataLoader(TensorDataset(torch.zeros(4, 2)), batch_size=2)  # built as the program wrote it
    assert loader.num_workers == 0 and a.state == "failed" and DataLoader.__init__ is not None
    opt = torch.optim.AdamW(torch.nn.Linear(2, 2).parameters(), foreach=False)  # the agent is off: untouched
    assert opt.defaults["foreach"] is False and not opt.defaults["fused"]
    assert "RuntimeError: planted" in capsys.readouterr().err
