"""The agent as part.py and knobs.py see it: agent.py imports both, so they name its type
through this Protocol instead of importing agent.py back (no import circle, type-only ones
included: tests/unit/test_layering.py). tests/unit/inject/test_agent_view.py checks that
agent.Agent has every member listed here."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import torch

    from trainprof.inject.handles import Handles
    from trainprof.inject.options import AgentConfig, ProfileOptions
    from trainprof.inject.window import Window


class AgentView(Protocol):
    cfg: AgentConfig
    opts: ProfileOptions
    hooks: Handles
    rank: int
    seen: int
    offset: int
    backward_passes: int
    optimizer_steps: dict[str, int]
    stepper: Any
    roots: list[torch.nn.Module]
    dtype: tuple[str, str] | None
    marker: tuple[Any, str, Any] | None
    loaders: dict[int, dict[str, Any]]
    train_loader: dict[str, Any] | None
    win: Window | None
    error: str | None
    knobs: Any

    def _device(self) -> Any: ...

    def _patch(self, owner: Any, name: str, new: Any) -> None: ...

    def fail(self, e: BaseException) -> None: ...
