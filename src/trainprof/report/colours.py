"""The one colour map of every chart: each part a record names (a phase of the step, a part of
the device timeline, an idle cause, a memory term, an operator class, a critical-path kind)
keeps its colour in report.html, the chart files (both report/charts.py's specs) and the
terminal's critical path (report/whatif_terminal.py). Mostly Tableau-10 (matplotlib's and
Vega's default category colours), greys for what is left over (other, idle, unattributed)."""

from __future__ import annotations

from typing import Container

from trainprof.vocab import idle, parts

# the step's phases: (label, run.json phase_split key, colour)
PHASES = (("data", "data_s", "#9467bd"), ("h2d", "h2d_s", "#17becf"), ("forward", "forward_s", "#1f77b4"),
          ("backward", "backward_s", "#ff7f0e"), ("optimizer", "optimizer_s", "#2ca02c"),
          ("other", "other_s", "#bbbbbb"))
# a pipeline stage's waits, sends and receives (`run --pp` only): shown after backward where a record has them
PIPELINE = ("pipeline", "pipeline_s", "#e377c2")
OPTIONAL_PHASES = (PIPELINE[1],)


def phases_in(keys: Container[str]) -> tuple[tuple[str, str, str], ...]:
    """PHASES, with PIPELINE after backward when `keys` (a phase_split dict, or field names)
    holds pipeline_s."""
    return PHASES[:4] + (PIPELINE,) + PHASES[4:] if PIPELINE[1] in keys else PHASES


_TEMPORAL_COLOUR = {parts.COMPUTE: "#1f77b4", parts.COMMUNICATION: "#000000", parts.MEMCPY: "#7f7f7f",
                    parts.MEMSET: "#bcbd22", parts.SYNC: "#d62728", parts.IDLE: "#dddddd"}
TEMPORAL = tuple((p, _TEMPORAL_COLOUR[p]) for p in parts.PARTS)
# idle causes: (cause, label, colour)
_IDLE_LOOK = {idle.DATA_LOADING: ("data loading", "#9467bd"), idle.ALLOCATOR: ("allocator (cudaMalloc/cudaFree)", "#8c564b"),
              idle.HOST_SYNC: ("host sync", "#d62728"), idle.HOST_LAUNCH: ("host launching kernels", "#ff7f0e"),
              idle.OTHER: (idle.OTHER, "#bbbbbb"), idle.UNATTRIBUTED: (idle.UNATTRIBUTED, "#dddddd")}
IDLE = tuple((c, *_IDLE_LOOK[c]) for c in idle.CAUSES)
MEMORY = (("params_bytes", "weights", "#1f77b4"), ("grads_bytes", "gradients", "#ff7f0e"),
          ("optimizer_bytes", "optimizer states", "#2ca02c"), ("activations_bytes", "activations", "#9467bd"),
          ("logits_bytes", "logits", "#8c564b"))
CLASS_COLOURS = {
    "gemm": "#1f77b4", "attention": "#9467bd", "convolution": "#17becf", "normalisation": "#2ca02c",
    "elementwise": "#ff7f0e", "reduction": "#d62728", "optimizer": "#8c564b", "triton": "#e377c2",
    "memcpy": "#7f7f7f", "memset": "#bcbd22", "communication": "#000000", "other": "#aaaaaa",
}
OTHER_CLASS = "#aaaaaa"  # an operator class not above
KEPT = (("kept", "#2ca02c"), ("not kept", "#cccccc"))  # the tuning ladder's knobs (tune.json best.knobs)

# critical-path kinds (analysis/graph/depgraph.py SEG_KINDS)
PATH_KINDS = (("cpu_op", "#4C78A8"), ("kernel", "#54A24B"), ("launch_overhead", "#F58518"),
              ("sync_wait", "#E45756"), ("communication", "#B279A2"), ("data_loading", "#EECA3B"),
              ("idle", "#BAB0AC"))
PATH_KIND_COLOUR = dict(PATH_KINDS)
OTHER_KIND = "#888888"  # a kind not above (the terminal's fallback)
