"""Checkpoints that let a run continue exactly: model, optimizer, GradScaler, step, RNG states.

The data position needs no state: batch i of the reference pipeline is a pure function of
(seed, i) (workload/data.py), so resuming at step k means starting the loader at batch
k × grad_accum. Writes are atomic (temp file + rename): a kill mid-save leaves the previous
checkpoint intact.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import numpy as np
import torch

from trainprof.backends import cuda_state
from trainprof.errors import InputError

NAME = "checkpoint.pt"
META = "checkpoint.json"  # schema, step and config, readable without loading the weights
SCHEMA = "trainprof.checkpoint/2"  # /1 (before #19) had no schema and no config


def rng_state() -> dict[str, Any]:
    state = {"torch": torch.get_rng_state(), "python": random.getstate(), "numpy": np.random.get_state()}
    cuda = cuda_state.rng_state()
    if cuda is not None:
        state["cuda"] = cuda
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    torch.set_rng_state(state["torch"])
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    cuda_state.set_rng_state(state.get("cuda"))


def save(run_dir: Path, *, step: int, model: torch.nn.Module, optimizer: torch.optim.Optimizer,
         scaler: Any, steps_done: list[dict], config: dict | None = None) -> Path:
    """`step` = number of finished steps. `steps_done` = their records, so run.json after a
    resume still lists every step. `config` (the resolved TrainConfig and world size) is
    stored in the checkpoint and beside it in checkpoint.json, which `--resume` reads to
    compare configurations without loading the weights (workload/resume.py).

    atomic.temp_path: written to a temp name, fsync'd, renamed, and the folder fsync'd, so a
    power cut after this returns cannot leave checkpoint.pt naming a half-written file.
    """
    from trainprof import atomic

    path = run_dir / NAME
    for legacy in run_dir.glob(".checkpoint.*.tmp"):  # temp names before #19 carried no pid
        legacy.unlink(missing_ok=True)
    with atomic.temp_path(path) as tmp:
        try:
            torch.save({"schema": SCHEMA, "config": config, "step": step, "model": model.state_dict(),
                        "optimizer": optimizer.state_dict(), "scaler": scaler.state_dict(), "rng": rng_state(),
                        "steps_done": steps_done}, tmp)
        except RuntimeError as e:  # torch's writer reports ENOSPC/EIO as RuntimeError, not OSError
            raise InputError(f"{path}: cannot write the checkpoint ({_first_line(e)[:200]}); "
                             "the previous checkpoint is intact") from None
    atomic.write_text(run_dir / META, atomic.dumps({"schema": SCHEMA, "step": step, "config": config}) + "\n")
    return path


def load(run_dir: Path, *, model: torch.nn.Module, optimizer: torch.optim.Optimizer, scaler: Any) -> dict:
    """Restore everything but the RNG (restored by the caller right before the first
    resumed step); return the checkpoint's step and step records. A truncated or corrupt
    file, or one of another model, is an InputError naming it (one line, exit 2)."""
    path = run_dir / NAME
    try:
        ck = torch.load(path, map_location="cpu", weights_only=False)
    except (KeyboardInterrupt, MemoryError):
        raise
    except Exception as e:  # noqa: BLE001 - zipfile, pickle, EOFError, RuntimeError: all "unreadable"
        raise InputError(f"{path}: truncated or corrupt checkpoint ({_first_line(e)}); "
                         "delete it to start over, or restore a copy") from None
    if not isinstance(ck, dict) or not {"step", "model", "optimizer", "scaler", "rng", "steps_done"} <= ck.keys():
        raise InputError(f"{path}: not a trainprof checkpoint (fields missing)")
    try:
        model.load_state_dict(ck["model"])
        optimizer.load_state_dict(ck["optimizer"])
        scaler.load_state_dict(ck["scaler"])
    except (RuntimeError, ValueError, KeyError) as e:
        preset = (ck.get("config") or {}).get("preset")
        raise InputError(f"{path}: the checkpoint holds another model" + (f" (preset {preset})" if preset else "")
                         + f"; resume with the same --preset and --pad-vocab ({_first_line(e)[:160]})") from None
    return {"step": int(ck["step"]), "steps_done": ck["steps_done"], "rng": ck["rng"]}


def meta(run_dir: Path) -> dict | None:
    """checkpoint.json (schema, step, config), or None for a checkpoint written before it existed."""
    from trainprof.bounded import load_json

    if not (run_dir / META).exists():
        return None
    doc = load_json(run_dir / META)
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA or not isinstance(doc.get("step"), int) \
            or not isinstance(doc.get("config"), (dict, type(None))):
        raise InputError(f"{run_dir / META}: not a {SCHEMA} record (schema, step or config missing or ill-typed)")
    return doc


def _first_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0]}" if text else type(e).__name__


def exists(run_dir: Path) -> bool:
    return (run_dir / NAME).exists()
