"""Arm the agent in a starting Python process: wait for the program's own `import torch`.

torch is not imported here: a program may set OMP_NUM_THREADS or CUDA_VISIBLE_DEVICES before
it imports torch, and most Python processes a launcher starts (torchrun's agent, DataLoader
workers, a shell's helpers) never train. A finder first on `sys.meta_path` sees the import of
`torch`, lets the real finder locate it, and wraps its loader so that, once torch's
`__init__` has run, the agent installs its hooks (agent.Agent.install). Cost for a process
that never imports torch: one finder call per import.
"""

from __future__ import annotations

import sys
from typing import Any


def arm(config: str) -> None:
    """Install the agent when torch is imported (now, if it already is)."""
    if "torch" in sys.modules:
        _activate(config)
        return
    sys.meta_path.insert(0, _TorchWatcher(config))


def _activate(config: str) -> None:
    from trainprof.inject.agent import Agent
    from trainprof.inject.options import AgentConfig

    try:
        Agent(AgentConfig.from_env(config)).install()
    except Exception as e:  # noqa: BLE001 - the program runs on, unprofiled
        from trainprof.controls import one_line  # the message may quote a path or a value: shown, never sent

        sys.stderr.write(f"trainprof: cannot profile this process ({type(e).__name__}: {one_line(e)})\n")


class _TorchWatcher:
    """A meta-path finder that answers only for `torch`, and only once."""

    def __init__(self, config: str) -> None:
        self.config = config

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name != "torch":
            return None
        sys.meta_path.remove(self)  # once; and the lookup below must not find us again
        import importlib.util

        spec = importlib.util.find_spec(name)
        if spec is not None and spec.loader is not None:
            spec.loader = _ThenActivate(spec.loader, self.config)
        return spec


class _ThenActivate:
    """torch's own loader, then the agent; afterwards torch's spec names its real loader."""

    def __init__(self, loader: Any, config: str) -> None:
        self.loader = loader
        self.config = config

    def create_module(self, spec: Any) -> Any:
        return self.loader.create_module(spec)

    def exec_module(self, module: Any) -> None:
        self.loader.exec_module(module)
        module.__spec__.loader = module.__loader__ = self.loader  # importlib.resources & co. see the real one
        _activate(self.config)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.loader, name)
