"""The runner for the reference workload: each trial is a fresh `trainprof run` process.

A fresh process per trial gives each its own peak memory (ru_maxrss cannot be reset), its
own compile caches, and makes an OOM or crash a rejected trial instead of a dead tuner; the
trial's command line is exactly what reproduces it.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

from trainprof.tune.catalogue import Config
from trainprof.tune.ladder import TrialResult



def to_argv(cfg: Config) -> list[str]:
    """TrainConfig fields → `trainprof run` flags (only what is set), derived from the fields'
    types: `trainprof run` generates its flags from the same dataclass (trainprof/flags.py)."""
    from trainprof.flags import to_argv as config_argv
    from trainprof.workload.config import TrainConfig

    return config_argv(TrainConfig, cfg)


def command(cfg: Config) -> str:
    """The shell line that reproduces a trial; quoted (a --data path may hold spaces or quotes)."""
    import shlex

    return shlex.join(["trainprof", "run", *to_argv(cfg)])


def run_trial(cfg: Config, timeout_s: float = 900.0) -> TrialResult:
    with tempfile.TemporaryDirectory(prefix="trainprof-tune-") as tmp:
        out = Path(tmp) / "run"
        cmd = [sys.executable, "-m", "trainprof", "run", *to_argv(cfg), "--out", str(out), "--json"]
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return TrialResult(ok=False, reason=f"timed out after {timeout_s:.0f} s")
        if p.returncode != 0:
            last = (p.stderr.strip().splitlines() or ["(no message)"])[-1]
            return TrialResult(ok=False, reason=last.removeprefix("trainprof: error: ")[:300])
        d = json.loads((out / "run.json").read_text("utf-8"))
    s = d["summary"]
    steps = d["steps"]
    warm = steps[: s["warmup_steps"]]
    med = s["step_time_median_s"]
    return TrialResult(
        ok=True, losses=[x["loss"] for x in steps], val_loss=s["val_loss"],
        tokens_per_s=s["tokens_per_step"] / med if med > 0 else 0.0, step_time_s=med, mfu=s["mfu"],
        peak_memory_bytes=s["peak_memory_bytes"],
        compile_s=max(0.0, sum(x["step_time_s"] for x in warm) - len(warm) * med),
    )
