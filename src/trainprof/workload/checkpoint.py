"""Checkpoints that let a run continue exactly: model, optimizer, GradScaler, step, RNG states.

The data position needs no state: batch i of the reference pipeline is a pure function of
(seed, i) (workload/data.py), so resuming at step k means starting the loader at batch
k × grad_accum. Writes are atomic (temp file + rename): a kill mid-save leaves the previous
checkpoint intact.
"""

from __future__ import annotations

import os
import random
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import torch

NAME = "checkpoint.pt"


def rng_state() -> dict[str, Any]:
    state = {"torch": torch.get_rng_state(), "python": random.getstate(), "numpy": np.random.get_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    torch.set_rng_state(state["torch"])
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def save(run_dir: Path, *, step: int, model: torch.nn.Module, optimizer: torch.optim.Optimizer,
         scaler: Any, steps_done: list[dict]) -> Path:
    """`step` = number of finished steps. `steps_done` = their records, so run.json after a
    resume still lists every step."""
    path = run_dir / NAME
    fd, tmp = tempfile.mkstemp(prefix=".checkpoint.", suffix=".tmp", dir=run_dir)
    os.close(fd)
    try:
        torch.save({"step": step, "model": model.state_dict(), "optimizer": optimizer.state_dict(),
                    "scaler": scaler.state_dict(), "rng": rng_state(), "steps_done": steps_done}, tmp)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def load(run_dir: Path, *, model: torch.nn.Module, optimizer: torch.optim.Optimizer, scaler: Any) -> dict:
    """Restore everything but the RNG (restored by the caller right before the first
    resumed step); return the checkpoint's step and step records."""
    ck = torch.load(run_dir / NAME, map_location="cpu", weights_only=False)
    model.load_state_dict(ck["model"])
    optimizer.load_state_dict(ck["optimizer"])
    scaler.load_state_dict(ck["scaler"])
    return {"step": int(ck["step"]), "steps_done": ck["steps_done"], "rng": ck["rng"]}


def exists(run_dir: Path) -> bool:
    return (run_dir / NAME).exists()
