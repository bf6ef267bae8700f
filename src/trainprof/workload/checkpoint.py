"""Checkpoints that let a run continue exactly: model, optimizer, GradScaler, step, RNG states.

The data position needs no state: batch i of the reference pipeline is a pure function of
(seed, i) (workload/data.py), so resuming at step k means starting the loader at batch
k × grad_accum. Writes are atomic (temp file + rename): a kill mid-save leaves the previous
checkpoint intact.

Loading runs no code from the file (issue #33): checkpoints travel between people and
machines, and a full unpickling `torch.load` imports and calls whatever the file names (a
crafted checkpoint.pt ran an attacker's command). So the file holds only what `weights_only=True`
loads: tensors, dicts, lists, tuples, numbers, strings. The model, optimizer and GradScaler
state dicts are that already; the Python and numpy RNG states (a tuple of ints, numpy's
ndarray) are stored as uint8 tensors of their 32-bit words, and the configuration and the
step records as JSON strings. A file that needs anything else (a checkpoint/2 of an older
trainprof held numpy's RNG state as a pickled ndarray) is refused with one line.
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any

import numpy as np
import torch

from trainprof.backends import cuda_state
from trainprof.errors import InputError

NAME = "checkpoint.pt"
META = "checkpoint.json"  # schema, step and config, readable without loading the weights
SCHEMA = "trainprof.checkpoint/3"  # /1 (before #19): no schema, no config; /2 (before #33): pickled numpy state


def _words(values: Any) -> torch.Tensor:
    """32-bit words (an RNG's state) as a uint8 tensor: weights_only loads it, no pickle of a class."""
    return torch.from_numpy(np.asarray(values, dtype="<u4").view(np.uint8).copy())


def _unwords(t: torch.Tensor) -> np.ndarray:
    return t.numpy().view("<u4")


def rng_state() -> dict[str, Any]:
    """Every RNG the step touches, in weights_only-loadable form."""
    version, words, gauss = random.getstate()  # (3, 625 ints < 2^32, None or a float)
    name, keys, pos, has_gauss, cached = np.random.get_state(legacy=True)
    state = {"torch": torch.get_rng_state(),
             "python": {"version": version, "words": _words(words), "gauss": gauss},
             "numpy": {"name": name, "keys": _words(keys), "pos": int(pos), "has_gauss": int(has_gauss),
                       "cached": float(cached)}}
    cuda = cuda_state.rng_state()
    if cuda is not None:
        state["cuda"] = cuda  # a list of uint8 tensors already
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    torch.set_rng_state(state["torch"])
    py = state["python"]
    random.setstate((py["version"], tuple(int(w) for w in _unwords(py["words"])), py["gauss"]))
    n = state["numpy"]
    np.random.set_state((n["name"], _unwords(n["keys"]), n["pos"], n["has_gauss"], n["cached"]))
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
    from trainprof import atomic, jsontext

    path = run_dir / NAME
    for legacy in run_dir.glob(".checkpoint.*.tmp"):  # temp names before #19 carried no pid
        legacy.unlink(missing_ok=True)
    with atomic.temp_path(path) as tmp:
        try:
            torch.save({"schema": SCHEMA, "config": jsontext.dumps(config, indent=None), "step": step, "model": model.state_dict(),
                        "optimizer": optimizer.state_dict(), "scaler": scaler.state_dict(), "rng": rng_state(),
                        "steps_done": jsontext.dumps(steps_done, indent=None)}, tmp)
        except RuntimeError as e:  # torch's writer reports ENOSPC/EIO as RuntimeError, not OSError
            raise InputError(f"{path}: cannot write the checkpoint ({_first_line(e)[:200]}); "
                             "the previous checkpoint is intact") from None
    atomic.write_text(run_dir / META, jsontext.dumps({"schema": SCHEMA, "step": step, "config": config}) + "\n")
    return path


def _read(path: Path, *, mmap: bool = False) -> dict:
    """checkpoint.pt as a dict of plain values and tensors, loaded with weights_only=True (no
    code from the file runs); one-line InputErrors for a file that is not that."""
    import pickle
    import warnings

    from trainprof.bounded import open_regular

    open_regular(path).close()  # a FIFO, a device or a folder: one line now, not a torch.load that blocks
    try:
        with warnings.catch_warnings():  # torch warns about a pickle protocol it will refuse anyway: a 2nd line
            warnings.simplefilter("ignore")
            ck = torch.load(path, map_location="cpu", weights_only=True, mmap=mmap)
    except (KeyboardInterrupt, MemoryError):
        raise
    except pickle.UnpicklingError as e:  # weights_only met a class or function: refuse, never retry unsafely
        what = _UNSAFE.search(str(e))
        raise InputError(f"{path}: refused: loading it would run code from the file"
                         + (f" (it names {what.group(1)})" if what else "")
                         + "; trainprof loads checkpoints with torch.load(weights_only=True) only. An older "
                         "trainprof (checkpoint/2) stored numpy's RNG state that way: start the run again "
                         "(without --resume) or resume it with the trainprof that wrote it") from None
    except Exception as e:  # noqa: BLE001 - zipfile, EOFError, RuntimeError: all "unreadable"
        if mmap and "mmap" in str(e):  # the legacy (non-zip) format cannot be mapped: read it whole
            return _read(path)
        raise InputError(f"{path}: truncated or corrupt checkpoint ({_first_line(e)}); "
                         "delete it to start over, or restore a copy") from None
    if not isinstance(ck, dict) or ck.get("schema") != SCHEMA or not isinstance(ck.get("step"), int) \
            or not {"model", "optimizer", "scaler", "rng", "steps_done", "config"} <= ck.keys():
        raise InputError(f"{path}: not a {SCHEMA} checkpoint (schema, step or a state missing)")
    return ck


# torch's two wordings: "Unsupported global: GLOBAL numpy...", "unsupported GLOBAL posix.system whose module..."
_UNSAFE = re.compile(r"(?i)unsupported (?:global: )?GLOBAL ([\w.]+)")


def header(run_dir: Path) -> dict:
    """The checkpoint's own schema, step and configuration (what `--resume` compares), read
    from checkpoint.pt itself, not checkpoint.json beside it (which anyone may edit or
    delete). mmap: the weights are mapped, not read. `config` is None when it holds none."""
    path = run_dir / NAME
    ck = _read(path, mmap=True)
    return {"schema": ck["schema"], "step": ck["step"], "config": header_config(ck)}


def load(run_dir: Path, *, model: torch.nn.Module, optimizer: torch.optim.Optimizer, scaler: Any) -> dict:
    """Restore everything but the RNG (restored by the caller right before the first
    resumed step); return the checkpoint's step and step records. A truncated or corrupt
    file, one that needs code to load, or one of another model, is an InputError naming it
    (one line, exit 2)."""
    path = run_dir / NAME
    ck = _read(path)
    config = header_config(ck)
    try:
        model.load_state_dict(ck["model"])
        optimizer.load_state_dict(ck["optimizer"])
        scaler.load_state_dict(ck["scaler"])
    except (RuntimeError, ValueError, KeyError, TypeError) as e:
        preset = (config or {}).get("preset")
        raise InputError(f"{path}: the checkpoint holds another model" + (f" (preset {preset})" if preset else "")
                         + f"; resume with the same --preset and --pad-vocab ({_first_line(e)[:160]})") from None
    try:
        steps = json.loads(ck["steps_done"])
        if not isinstance(steps, list) or not all(isinstance(r, dict) for r in steps):
            raise ValueError("not a list of step records")
    except (TypeError, ValueError) as e:
        raise InputError(f"{path}: unreadable step records ({_first_line(e)[:160]})") from None
    return {"step": ck["step"], "steps_done": steps, "rng": ck["rng"]}


def header_config(ck: dict) -> dict | None:
    try:
        config = json.loads(ck["config"]) if isinstance(ck.get("config"), str) else None
    except ValueError:
        return None
    return config if isinstance(config, dict) else None


def meta(run_dir: Path) -> dict | None:
    """checkpoint.json (schema, step, config), or None when there is none. For people and
    tools that want the configuration without loading the weights; `--resume` reads the
    checkpoint itself (`header`)."""
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
