"""Hooks removed without touching a dict torch is iterating (inject/handles.py), and a
program's own global optimizer hook that outlives trainprof's window (issue #37: it died with
"OrderedDict mutated during iteration" at the window's end)."""

from __future__ import annotations

import atexit
import os
from collections import OrderedDict

import torch
from torch.optim import optimizer as optim_mod

from trainprof.inject import package_dir
from trainprof.inject.agent import Agent
from trainprof.inject.handles import Handles
from trainprof.inject.options import AgentConfig, ProfileOptions
from trainprof.options import MonitorOptions


class _Handle:
    def __init__(self, d: OrderedDict, key: int) -> None:
        self.d, self.key = d, key

    def remove(self) -> None:
        del self.d[self.key]


def test_a_removal_from_inside_the_loop_waits_for_the_sweep():
    d: OrderedDict = OrderedDict()
    hooks = Handles()
    calls = []
    ours = hooks.add("d", _Handle(d, 1))
    d[1] = lambda: (hooks.remove_all(), calls.append("ours"))
    d[2] = lambda: calls.append("theirs")  # registered after ours, as a program's would be

    def run() -> None:
        for fn in d.values():  # torch iterates the live dict
            with hooks.inside("d") if fn is d.get(1) else _null():
                fn()

    run()  # would raise "OrderedDict mutated during iteration" had ours been removed now
    assert calls == ["ours", "theirs"] and 1 in d and hooks.pending
    hooks.sweep()
    assert list(d) == [2] and not hooks.pending and ours.key == 1


def test_a_removal_outside_every_loop_is_immediate():
    d: OrderedDict = OrderedDict({1: None})
    hooks = Handles()
    hooks.add("d", _Handle(d, 1))
    hooks.remove_all()
    assert not d and not hooks.pending


class _null:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *a: object) -> None:
        return None


def test_the_programs_own_global_hooks_survive_the_window(tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", os.environ.get("PYTHONPATH", ""))
    parts = tmp_path / ".parts"
    parts.mkdir()
    opts = ProfileOptions(warmup=2, steps=2, monitor=MonitorOptions(profile_steps=0, system_interval=0))
    cfg = AgentConfig(opts, str(parts),
                      str(package_dir()), pythonpath=os.environ["PYTHONPATH"], peaks={"peak_tflops": 1.0})
    agent = Agent(cfg)
    agent.install()
    calls = []
    mine = [optim_mod.register_optimizer_step_post_hook(lambda o, a, k: calls.append("post")),
            optim_mod.register_optimizer_step_pre_hook(lambda o, a, k: calls.append("pre"))]
    try:
        torch.manual_seed(0)
        model = torch.nn.Linear(8, 4)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for _ in range(5):  # 0-1 warm-up, 2-3 measured, 4 the FLOP check: the window ends in step 4's post-hook
            loss = model(torch.randn(16, 8)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()  # raised RuntimeError at step 4 before the fix
        assert agent.state == "done" and calls.count("post") == 5 and calls.count("pre") == 5
        # ours waited (the loop was running); the program's next backward pass sweeps it
        assert len(optim_mod._global_optimizer_post_hooks) == 2
        model(torch.randn(16, 8)).sum().backward()
        assert len(optim_mod._global_optimizer_post_hooks) == 1 and len(optim_mod._global_optimizer_pre_hooks) == 1
        assert not getattr(torch.autograd.backward, "__trainprof_agent__", False)
        opt.step()
        assert calls.count("post") == 6
    finally:
        for h in mine:
            h.remove()
        atexit.unregister(agent._at_exit)
        agent.uninstall()
        agent._sweep()
