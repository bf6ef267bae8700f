"""A scripted backend for tests: the clock returns the times you give it.

    FakeBackend(times=[0.0, 0.5, 0.6, ...])  # each mark()/host_clock() takes the next

so a test can say "data took 0.5 s, forward 0.1 s" and check the split exactly.
"""

from __future__ import annotations

import contextlib
from typing import Iterable, Iterator


class FakeBackend:
    kind = "fake"
    device = "cpu"

    def __init__(
        self,
        times: Iterable[float] = (),
        *,
        name: str = "Fake Device",
        peak_memory: int | None = 1 << 30,
        available_memory: int | None = 1 << 34,
        tf32: bool = False,
        oom: bool = False,
    ) -> None:
        self._times = iter(times)
        self._name = name
        self._peak = peak_memory
        self._available = available_memory
        self._tf32 = tf32
        self.oom = oom
        self.syncs = 0
        self.ranges: list[tuple[str, str]] = []  # ("push"|"pop", name), in order

    def host_clock(self) -> float:
        return next(self._times)

    def device_name(self) -> str:
        return self._name

    def synchronize(self) -> None:
        self.syncs += 1

    def mark(self) -> float:
        return self.host_clock()

    def seconds_between(self, start: float, end: float) -> float:
        return end - start

    def reset_peak_memory(self) -> None:
        pass

    def peak_memory_bytes(self) -> tuple[int | None, str]:
        return self._peak, "fake"

    def memory_now_bytes(self) -> int | None:
        return self._peak

    def memory_total_bytes(self) -> int | None:
        return self._available

    def available_memory_bytes(self) -> int | None:
        return self._available

    def tf32_matmul(self) -> bool:
        return self._tf32

    def is_out_of_memory(self, exc: BaseException) -> bool:
        return isinstance(exc, MemoryError)

    @contextlib.contextmanager
    def nvtx_range(self, name: str) -> Iterator[None]:
        self.ranges.append(("push", name))
        try:
            yield
        finally:
            self.ranges.append(("pop", name))
