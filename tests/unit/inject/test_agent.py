"""The agent in this process, on a real loop: it measures the window, then takes every hook
off; an error of its own stops it, never the loop."""

from __future__ import annotations

import atexit
import json
import os

import pytest
import torch
from torch.optim import optimizer as optim_mod

from trainprof.collect.flops import count_flops
from trainprof.inject import package_dir
from trainprof.inject.agent import Agent
from trainprof.inject.options import AgentConfig, ProfileOptions
from trainprof.options import MonitorOptions
from trainprof.inject.window import Window


@pytest.fixture
def agent(tmp_path, monkeypatch):
    """An installed agent (window: warm-up 0-1, measured 2-3, no profiler); removed after."""
    monkeypatch.setenv("PYTHONPATH", os.environ.get("PYTHONPATH", ""))  # the claim puts the program's back
    parts = tmp_path / ".parts"
    parts.mkdir()
    opts = ProfileOptions(warmup=2, steps=2, monitor=MonitorOptions(profile_steps=0, system_interval=0))
    cfg = AgentConfig(opts, str(parts),
                      str(package_dir()), pythonpath=os.environ["PYTHONPATH"])
    a = Agent(cfg)
    a.install()
    yield a
    atexit.unregister(a._at_exit)
    a.uninstall()


def _train(steps: int) -> tuple[torch.nn.Module, torch.Tensor]:
    torch.manual_seed(0)
    model = torch.nn.Linear(8, 4)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(16, 8)
    for _ in range(steps):
        loss = model(x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return model, x


def test_measures_the_window_then_leaves_nothing_behind(agent, tmp_path):
    backward = agent.patched[0][2]  # torch.autograd.backward as it was
    _train(6)
    assert agent.state == "done"
    assert torch.autograd.backward is backward and not getattr(torch.autograd.backward, "__trainprof_agent__", False)
    assert not optim_mod._global_optimizer_pre_hooks and not optim_mod._global_optimizer_post_hooks
    assert not torch.nn.modules.module._global_forward_pre_hooks
    part = json.loads((tmp_path / ".parts" / "rank0.json").read_text())
    rec, p = part["record"], part["profile"]
    # steps 0-1 warm-up (1 FLOP-counted), 2-3 measured, 4 counted again (the check), then nothing
    assert [s["step"] for s in rec["steps"]] == [2, 3] and p["window_complete"] and p["steps_seen"] == 5
    assert p["flops_check_step"] == 4 and rec["flops"]["counted_steps"] == [1, 4]
    assert rec["flops"]["counts_per_step"] == [2048, 2048]
    # Linear 8→4 on 16 rows: forward 2·16·8·4 = 1,024; backward: the weight grad only, 1,024
    model = torch.nn.Linear(8, 4)
    by_hand, _ = count_flops(lambda: model(torch.randn(16, 8)).pow(2).mean().backward())
    assert by_hand == 2048 and rec["summary"]["flops_per_step"] == by_hand


def test_an_error_of_its_own_stops_the_agent_not_the_loop(agent, tmp_path, monkeypatch, capfd):
    def broken(self, step):  # noqa: ANN001
        raise KeyError("planted")

    monkeypatch.setattr(Window, "finish_step", broken)
    _train(6)  # no exception reaches the loop
    assert agent.state == "failed" and "KeyError: 'planted'" in agent.error
    assert not optim_mod._global_optimizer_post_hooks
    assert "profiling stopped by an error of trainprof's own" in capfd.readouterr().err
    agent._at_exit()  # the program ends: what there is, with the error, for the parent to report
    part = json.loads((tmp_path / ".parts" / "rank0.json").read_text())
    assert "KeyError: 'planted'" in part["profile"]["error"] and part["record"] is None
