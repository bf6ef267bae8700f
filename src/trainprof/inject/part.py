"""What a profiled process writes beside its measurements: how its steps were found.

`profile_block` becomes run.json's "profile" (docs/profile.md lists its fields); a process
that trained but never claimed a rank (it never stepped: no optimizer.step(), no
--step-marker call) leaves `proc-PID.json` instead, so the parent can say which fix applies.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from trainprof import atomic, jsontext

if TYPE_CHECKING:
    from trainprof.inject.agent_view import AgentView
    from trainprof.inject.window import Window


def _env_int(name: str, default: int) -> int:
    try:
        return int(os.environ.get(name, default))
    except ValueError:
        return default


def world() -> tuple[int, int, str | None]:
    """(world size, ranks on this machine, process-group backend)."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        n = dist.get_world_size()
        return n, _env_int("LOCAL_WORLD_SIZE", n), str(dist.get_backend())
    n = _env_int("WORLD_SIZE", 1)
    return n, _env_int("LOCAL_WORLD_SIZE", n), None


def profile_block(a: "AgentView", complete: bool) -> dict[str, Any]:
    o, first = a.opts, a.offset
    W, N, P = o.warmup, o.steps, o.monitor.profile_steps
    stepper = a.stepper() if a.stepper is not None else None
    n_world, local, backend = world()
    measured = a.win.mon.steps if a.win is not None and a.win.mon is not None else []
    return {
        "rank": a.rank, "local_rank": _env_int("LOCAL_RANK", a.rank), "world_size": n_world,
        "local_world_size": local, "process_group_backend": backend,
        "boundary": f"--step-marker {o.step_marker}" if o.step_marker else
                    f"optimizer.step() of {type(stepper).__name__ if stepper is not None else 'an optimizer'}",
        "optimizer_steps": dict(a.optimizer_steps),
        "steps_seen": a.seen + first, "warmup_steps": W, "flops_step": first + W - 1,
        "flops_check_step": first + W + N if a.seen > W + N else None,
        "measured_steps": [measured[0].step, measured[-1].step] if measured else None,
        "profiled_steps": [first + W + N + 2, first + W + N + 1 + P] if P and complete else None,
        "window_complete": complete,
        "root_modules": [type(m).__name__ for m in a.roots],
        "dtype_from": a.dtype[1] if a.dtype else None,
        "error": a.error,
        **({"knobs": a.knobs.report()} if a.knobs is not None else {}),  # a tune trial's (inject/knobs.py)
    }


def extra_fields(a: "AgentView", w: "Window") -> dict[str, Any]:
    """Monitor.record's model, config, environment and world fields."""
    from trainprof.workload.trainer import environment

    root = a.roots[0] if a.roots else None
    inner = getattr(root, "module", None)  # DDP / FSDP / DataParallel wrap the model as .module
    model_cls = inner if isinstance(inner, torch.nn.Module) else root
    params = list(root.parameters()) if root is not None else []
    model = {"class": type(model_cls).__name__ if model_cls is not None else None,
             "wrapper": type(root).__name__ if model_cls is not root else None,
             "params": sum(p.numel() for p in params) if root is not None else None,
             "trainable_params": sum(p.numel() for p in params if p.requires_grad) if root is not None else None}
    shape = w.batch_shape or []
    b = 1 if w.layout and len(shape) > 1 else 0  # the batch dimension of the first input
    o = a.opts
    config = {"integration": "trainprof profile", "warmup_steps": o.warmup, "steps": o.steps,
              "profile_steps": o.monitor.profile_steps, "step_marker": o.step_marker,
              "micro_batch": shape[b] if len(shape) > b else None,
              "seq_len": shape[1 - b] if w.unit == "tokens" and len(shape) > 1 else None,
              "batch_layout": f"sequence-first ({w.layout})" if w.layout else "batch-first",
              "data_loader": a.train_loader, "data_loaders_iterated": len(a.loaders),
              "grad_accum": w._window_stats()["backward_passes_per_step"],
              "dtype": a.dtype[0] if a.dtype else None, "device": str(a._device()),
              "optimizer": optimizer_impl(a.stepper() if a.stepper is not None else None)}
    n_world, local, _ = world()
    return {"model": model, "config": config, "environment": environment(), "world_size": n_world,
            # the node's GPUs (sampled by each rank) did all of its ranks' tokens, as `run` counts them
            "tokens_scale": local if n_world > 1 else 1}


def optimizer_impl(opt: Any) -> str | None:
    """"AdamW (fused)", "SGD (for-loop, torch's default on CPU)": the diagnosis reads it (rules.optimizer_bound)."""
    if opt is None:
        return None
    d = getattr(opt, "defaults", {}) or {}
    if d.get("fused"):
        impl = "fused"
    elif d.get("foreach"):
        impl = "foreach"
    elif d.get("foreach") is False:
        impl = "for-loop"
    else:  # torch picks foreach when every parameter is on CUDA (optim/optimizer.py _default_to_fused_or_foreach)
        from trainprof.inject.detect import optimizer_device

        dev = optimizer_device(opt)
        impl = "foreach, torch's default on CUDA" if dev is not None and dev.type == "cuda" else \
            "for-loop, torch's default off CUDA"
    return f"{type(opt).__name__} ({impl})"


def write_unclaimed(a: "AgentView") -> None:
    o = a.opts
    atomic.write_text(Path(a.cfg.parts) / f"proc-{os.getpid()}.json", jsontext.dumps({
        "pid": os.getpid(), "top": os.getppid() == a.cfg.parent_pid, "backward_passes": a.backward_passes,
        "optimizer_steps": dict(a.optimizer_steps), "step_marker": o.step_marker,
        "marker_found": a.marker is not None if o.step_marker else None, "error": a.error}))
