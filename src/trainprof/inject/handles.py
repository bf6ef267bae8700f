"""The agent's hook handles, removed so the program's own hooks never see it.

torch calls global hooks by iterating their dict (`for hook in chain(_global_optimizer_post_hooks
.values(), ...)`, optim/optimizer.py; module hooks alike). Removing a handle from inside that
loop mutates the dict under the iterator: when the program registered a hook of its own after
ours, the next iteration raises `RuntimeError: OrderedDict mutated during iteration` *in the
program's* `optimizer.step()` (issue #37: a program with its own global step hook died at the
end of trainprof's window, exit 1 where the plain run exits 0).

So each handle carries the name of the dict it lives in, every hook body says which dict is
being iterated while it runs (`inside`), and a removal asked for from inside that dict's loop
waits: `sweep()` removes what waited at the next moment no loop is running over it (the agent
calls it from its `torch.autograd.backward` wrapper: the program's next backward pass, which
no hook dict's iteration contains). A program that never runs another backward keeps one
no-op hook: a Python call per optimizer step that returns at once (the agent is `done`).
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator


class Handles:
    def __init__(self) -> None:
        self.live: list[tuple[str, Any]] = []  # (dict name, RemovableHandle)
        self.waiting: list[tuple[str, Any]] = []  # removal asked for while its dict was iterated
        self.iterating: dict[str, int] = {}  # dict name -> nesting of our hook bodies running in its loop

    def add(self, where: str, handle: Any) -> Any:
        self.live.append((where, handle))
        return handle

    @contextlib.contextmanager
    def inside(self, where: str) -> Iterator[None]:
        """A hook body running in the loop over dict `where`."""
        self.iterating[where] = self.iterating.get(where, 0) + 1
        try:
            yield
        finally:
            self.iterating[where] -= 1

    def remove(self, handle: Any) -> None:
        for i, (where, h) in enumerate(self.live):
            if h is handle:
                del self.live[i]
                self._remove(where, h)
                return

    def remove_all(self) -> None:
        live, self.live = self.live, []
        for where, h in live:
            self._remove(where, h)

    def sweep(self) -> None:
        """Remove the handles whose removal waited, where their dict is no longer iterated."""
        waiting, self.waiting = self.waiting, []
        for where, h in waiting:
            self._remove(where, h)

    @property
    def pending(self) -> bool:
        return bool(self.waiting)

    def _remove(self, where: str, h: Any) -> None:
        if self.iterating.get(where, 0):
            self.waiting.append((where, h))
        else:
            h.remove()
