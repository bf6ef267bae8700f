"""Memory by category and allocator fragmentation, from a profiled step and a CUDA snapshot
(pure: takes the timeline, the snapshot dict and allocator stats; returns a dict).

Categories come from PyTorch's memory profiler (torch/profiler/_memory_profiler.py), which
follows every tensor through the autograd graph and the optimizer and labels it parameter,
optimizer state, input, temporary, activation, gradient or autograd detail. Its timeline
rows are [0, one column per category in `CATEGORIES` order]; at the step's peak (the row
with the largest total) each column is that category's share of the peak.

Fragmentation, from the caching allocator's segments (torch.cuda.memory._snapshot()):
  reserved   = Σ segment.total_size        (what the allocator holds from the driver)
  allocated  = Σ segment.allocated_size    (held by live tensors)
  free       = reserved − allocated         (cached, reusable only by requests that fit)
  fragmentation = free / reserved; external = 1 − largest free block / free
A high external share means the free memory is in pieces: a large request may fail (or
cudaMalloc more) although `free` would hold it; the usual fixes are
PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True or fewer distinct tensor sizes.
"""

from __future__ import annotations

from typing import Any, Sequence

# The column order of torch's _CATEGORY_TO_INDEX (torch 2.1 … 2.13), after the leading 0 column.
CATEGORIES = ("parameters", "optimizer_state", "inputs", "temporaries", "activations", "gradients",
              "autograd_detail", "unknown")


def peak_by_category(times: Sequence[int], sizes: Sequence[Sequence[int]]) -> dict[str, Any]:
    """Bytes per category at the moment of the largest total, and each category's own max."""
    if not sizes:
        raise ValueError("empty memory timeline")
    width = len(CATEGORIES) + 1
    if any(len(r) != width for r in sizes):
        raise ValueError(f"memory timeline rows have {len(sizes[0])} columns; expected {width} "
                         "(a torch whose memory profiler has other categories)")
    totals = [sum(r) for r in sizes]
    i = max(range(len(totals)), key=totals.__getitem__)
    at_peak = {c: int(sizes[i][k + 1]) for k, c in enumerate(CATEGORIES)}
    most = {c: int(max(r[k + 1] for r in sizes)) for k, c in enumerate(CATEGORIES)}
    return {"peak_bytes": int(totals[i]), "peak_time_us": int(times[i]) - int(times[0]),
            "at_peak": at_peak, "max": most}


def fragmentation(snapshot: dict[str, Any]) -> dict[str, Any]:
    """Reserved, allocated, free and fragmentation of the allocator's segments at the snapshot."""
    segs = snapshot.get("segments", [])
    reserved = sum(s["total_size"] for s in segs)
    allocated = sum(s["allocated_size"] for s in segs)
    free_blocks = [b["size"] for s in segs for b in s.get("blocks", []) if b.get("state") == "inactive"]
    free = reserved - allocated
    largest = max(free_blocks, default=0)
    return {
        "segments": len(segs),
        "reserved_bytes": reserved,
        "allocated_bytes": allocated,
        "free_bytes": free,
        "largest_free_block_bytes": largest,
        "fragmentation": free / reserved if reserved else 0.0,
        "external_fragmentation": 1 - largest / free if free else 0.0,
    }


def peak_stats(stats: dict[str, Any]) -> dict[str, Any]:
    """The allocator's own peaks (torch.cuda.memory_stats) over the recorded steps."""
    reserved = stats.get("reserved_bytes.all.peak")
    allocated = stats.get("allocated_bytes.all.peak")
    out = {"peak_reserved_bytes": reserved, "peak_allocated_bytes": allocated,
           "num_alloc_retries": stats.get("num_alloc_retries"), "num_ooms": stats.get("num_ooms")}
    if reserved and allocated is not None:
        out["peak_unused_reserved_fraction"] = 1 - allocated / reserved
    return out
