"""One call run on a second thread while the caller goes on: `Background(fn, *args).result()`.

For numpy-heavy work only: numpy releases the GIL inside its loops over large arrays (ufuncs,
sorts, gathers), so two such calls overlap on two cores; pure-Python work would only take
turns. The result, or the exception the call raised, comes back from `result()` in the
caller's thread, as if the call had been made there.
"""

from __future__ import annotations

import threading
from typing import Any, Callable


class Background:
    __slots__ = ("_thread", "_value", "_error")

    def __init__(self, fn: Callable[..., Any], *args: Any, name: str = "trainprof-background") -> None:
        self._value: Any = None
        self._error: BaseException | None = None

        def run() -> None:
            try:
                self._value = fn(*args)
            except BaseException as e:  # noqa: BLE001 - re-raised in the caller's thread by result()
                self._error = e

        # daemon: a caller that fails (or is interrupted) first does not wait for it at exit
        self._thread = threading.Thread(target=run, name=name, daemon=True)
        self._thread.start()

    def result(self) -> Any:
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._value
