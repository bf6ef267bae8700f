"""The DeviceBackend protocol: the only door to CUDA/ROCm/CPU device facts and timing.

Timing uses *marks*: `mark()` returns an opaque token placed in the device's timeline (a
CUDA event recorded on the current stream, or a host timestamp on CPU) and
`seconds_between(a, b)` reads the interval after `synchronize()`. That lets one timer
measure GPU phases with events and CPU phases with perf_counter, without branching.
"""

from __future__ import annotations

from typing import Any, Callable, Protocol, runtime_checkable


@runtime_checkable
class DeviceBackend(Protocol):
    kind: str  # "cpu" | "cuda" | "fake"
    device: str  # a torch device string: "cpu", "cuda:0"
    host_clock: Callable[[], float]  # seconds; injected so tests can script it

    def device_name(self) -> str: ...

    def synchronize(self) -> None: ...

    def mark(self) -> Any: ...

    def seconds_between(self, start: Any, end: Any) -> float: ...

    def reset_peak_memory(self) -> None: ...

    def peak_memory_bytes(self) -> tuple[int | None, str]:
        """(bytes, kind): kind says what was measured (cuda_allocator, process_rss)."""
        ...

    def memory_now_bytes(self) -> int | None:
        """Memory in use right now, as peak_memory_bytes measures it (allocated on CUDA, resident on
        CPU), without resetting anything the program may read (its own max_memory_allocated)."""
        ...

    def memory_total_bytes(self) -> int | None: ...

    def available_memory_bytes(self) -> int | None: ...

    def tf32_matmul(self) -> bool: ...

    def is_out_of_memory(self, exc: BaseException) -> bool: ...

    def nvtx_range(self, name: str) -> Any:
        """A context manager marking `name` on the device timeline (NVTX on CUDA, so Nsight
        Systems shows it; a no-op elsewhere)."""
        ...
