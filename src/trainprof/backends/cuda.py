"""CUDA (and ROCm, which PyTorch exposes as torch.cuda) backend: events, allocator stats."""

from __future__ import annotations

import time
from typing import Any, Callable


class CudaBackend:
    kind = "cuda"

    def __init__(self, index: int = 0, host_clock: Callable[[], float] = time.perf_counter):
        import torch

        self._torch = torch
        self.index = index
        self.device = f"cuda:{index}"
        self.host_clock = host_clock
        torch.cuda.set_device(index)

    def device_name(self) -> str:
        return self._torch.cuda.get_device_name(self.index)

    def synchronize(self) -> None:
        self._torch.cuda.synchronize(self.index)

    def mark(self) -> Any:
        # An event recorded on the current stream: its timestamp is when the GPU reaches
        # this point, so intervals are GPU time including any launch gaps.
        ev = self._torch.cuda.Event(enable_timing=True)
        ev.record()
        return ev

    def seconds_between(self, start: Any, end: Any) -> float:
        return start.elapsed_time(end) / 1e3  # elapsed_time is in ms

    def nvtx_range(self, name: str) -> Any:
        # Without a profiler attached NVTX calls go to no-op callbacks (cost not measured here: no GPU).
        return self._torch.cuda.nvtx.range(name)

    def cuda_profiler_capture(self) -> Any:
        """cudaProfilerStart/Stop around a block: what `nsys profile
        --capture-range=cudaProfilerApi` (and ncu --profile-from-start off) record."""
        return self._torch.cuda.profiler.profile()

    # Allocation history for `run --memory-snapshot` (torch.cuda.memory, documented in
    # https://pytorch.org/docs/stable/torch_cuda_memory.html; underscored but stable since 2.1).
    def start_memory_history(self, max_entries: int) -> None:
        self._torch.cuda.memory._record_memory_history(max_entries=max_entries)

    def stop_memory_history(self) -> None:
        self._torch.cuda.memory._record_memory_history(enabled=None)

    def memory_snapshot(self) -> dict[str, Any]:
        return self._torch.cuda.memory._snapshot()

    def allocator_stats(self) -> dict[str, Any]:
        return dict(self._torch.cuda.memory_stats(self.index))

    def reset_peak_memory(self) -> None:
        self._torch.cuda.reset_peak_memory_stats(self.index)

    def peak_memory_bytes(self) -> tuple[int | None, str]:
        return int(self._torch.cuda.max_memory_allocated(self.index)), "cuda_allocator"

    def memory_now_bytes(self) -> int | None:
        return int(self._torch.cuda.memory_allocated(self.index))

    def memory_total_bytes(self) -> int | None:
        return int(self._torch.cuda.get_device_properties(self.index).total_memory)

    def available_memory_bytes(self) -> int | None:
        free, _total = self._torch.cuda.mem_get_info(self.index)
        return int(free)

    def tf32_matmul(self) -> bool:
        return bool(self._torch.backends.cuda.matmul.allow_tf32)

    def is_out_of_memory(self, exc: BaseException) -> bool:
        return isinstance(exc, self._torch.cuda.OutOfMemoryError)
