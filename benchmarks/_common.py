"""Shared benchmark plumbing: an environment header for every result (mamf-finder's habit)."""

from __future__ import annotations

import argparse
import datetime as dt
import json
import platform
from pathlib import Path
from typing import Any


def environment(device: str) -> dict[str, Any]:
    import torch

    from trainprof.backends import get_backend

    return {
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "device": get_backend(device).device_name(),
        "device_kind": device,
        "torch": torch.__version__,
        "python": platform.python_version(),
        "threads": torch.get_num_threads(),
    }


def loop_arguments(doc: str, steps: int, out: str) -> argparse.ArgumentParser:
    """The options every TinyLoop benchmark takes (model shape, trials, steps, output)."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--device", default="auto")
    ap.add_argument("--preset", default="tiny")
    ap.add_argument("--micro-batch", type=int, default=8)
    ap.add_argument("--seq-len", type=int, default=128)
    ap.add_argument("--trials", type=int, default=7)
    ap.add_argument("--steps", type=int, default=steps, help="steps per trial and loop")
    ap.add_argument("--out", default=out)
    return ap


def write_json(path: str, payload: dict[str, Any]) -> None:
    from trainprof import atomic

    Path(path).parent.mkdir(parents=True, exist_ok=True)
    atomic.write_text(path, json.dumps(payload, indent=2) + "\n")


class TinyLoop:
    """The reference model on fixed batches, one monitored training step at a time (the loop
    the overhead benchmarks time); `step(mon, i)` runs step i under `mon`."""

    def __init__(self, device: str, preset: str, micro_batch: int, seq_len: int) -> None:
        import torch

        from trainprof.workload.config import TrainConfig
        from trainprof.workload.model import GPT

        cfg = TrainConfig(preset=preset, micro_batch=micro_batch, seq_len=seq_len).resolved()
        torch.manual_seed(0)
        self.device = device
        self.model = GPT(cfg.model).to(device)
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=1e-4)
        x = torch.randint(0, 256, (micro_batch, seq_len))
        self.batches = [(x.roll(i, 1), x.roll(i + 1, 1)) for i in range(4)]
        self.sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)

    def step(self, mon: Any, i: int) -> None:
        with mon.step() as s:
            with s.phase("data"):
                xb, yb = self.batches[i % 4]
            with s.phase("h2d"):
                xb, yb = xb.to(self.device), yb.to(self.device)
            with s.phase("forward"):
                loss = self.model(xb, yb)
            with s.phase("backward"):
                loss.backward()
            with s.phase("optimizer"):
                self.opt.step()
                self.opt.zero_grad(set_to_none=True)
            s.loss = loss

    def timed(self, mon: Any, steps: int) -> float:
        """Seconds for `steps` monitored steps."""
        import time

        self.sync()
        t0 = time.perf_counter()
        for i in range(steps):
            self.step(mon, i)
        self.sync()
        return time.perf_counter() - t0
