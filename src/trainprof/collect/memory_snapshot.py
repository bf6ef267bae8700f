"""`run --memory-snapshot`: a few extra steps with CUDA allocation history on, saved as the
pickle that PyTorch's memory viewer opens (https://pytorch.org/memory_viz), plus memory by
category from the memory profiler and the allocator's fragmentation (analysis/run/memory_snapshot.py).

The steps run after the measured ones (like --profile) because recording stack traces for
every allocation and the profiler's tensor tracking slow a step down several times.
"""

from __future__ import annotations

import json
import tempfile
import warnings
from pathlib import Path
from typing import Any, Callable

from trainprof.analysis.run.memory_snapshot import fragmentation, peak_by_category, peak_stats

FILE = "memory_snapshot.pickle"
MAX_ENTRIES = 100_000  # allocation events kept; a gpt2-124m step makes ~5-10k


def _profiled(run_steps: Callable[[], None], device: str) -> Any:
    from torch.profiler import ProfilerActivity, profile

    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.startswith("cuda") else [])
    with profile(activities=acts, profile_memory=True, record_shapes=True, with_stack=True) as prof:
        run_steps()
    return prof


def _timeline(prof: Any, device: str) -> tuple[list[int], list[list[int]]]:
    """The profiler's timeline of bytes per category (times in µs)."""
    with tempfile.TemporaryDirectory(prefix="trainprof-memtl-") as d:
        path = Path(d) / "timeline.json"
        with warnings.catch_warnings():
            # Deprecated in favour of the snapshot (torch ≥ 2.6), which has no categories; it
            # is still the only labeller of parameters/gradients/optimizer state/activations.
            warnings.simplefilter("ignore", FutureWarning)
            prof.export_memory_timeline(str(path), device=device)
        times, sizes = json.loads(path.read_text())
    return times, sizes


def by_category(run_steps: Callable[[], None], device: str) -> dict[str, Any]:
    """Run the steps under the memory profiler: memory by category at their peak, or why
    the categories could not be had (a failing step raises as usual)."""
    prof = _profiled(run_steps, device)
    try:
        return peak_by_category(*_timeline(prof, device))
    except (AttributeError, ValueError, RuntimeError, OSError) as e:  # a torch without the export
        return {"unavailable": f"memory profiler timeline: {type(e).__name__}: {e}"}


def snapshot_steps(run_steps: Callable[[], None], backend: Any, out_dir: Path | None) -> dict[str, Any]:
    """Record allocation history over `run_steps` (CUDA), save the snapshot, summarise it."""
    backend.start_memory_history(MAX_ENTRIES)
    try:
        backend.reset_peak_memory()
        categories = by_category(run_steps, backend.device)
        snap = backend.memory_snapshot()
    finally:
        backend.stop_memory_history()
    result: dict[str, Any] = {"categories": categories, "fragmentation": fragmentation(snap),
                              "allocator": peak_stats(backend.allocator_stats())}
    if out_dir is not None:
        import pickle

        from trainprof import atomic

        atomic.write_bytes(out_dir / FILE, pickle.dumps(snap))
        result["file"] = FILE
        result["viewer"] = "https://pytorch.org/memory_viz (drag the file in; nothing is uploaded)"
    return result
