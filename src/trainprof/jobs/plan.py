"""`trainprof plan` as a function: the model's shape, the device, the runtime constants, then
analysis/plan's arithmetic → the `trainprof.plan/1` record (docs/memory.md, "Planning").

    from trainprof.jobs.plan import plan
    record = plan(PlanJob(model=ModelFlags(preset="gpt2-124m"), layout=Layout(micro_batch=8)))
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from trainprof.analysis.plan.layout import Layout
from trainprof.analysis.plan.memory import Runtime, bytes_per_param, plan_memory
from trainprof.analysis.plan.search import cost, layouts_that_fit, max_micro_batch
from trainprof.analysis.plan.shape import ModelShape, from_hf_config, with_params
from trainprof.analysis.plan.time import time_to_train
from trainprof.errors import InputError, UsageError
from trainprof.jobs.plan_config import ModelFlags, PlanJob

SCHEMA = "trainprof.plan/1"
# The CUDA context and the kernels loaded with it, per GPU, outside the caching allocator: the
# Hugging Face guide "Model training anatomy" (transformers docs, model_memory_anatomy) measures
# 1,343 MB occupied after one tiny tensor ("the kernels alone take up 1.3GB"; "1-2GB"). With CUDA's
# lazy module loading (default since CUDA 11.7 / torch 1.13) it is often less; not measured here.
# --cuda-context SIZE replaces it.
CUDA_CONTEXT_BYTES = 1343 * 10**6
# NCCL per communicator: ring peers 2 × channels 16 × (NCCL_BUFFSIZE 4 MiB for the Simple
# protocol + the LL/LL128 buffers, about as much again) ≈ 256 MiB. An estimate from NCCL's
# documented defaults (NCCL env docs: NCCL_BUFFSIZE, NCCL_MAX_NCHANNELS), not measured here.
NCCL_BYTES_PER_GROUP = 256 * 2**20
DEFAULT_CONTEXT = 2048  # --context when the flags give none (and no --seq-len)


def model_shape(m: ModelFlags, seq_len: int = 0) -> ModelShape:
    """The shape from a preset, a config.json or the flags (--params overrides the count)."""
    if m.preset is not None:
        from trainprof.workload.config import PRESETS

        if m.preset not in PRESETS:
            raise UsageError(f"plan: --preset {m.preset!r}: one of {', '.join(PRESETS)}")
        p = PRESETS[m.preset]
        shape = ModelShape(n_layer=p.n_layer, d_model=p.d_model, n_head=p.n_head, vocab_size=p.vocab_size,
                           context_len=p.context_len, ffn=p.mlp_ratio * p.d_model, fused_qkv=True, name=m.preset)
    elif m.config is not None:
        from trainprof.bounded import load_json

        shape = from_hf_config(load_json(m.config), name=m.config)
    else:
        need = {"--layers": m.layers, "--hidden": m.hidden, "--heads": m.heads, "--vocab": m.vocab}
        missing = [k for k, v in need.items() if v is None]
        if missing:
            raise UsageError(f"plan: name the model: --preset, --config CONFIG.JSON, or the shape "
                             f"(missing {', '.join(missing)})")
        shape = ModelShape(n_layer=m.layers, d_model=m.hidden, n_head=m.heads, vocab_size=m.vocab,  # type: ignore[arg-type]
                           context_len=m.context or seq_len or DEFAULT_CONTEXT, n_kv_head=m.kv_heads or 0,
                           ffn=m.ffn or 0, gated=m.gated, dropout=m.dropout, learned_positions=False,
                           bias=not m.gated, rmsnorm=m.gated, tied=False, name="flags")
        return with_params(shape, m.params)
    overrides = {k: v for k, v in (("n_layer", m.layers), ("d_model", m.hidden), ("n_head", m.heads),
                                   ("n_kv_head", m.kv_heads), ("vocab_size", m.vocab), ("context_len", m.context),
                                   ("ffn", m.ffn)) if v is not None}
    if m.dropout:
        overrides["dropout"] = True
    return with_params(replace(shape, **overrides) if overrides else shape, m.params)


def device_capacity(job: PlanJob) -> tuple[Any, int, str]:
    """(the spec row, the bytes to plan against, where that number comes from)."""
    from trainprof.hardware import load_specs

    table = load_specs()
    spec = table.get(job.device)
    if spec is None:
        near = table.closest(job.device)
        raise UsageError(f"plan: --device {job.device}: no such row of the spec table"
                         + (f"; closest: {', '.join(near)}" if near else "") + " (see `trainprof specs`)")
    if job.memory is not None:
        return spec, job.memory, "--memory"
    if not spec.memory_gb:
        raise UsageError(f"plan: the spec row {job.device} lists no memory; pass --memory SIZE")
    return spec, int(spec.memory_gb * 1e9), f"spec table ({spec.key}: {spec.memory_gb:g} GB)"


def measured_mfu(path: str) -> tuple[float, str]:
    """MFU from a run folder (or its run.json), with the device it was measured on."""
    from trainprof.recordtypes.run import load_run

    p = Path(path)
    rec = load_run(p / "run.json" if p.is_dir() else p)
    if rec.summary.mfu is None or not rec.summary.mfu > 0:
        raise InputError(f"{path}: the run has no MFU (its device has no peak in the spec table); pass --mfu")
    return float(rec.summary.mfu), rec.device.name or "unknown device"


def plan(job: PlanJob) -> dict[str, Any]:
    """The `trainprof.plan/1` record for `job`."""
    lay = job.layout
    shape = model_shape(job.model, lay.seq_len)
    if not lay.seq_len:
        lay = replace(lay, seq_len=shape.context_len)
    spec, capacity, capacity_source = device_capacity(job)
    runtime = Runtime(context_bytes=CUDA_CONTEXT_BYTES if job.cuda_context is None else job.cuda_context,
                      nccl_bytes_per_group=NCCL_BYTES_PER_GROUP if job.nccl_buffers is None else job.nccl_buffers)
    pm = plan_memory(shape, lay, runtime)
    gpus = job.gpus or lay.gpus
    record: dict[str, Any] = {
        "schema": SCHEMA,
        "model": {"source": shape.name, "params": shape.param_count(), "matmul_params": shape.matmul_params(),
                  "n_layer": shape.n_layer, "d_model": shape.d_model, "n_head": shape.n_head,
                  "n_kv_head": shape.kv_heads, "vocab_size": shape.vocab_size, "context_len": shape.context_len,
                  "ffn": shape.ffn_dim, "gated": shape.gated, "tied": shape.tied, "dropout": shape.dropout},
        "layout": {**pm["layout"], "gpus": lay.gpus, "name": lay.name()},
        "device": {"key": spec.key, "name": spec.name, "capacity_bytes": capacity, "capacity_source": capacity_source},
        "runtime": {"cuda_context_bytes": runtime.context_bytes,
                    "cuda_context_source": "--cuda-context" if job.cuda_context is not None else
                    "HF 'Model training anatomy': 1,343 MB after one tensor (docs/memory.md)",
                    "nccl_bytes_per_group": runtime.nccl_bytes_per_group,
                    "nccl_source": "--nccl-buffers" if job.nccl_buffers is not None else
                    "estimate from NCCL's default buffer sizes (docs/memory.md)"},
        "per_gpu": {k: pm[k] for k in ("weights_bytes", "grads_bytes", "optimizer_bytes", "activations_bytes",
                                       "temporaries_bytes", "runtime_bytes", "peak_bytes", "peak_phase",
                                       "peak_forward_backward_bytes", "peak_optimizer_step_bytes", "host_bytes",
                                       "local_params", "in_peak")},
        "terms": {"states": pm["states"], "activations": pm["activations"], "temporaries": pm["temporaries"],
                  "runtime": pm["runtime"]},
        "bytes_per_param": bytes_per_param(shape, lay),
        "fits": pm["peak_bytes"] <= capacity,
        "headroom_bytes": capacity - pm["peak_bytes"],
        "max_micro_batch": max_micro_batch(shape, lay, runtime, capacity),
        "cost": cost(shape, lay),
        "layouts": None,
        "time": None,
    }
    if job.layouts:
        rows = layouts_that_fit(shape, replace(lay, micro_batch=lay.micro_batch), gpus, runtime, capacity)
        record["layouts"] = {"gpus": gpus, "micro_batch": lay.micro_batch, "order": "no offload first, then the "
                             "least slowdown (recompute × pipeline bubble × TP), the least traffic, the smaller peak",
                             "rows": [{"name": r["name"], "layout": _layout_dict(r["layout"]), "peak_bytes": r["peak_bytes"],
                                       "max_micro_batch": r["max_micro_batch"], **r["cost"]} for r in rows]}
    if job.tokens is not None:
        record["time"] = _time(job, shape, lay, spec, gpus=lay.gpus)
    return record


def _layout_dict(lay: Layout) -> dict[str, Any]:
    return {k: getattr(lay, k) for k in ("dp", "tp", "pp", "zero", "fsdp", "recompute", "offload")}


def _time(job: PlanJob, shape: ModelShape, lay: Layout, spec: Any, *, gpus: int) -> dict[str, Any]:
    peak_dtype = lay.dtype
    peak = spec.peak_tflops(peak_dtype)
    if peak is None:
        raise UsageError(f"plan: the spec row {spec.key} has no dense {peak_dtype} peak; time needs one")
    if job.mfu_from is not None:
        mfu, where = measured_mfu(job.mfu_from)
        source = f"measured by {job.mfu_from} on {where}"
    else:
        mfu, source = float(job.mfu), "--mfu"  # type: ignore[arg-type]
    assert job.tokens is not None
    t = time_to_train(shape, tokens=job.tokens, seq_len=lay.seq_len, gpus=gpus, peak_tflops=peak, mfu=mfu)
    return {**t, "peak_dtype": peak_dtype, "mfu_source": source}
