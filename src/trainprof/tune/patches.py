"""The code change that makes a program knob permanent ("apply these to your code").

A knob `trainprof tune -- COMMAND` applies from outside is a patch the user could write
(ARCHITECTURE.md, "Inside the user's program"); this writes it from what the agent did in the
knob's trial (run.json profile.knobs, inject/knobs.py): the line of the program that built
the DataLoader or the optimizer, the values set, the values of the program's they replaced.
"""

from __future__ import annotations

from typing import Any

from trainprof.tune.program import ALLOC_CONF, current_arg

# the Knobs fields a rung of the program catalogue sets (tune/program.CATALOGUE)
FIELDS = {"dataloader_workers": ("num_workers", "persistent_workers"), "prefetch_factor": ("prefetch_factor",),
          "pin_memory": ("pin_memory",)}
GROUP = {"dataloader_workers": "dataloader", "prefetch_factor": "dataloader", "pin_memory": "dataloader",
         "fused_optimizer": "optimizer", "bf16": "autocast", "fp16": "autocast", "compile": "compile",
         "gc_freeze": "gc_freeze", "tf32": "tf32", "cudnn_benchmark": "cudnn_benchmark", "threads": "threads"}


def _kw(values: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in values.items())


def _at(site: str | None) -> str:
    return f"{site}: " if site else ""


def patch(knob: str, config: dict[str, Any], notes: dict[str, Any] | None, argv: list[str]) -> list[str]:
    """The lines that make `knob` (a rung of the ladder, its trial's shown `config` and `notes`)
    part of the program."""
    report = (notes or {}).get("knobs") or {}
    applied = [a for a in report.get("applied", []) if a.get("knob") == GROUP.get(knob)]
    if knob in FIELDS:
        out = []
        for a in applied:
            vals = {k: v for k, v in a["set"].items() if k in FIELDS[knob]}
            if vals:
                was = {k: v for k, v in a.get("overrode", {}).items() if k in vals}
                out.append(f"{_at(a.get('site'))}{a['object']}(..., {_kw(vals)})"
                           + (f"  # instead of {_kw(was)}" if was else ""))
        return out or [f"DataLoader(..., {_kw({k: config[k] for k in FIELDS[knob] if k in config})})"]
    if knob == "fused_optimizer":
        return [f"{_at(a.get('site'))}{a['object']}(..., {_kw(a['set'])})"
                + (f"  # instead of {_kw(a['overrode'])}" if a.get("overrode") else "") for a in applied] \
            or [f"torch.optim.<the optimizer>(..., {config.get('optimizer')}=True)"]
    if knob in ("bf16", "fp16"):
        dev = applied[0]["set"]["device_type"] if applied else "cuda"
        dtype = "torch.bfloat16" if knob == "bf16" else "torch.float16"
        out = [f"{_at(report.get('forward_site'))}with torch.autocast({dev!r}, dtype={dtype}): out = model(...)",
               "then compute the loss on out.float() (outside the autocast block), as trainprof did"]
        if knob == "fp16":
            out.append("keep stepping through your GradScaler (scaler.scale(loss).backward(); scaler.step(opt))")
        return out
    if knob == "compile":
        site = report.get("forward_site")
        return ["model.compile()  # once, after building the model and before the loop"
                + (f" (its forward is called at {site})" if site else ""),
                "trainprof compiled the model's forward (its own hooks stay outside the compiled code): same maths"]
    if knob == "threads":
        n = config.get("threads")
        asked = report.get("threads_asked_by_program") or []
        return [f"{_at(a.get('site'))}torch.set_num_threads({n})  # instead of torch.set_num_threads({a['value']})"
                for a in asked[:1]] or [f"torch.set_num_threads({n})  # at the start, after import torch"]
    if knob == "gc_freeze":
        return ["after the first training step: gc.collect(); gc.freeze(); "
                "gc.set_threshold(50_000, *gc.get_threshold()[1:])  # import gc"]
    if knob == "tf32":
        return ["torch.backends.cuda.matmul.allow_tf32 = True; torch.backends.cudnn.allow_tf32 = True"]
    if knob == "cudnn_benchmark":
        return ["torch.backends.cudnn.benchmark = True  # at the start"]
    if knob == "cuda_alloc_conf":
        return [f"export {ALLOC_CONF}={dict(config.get('env', {})).get(ALLOC_CONF, '')}  # before starting the program"]
    return _user(knob, config, argv)


def _user(knob: str, config: dict[str, Any], argv: list[str]) -> list[str]:
    name, _, value = knob.partition("=")
    if name.startswith("-"):
        now = current_arg(argv, name)
        return [f"run with {name} {value}" + (f" (instead of {name} {now})" if now is not None else "")]
    return [f"export {name}={value}  # before starting the program"]
