"""collect/module_scopes.py: the ranges nest as the modules do, only matching modules get
one, every hook is removed afterwards, and a module our hook cannot key runs untouched."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from trainprof.collect.module_scopes import module_scopes  # noqa: E402
from trainprof.userregex import compile_user  # noqa: E402


class Unhashable(torch.nn.Linear):
    __hash__ = None  # type: ignore[assignment]  # __eq__ without __hash__, as some user classes have

    def __eq__(self, other):  # noqa: ANN001
        return self is other


def _ranges(net, pattern=None) -> list[str]:
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as p, module_scopes(pattern):
        net(torch.ones(2, 4))
    return [e.name for e in p.events() if e.name.startswith("nn.Module: ")]


def test_ranges_and_pattern():
    net = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU(), torch.nn.Linear(4, 4))
    assert sorted(_ranges(net)) == sorted(["nn.Module: Sequential_0", "nn.Module: Linear_0", "nn.Module: ReLU_0",
                                           "nn.Module: Linear_1"])
    assert sorted(_ranges(net, compile_user("^Linear", "--modules"))) == ["nn.Module: Linear_0", "nn.Module: Linear_1"]


def test_hooks_removed_and_unhashable_module_runs():
    from torch.nn.modules import module as nn_module

    before = (len(nn_module._global_forward_pre_hooks), len(nn_module._global_forward_hooks))
    net = torch.nn.Sequential(Unhashable(4, 4))
    out = net(torch.ones(2, 4))
    assert _ranges(net) == ["nn.Module: Sequential_0"]  # no range for it, and no error
    assert torch.equal(net(torch.ones(2, 4)), out)
    assert (len(nn_module._global_forward_pre_hooks), len(nn_module._global_forward_hooks)) == before
