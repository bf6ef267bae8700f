"""The runner for the reference workload: each trial is a fresh `trainprof run` process.

A fresh process per trial gives each its own peak memory (ru_maxrss cannot be reset), its
own compile caches, and makes an OOM or crash a rejected trial instead of a dead tuner; the
trial's command line is exactly what reproduces it.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import signal
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


def _prctl():  # noqa: ANN202
    """libc's prctl, looked up in the parent: the child between fork and exec must not load
    libraries (the dynamic loader's lock may be held by another thread at fork time)."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


def _die_with_parent(prctl, parent: int) -> None:  # noqa: ANN001  # pragma: no cover - runs in the child
    """In the trial's process, before exec: SIGKILL it when the tuner dies (kill -9 of `tune`
    used to leave the trial running for ~30 s with PPID 1, skewing the resumed tune's timings).
    Linux prctl(PR_SET_PDEATHSIG); elsewhere a no-op (the process group still lets the tuner
    stop the trial on timeout or Ctrl-C)."""
    if prctl is None:
        return
    prctl(1, int(signal.SIGKILL), 0, 0, 0)  # 1 = PR_SET_PDEATHSIG
    if os.getppid() != parent:  # the tuner died before prctl took effect
        os._exit(1)


def _kill_group(p: subprocess.Popen) -> None:
    try:
        os.killpg(p.pid, signal.SIGKILL)  # the trial and its DataLoader workers / compile workers
    except (ProcessLookupError, PermissionError):
        pass
    p.wait()


TEMP_NAME = "trainprof-trial"  # .trainprof-trial.<pid>.<random>.partial: atomic.clean_stale removes it


def run_trial(cfg: Config, timeout_s: float = 900.0, workdir: Path | None = None) -> TrialResult:
    """Run one trial as `trainprof run` in its own process group, dying with this process.

    Its folder is `.trainprof-trial.<pid>.*.partial` in `workdir` (the tune's --out; default:
    the system temp folder): removed when the trial ends, and by the next tune's start-up
    (atomic.clean_stale) when this process was killed first.
    """
    from trainprof import atomic

    where = Path(workdir) if workdir is not None else Path(tempfile.gettempdir())
    atomic.clean_stale(where, TEMP_NAME)
    tmp = tempfile.mkdtemp(prefix=f".{TEMP_NAME}.{os.getpid()}.", suffix=".partial", dir=where)
    try:
        out = Path(tmp) / "run"
        cmd = [sys.executable, "-m", "trainprof", "run", *to_argv(cfg), "--out", str(out), "--json"]
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             start_new_session=True,  # its own process group: killed as one
                             preexec_fn=functools.partial(_die_with_parent, _prctl(), os.getpid()))  # noqa: PLW1509
        try:
            _, stderr = p.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            _kill_group(p)
            return TrialResult(ok=False, reason=f"timed out after {timeout_s:.0f} s")
        except BaseException:  # Ctrl-C: the trial is in its own session, the terminal's SIGINT missed it
            _kill_group(p)
            raise
        if p.returncode != 0:
            last = (stderr.strip().splitlines() or ["(no message)"])[-1]
            return TrialResult(ok=False, reason=last.removeprefix("trainprof: error: ")[:300])
        d = json.loads((out / "run.json").read_text("utf-8"))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
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
