"""The planner beside a measured peak: a training configuration of our workload → its plan
(analysis/plan) and its measured peak (a `trainprof memory` probe, jobs/memory_probe.py),
for docs/memory.md's table (benchmarks/plan_vs_measured.py) and its test.

On CPU the probe measures resident memory above a baseline taken before the model exists
(glibc's mmap threshold at 64 KiB, so freed tensors leave RSS). What it measures beyond the
tensors the plan counts is modelled as one stated constant, CPU_RUNTIME_BYTES (see there).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from trainprof.analysis.plan.layout import Layout
from trainprof.analysis.plan.memory import Runtime, plan_memory
from trainprof.analysis.plan.shape import ModelShape

# What a CPU probe holds above its baseline besides the tensors the plan counts: the data
# pipeline (a corpus slice, the sampler's indices, a batch), Python and autograd objects, the
# thread pool's kernel scratch. Measured as measured − plan on the tiny preset
# (benchmarks/plan_vs_measured.py, 2026-11-28): 6.7-10.2 MiB over seven fp32 configurations from
# 70 to 630 MiB (median 9.8), 10.7 and 16.1 MiB for bf16 autocast (its CPU kernels' scratch); a
# constant, not a share of the peak. docs/memory.md saw the same ~10 MB before.
CPU_RUNTIME_BYTES = 10 * 2**20


def plan_inputs(cfg: Any, ranks: int = 1, **layout: Any) -> tuple[ModelShape, Layout, bool]:
    """A resolved TrainConfig (our GPT) on `ranks` data-parallel ranks (its `strategy`: DDP or
    FSDP full shard) → the planner's shape, layout and whether the optimizer is torch's foreach
    AdamW (its one full-size temporary). `layout`: further Layout fields (offload, zero)."""
    m = cfg.model
    shape = ModelShape(n_layer=m.n_layer, d_model=m.d_model, n_head=m.n_head, vocab_size=m.vocab_size,
                       context_len=m.context_len, ffn=m.mlp_ratio * m.d_model, fused_qkv=True, name=cfg.preset)
    lay = Layout(dtype=cfg.dtype, attention="flash" if cfg.attention == "sdpa" else "eager",
                 recompute=cfg.recompute if cfg.activation_checkpointing else "none", micro_batch=cfg.micro_batch,
                 grad_accum=cfg.grad_accum, seq_len=cfg.seq_len, dp=ranks,
                 fsdp=ranks > 1 and cfg.strategy == "fsdp",
                 # our FSDP2 has no MixedPrecisionPolicy: bf16 is autocast over fp32 shards
                 fsdp_autocast=ranks > 1 and cfg.strategy == "fsdp" and cfg.dtype != "fp32",
                 optimizer="adafactor" if cfg.optimizer == "adafactor" else "adamw", **layout)
    return shape, lay, cfg.optimizer == "foreach"


def estimate(cfg: Any, device_kind: str = "cpu", runtime_bytes: int = CPU_RUNTIME_BYTES, ranks: int = 1,
             **layout: Any) -> dict[str, Any]:
    shape, lay, foreach = plan_inputs(cfg, ranks, **layout)
    return plan_memory(shape, lay, Runtime(context_bytes=runtime_bytes, device_kind=device_kind), foreach=foreach)


def compare(cfg: Any, *, corpus: str, steps: int = 2, timeout_s: float = 600.0, ranks: int = 1) -> dict[str, Any]:
    """Plan and measure one configuration (resolved, device explicit): one fresh-process probe,
    or one per rank on `ranks` gloo ranks (jobs/memory_ranks.py: the highest rank's peak)."""
    from trainprof.errors import TrainprofError
    from trainprof.jobs.memory_probe import run_probe
    from trainprof.jobs.memory_ranks import run_rank_probe

    run = replace(cfg, steps=steps, warmup_steps=0, eval_batches=0, data=corpus)
    r = (run_rank_probe(run, ranks, limit_bytes=None, timeout_s=timeout_s) if ranks > 1
         else run_probe(run, limit_bytes=None, timeout_s=timeout_s))
    if r.status != "ok" or r.above_baseline_bytes is None:
        raise TrainprofError(f"probe failed ({r.status}): {r.reason}")
    kind = "cuda" if cfg.device.startswith("cuda") else "cpu"
    pm = estimate(cfg, kind, CPU_RUNTIME_BYTES if kind == "cpu" else 0, ranks)
    measured = r.above_baseline_bytes
    return {"config": {k: getattr(cfg, k) for k in ("preset", "micro_batch", "seq_len", "grad_accum", "dtype",
                                                    "attention", "optimizer", "activation_checkpointing",
                                                    "recompute", "strategy")}, "ranks": ranks,
            "planned_bytes": pm["peak_bytes"], "planned_phase": pm["peak_phase"], "runtime_bytes": pm["runtime_bytes"],
            "measured_bytes": measured, "baseline_bytes": r.baseline_bytes, "peak_kind": r.peak_kind,
            "ranks_measured_bytes": list(r.ranks_above_baseline_bytes) or None,
            "error": pm["peak_bytes"] / measured - 1, "wall_s": r.wall_s}
